import Foundation

/// A season's price of a resource: from one local day to another (both included), on every day or
/// on the named weekdays, one day of a rental or one seat of an experience costs this instead of the
/// resource's own price. Where rules overlap, the one listed last wins (a later rule is the
/// operator's newer word: "August" then "August weekends").
public struct PriceRule: Codable, Hashable, Sendable {
    /// First local day, `YYYY-MM-DD` in the resource's zone.
    public var from: String
    /// Last local day, included.
    public var to: String
    /// `mon` … `sun`; absent: every day.
    public var weekdays: [String]?
    /// A rental's day.
    public var pricePerDayMinor: Int64?
    /// An experience's seat.
    public var pricePerSeatMinor: Int64?

    public init(from: String, to: String, weekdays: [String]? = nil, pricePerDayMinor: Int64? = nil, pricePerSeatMinor: Int64? = nil) {
        (self.from, self.to, self.weekdays, self.pricePerDayMinor, self.pricePerSeatMinor) = (from, to, weekdays, pricePerDayMinor, pricePerSeatMinor)
    }

    public static let weekdayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    /// More rules than any season needs; a longer list is a mistake (or an attack on every quote).
    public static let maximumRules = 200

    /// The rule's days as day numbers (days since 1970-01-01), or why it is wrong.
    func days() throws(CatalogError) -> ClosedRange<Int64> {
        guard let first = LocalDateTime.parse(from), first.dateOnly else {
            throw CatalogError("price rule: from \"\(from)\" is not a date (YYYY-MM-DD)")
        }
        guard let last = LocalDateTime.parse(to), last.dateOnly else {
            throw CatalogError("price rule: to \"\(to)\" is not a date (YYYY-MM-DD)")
        }
        guard first.dayNumber <= last.dayNumber else {
            throw CatalogError("price rule: to \(to) is before from \(from)")
        }
        return first.dayNumber...last.dayNumber
    }

    /// Checks the rule for a resource of `kind`: real dates in order, known weekdays, the one price
    /// the kind uses and inside the catalog's range.
    func validate(kind: Resource.Kind) throws(CatalogError) {
        _ = try days()
        if let weekdays {
            guard !weekdays.isEmpty, weekdays.allSatisfy({ Self.weekdayNames.contains($0) }) else {
                throw CatalogError("price rule \(from)…\(to): weekdays are \(Self.weekdayNames.joined(separator: ", "))")
            }
        }
        let (price, other, name) =
            kind == .rental
            ? (pricePerDayMinor, pricePerSeatMinor, "pricePerDayMinor") : (pricePerSeatMinor, pricePerDayMinor, "pricePerSeatMinor")
        guard other == nil else { throw CatalogError("price rule \(from)…\(to): a \(kind.rawValue) is priced by \(name)") }
        guard let price, (1...Resource.maximumPriceMinor).contains(price) else {
            throw CatalogError("price rule \(from)…\(to) needs \(name) in 1...\(Resource.maximumPriceMinor)")
        }
    }

    /// Whether the rule prices local day `day` (a day number).
    func covers(day: Int64) -> Bool {
        guard let range = try? days(), range.contains(day) else { return false }
        guard let weekdays else { return true }
        return weekdays.contains(Self.weekdayNames[LocalDateTime.weekdayIndex(dayNumber: day)])
    }
}

extension LocalDateTime {
    /// Days since 1970-01-01 of this date.
    var dayNumber: Int64 { Self.floorDiv(secondsAsIfUTC, 86_400) }

    /// The local day number `instant` falls on in `zone`.
    static func dayNumber(of instant: Date, in zone: TimeZone) -> Int64 {
        let seconds = instant.timeIntervalSince1970 + Double(zone.secondsFromGMT(for: instant))
        guard seconds.isFinite, abs(seconds) < 1e15 else { return 0 }
        return floorDiv(Int64(seconds.rounded(.down)), 86_400)
    }

    /// 0 for Monday … 6 for Sunday (1970-01-01 was a Thursday).
    static func weekdayIndex(dayNumber: Int64) -> Int {
        Int(((dayNumber % 7) + 7 + 3) % 7)
    }

    static func floorDiv(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return value % divisor < 0 ? quotient - 1 : quotient
    }
}

extension Resource {
    /// What one day of this rental (or one seat of this experience) costs on local day `day`: the
    /// last price rule that covers it, else the resource's own price.
    public func unitPrice(onDay day: Int64) -> Int64 {
        let base = (kind == .rental ? pricePerDayMinor : pricePerSeatMinor) ?? 0
        guard let rules = prices, !rules.isEmpty else { return base }
        for rule in rules.reversed() where rule.covers(day: day) {
            if let price = kind == .rental ? rule.pricePerDayMinor : rule.pricePerSeatMinor { return price }
        }
        return base
    }

    /// A rental's price for `days` local days from the day `start` falls on in `zone`; nil on overflow.
    public func rentalPrice(start: Date, days: Int, in zone: TimeZone) -> Int64? {
        let first = LocalDateTime.dayNumber(of: start, in: zone)
        var total: Int64 = 0
        for offset in 0..<Int64(max(0, days)) {
            let (sum, overflow) = total.addingReportingOverflow(unitPrice(onDay: first + offset))
            guard !overflow else { return nil }
            total = sum
        }
        return total
    }

    /// Every price a day (or a seat) of this resource can have: its own and its rules'.
    public var allUnitPrices: [Int64] {
        let base = (kind == .rental ? pricePerDayMinor : pricePerSeatMinor).map { [$0] } ?? []
        return base + (prices ?? []).compactMap { kind == .rental ? $0.pricePerDayMinor : $0.pricePerSeatMinor }
    }
}

import Foundation

/// Something bookable: a boat rented by the day, or an experience sold by the seat in fixed slots.
public struct Resource: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Hashable, Sendable {
        case rental, experience
    }

    public var id: String
    public var kind: Kind
    public var name: String
    /// Rental: price of one day, in minor units.
    public var pricePerDayMinor: Int64?
    /// Rental: how many bookings may overlap (boats of the same model); default 1.
    public var units: Int?
    /// Experience: its type, which selects its product (`sunset`, `diving`, `fishing`).
    public var experienceType: String?
    /// Experience: price of one seat, in minor units.
    public var pricePerSeatMinor: Int64?
    /// Experience: seats per slot.
    public var seatsPerSlot: Int?
    /// Experience: daily start times, "HH:mm" in the resource's time zone (``timeZone``, else the
    /// tenant's, else UTC).
    public var slotTimes: [String]?
    /// Experience: length of one slot.
    public var durationMinutes: Int?
    /// The IANA time zone its slots are in (`Europe/Rome`), when it differs from the tenant's.
    public var timeZone: String?
    /// Retired (sold, scrapped, out for the season): kept for its bookings and reports, takes no new
    /// booking. Absent: in service.
    public var retired: Bool?
    /// Season prices by local date and weekday (``PriceRule``); the last rule covering a day wins.
    public var prices: [PriceRule]?
    /// This resource's cancellation policy, in place of the tenant's.
    public var cancellation: CancellationPolicy?

    /// Whether it takes new bookings.
    public var inService: Bool { retired != true }

    public init(
        id: String,
        kind: Kind,
        name: String,
        pricePerDayMinor: Int64? = nil,
        units: Int? = nil,
        experienceType: String? = nil,
        pricePerSeatMinor: Int64? = nil,
        seatsPerSlot: Int? = nil,
        slotTimes: [String]? = nil,
        durationMinutes: Int? = nil
    ) {
        self.id = id
        self.kind = kind
        self.name = name
        self.pricePerDayMinor = pricePerDayMinor
        self.units = units
        self.experienceType = experienceType
        self.pricePerSeatMinor = pricePerSeatMinor
        self.seatsPerSlot = seatsPerSlot
        self.slotTimes = slotTimes
        self.durationMinutes = durationMinutes
    }

    /// The largest price a catalog may set (10^12 minor units): prices times seats, days or
    /// quantities then stay far inside Int64.
    public static let maximumPriceMinor: Int64 = 1_000_000_000_000

    func validate(tenant: String) throws {
        if let prices {
            guard prices.count <= PriceRule.maximumRules else {
                throw CatalogError("tenant \(tenant): resource \(id) has more than \(PriceRule.maximumRules) price rules")
            }
            for rule in prices {
                do { try rule.validate(kind: kind) } catch { throw CatalogError("tenant \(tenant): resource \(id): \(error.description)") }
            }
        }
        try cancellation?.validate(owner: "tenant \(tenant): resource \(id)")
        switch kind {
        case .rental:
            guard let price = pricePerDayMinor, (1...Self.maximumPriceMinor).contains(price) else {
                throw CatalogError("tenant \(tenant): rental \(id) needs pricePerDayMinor in 1...\(Self.maximumPriceMinor)")
            }
            if let units, !(1...10_000_000).contains(units) { throw CatalogError("tenant \(tenant): rental \(id) needs units in 1...10000000") }
        case .experience:
            guard experienceType?.isEmpty == false else { throw CatalogError("tenant \(tenant): experience \(id) needs experienceType") }
            guard let price = pricePerSeatMinor, (1...Self.maximumPriceMinor).contains(price) else {
                throw CatalogError("tenant \(tenant): experience \(id) needs pricePerSeatMinor in 1...\(Self.maximumPriceMinor)")
            }
            guard let seats = seatsPerSlot, (1...10_000).contains(seats) else {
                throw CatalogError("tenant \(tenant): experience \(id) needs seatsPerSlot in 1...10000")
            }
            guard let times = slotTimes, !times.isEmpty, times.allSatisfy({ Self.minutesOfDay($0) != nil }) else {
                throw CatalogError("tenant \(tenant): experience \(id) needs slotTimes as HH:mm")
            }
            if let timeZone, TimeZone(identifier: timeZone) == nil {
                throw CatalogError(
                    "tenant \(tenant): resource \(id) names time zone \(timeZone), which is not an IANA time zone (Europe/Rome, America/New_York…)"
                )
            }
            guard let minutes = durationMinutes, (1...10_080).contains(minutes) else {
                throw CatalogError("tenant \(tenant): experience \(id) needs durationMinutes in 1...10080 (a week)")
            }
        }
    }

    /// "18:30" → 1110.
    static func minutesOfDay(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
            let hours = Int(parts[0]), let minutes = Int(parts[1]), (0..<24).contains(hours), (0..<60).contains(minutes)
        else { return nil }
        return hours * 60 + minutes
    }
}

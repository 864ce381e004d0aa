import Foundation

/// A wall-clock date and time without a zone, as an operator or a customer says it: `2026-07-14`
/// (a day) or `2026-07-14T17:30` / `2026-07-14T17:30:00` (a moment of that day).
public struct LocalDateTime: Hashable, Sendable, CustomStringConvertible {
    public var year: Int, month: Int, day: Int
    public var hour: Int, minute: Int, second: Int
    /// Given as a date only (the day starts at 00:00).
    public var dateOnly: Bool

    /// Parses `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM` or `YYYY-MM-DDTHH:MM:SS` (no zone, no fraction);
    /// nil for anything else, including a day its month does not have.
    public static func parse(_ text: String) -> LocalDateTime? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10 || bytes.count == 16 || bytes.count == 19 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), bytes[4] == 0x2D, let month = number(5..<7), bytes[7] == 0x2D, let day = number(8..<10) else { return nil }
        var hour = 0, minute = 0, second = 0
        if bytes.count >= 16 {
            guard bytes[10] == 0x54, let h = number(11..<13), bytes[13] == 0x3A, let m = number(14..<16) else { return nil }
            hour = h
            minute = m
            if bytes.count == 19 {
                guard bytes[16] == 0x3A, let s = number(17..<19) else { return nil }
                second = s
            }
        }
        let value = LocalDateTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second, dateOnly: bytes.count == 10)
        return value.isValid ? value : nil
    }

    public init(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0, dateOnly: Bool = false) {
        (self.year, self.month, self.day, self.hour, self.minute, self.second, self.dateOnly) = (year, month, day, hour, minute, second, dateOnly)
    }

    var isValid: Bool {
        guard (1...9999).contains(year), (1...12).contains(month), (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second)
        else {
            return false
        }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
    }

    /// Seconds since 1970-01-01T00:00:00 if this wall-clock time were UTC (Howard Hinnant's days_from_civil).
    var secondsAsIfUTC: Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + Int64(hour) * 3600 + Int64(minute) * 60 + Int64(second)
    }

    public var description: String {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let date = "\(String(repeating: "0", count: max(0, 4 - String(year).count)))\(year)-\(two(month))-\(two(day))"
        return dateOnly ? date : "\(date)T\(two(hour)):\(two(minute))"
    }

    /// The instants this wall-clock time is in `zone`: one; none when a daylight-saving change skips
    /// it; two when a change repeats it (earliest first).
    public func instants(in zone: TimeZone) -> [Date] {
        let naive = secondsAsIfUTC
        var offsets: [Int] = []
        for probe in [naive - 86_400, naive, naive + 86_400] {
            let offset = zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(probe)))
            if !offsets.contains(offset) { offsets.append(offset) }
        }
        var found: [Date] = []
        for offset in offsets {
            let candidate = Date(timeIntervalSince1970: TimeInterval(naive - Int64(offset)))
            if zone.secondsFromGMT(for: candidate) == offset, !found.contains(candidate) { found.append(candidate) }
        }
        return found.sorted()
    }
}

/// A time in a booking request: an instant (`…Z` or with an offset), or a wall-clock time (or day)
/// in the zone of the resource being booked.
public enum BookingTime: Hashable, Sendable {
    case instant(Date)
    case local(LocalDateTime)

    /// The instant, with a wall-clock time read in `zone`. A time the zone skips that day, or one it
    /// repeats, is refused (never moved): the client names the offset to pick one of a repeated pair.
    public func resolve(in zone: TimeZone, field: String) throws(DomainError) -> Date {
        switch self {
        case .instant(let date):
            return date
        case .local(let local):
            let instants = local.instants(in: zone)
            let name = ZonedTime.name(zone)
            if instants.count == 1 { return instants[0] }
            if instants.isEmpty {
                throw .invalid("\(local) does not exist in \(name): a daylight-saving change skips it", field: field)
            }
            let choices = instants.map { ZonedTime.format($0, in: zone) }.joined(separator: " or ")
            throw .invalid("\(local) happens twice in \(name) (a daylight-saving change): send \(choices)", field: field)
        }
    }

    var isDateOnly: Bool {
        if case .local(let local) = self { return local.dateOnly }
        return false
    }
}

/// Instants written as the wall-clock time of a zone with its offset: `2026-07-14T17:30:00+02:00`.
public enum ZonedTime {
    /// `UTC` for the zone a catalog without `timeZone` means; the IANA name otherwise.
    public static func name(_ zone: TimeZone) -> String {
        zone.identifier == "GMT" || zone.identifier == "UTC" ? "UTC" : zone.identifier
    }

    /// UTC, made once (answers of catalogs without a zone format their times many times a second).
    public static let utc = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? .current

    /// RFC 3339 with the zone's offset at that instant (`Z` never: `+00:00` in UTC, so a reader
    /// sees a local time); nil `zone` is UTC.
    public static func format(_ instant: Date, in zone: TimeZone?) -> String {
        let offset = zone?.secondsFromGMT(for: instant) ?? 0
        let milliseconds = instant.timeIntervalSince1970 * 1000
        guard milliseconds.isFinite, abs(milliseconds) < 9e15,
            let text = UTCTimestamp.format(epochMilliseconds: Int64(milliseconds.rounded(.down)), milliseconds: false, offsetSeconds: offset)
        else { return instant.formatted(.iso8601) }
        return text
    }

    /// Whole local calendar days a span covers in `zone`, a part day counted as a day: 2 for
    /// 24 Oct 00:00 → 26 Oct 00:00 in Rome although that span is 49 hours (a day of 25).
    public static func days(from start: Date, to end: Date, in zone: TimeZone) -> Int {
        if zone == utc {
            // UTC days are 24 hours each: no calendar needed.
            let days = (end.timeIntervalSince(start) / 86_400).rounded(.up)
            return days.isFinite && days >= 0 && days < 1e9 ? Int(days) : 0
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.day, .hour, .minute, .second, .nanosecond], from: start, to: end)
        let whole = parts.day ?? 0
        let rest = (parts.hour ?? 0) != 0 || (parts.minute ?? 0) != 0 || (parts.second ?? 0) != 0 || (parts.nanosecond ?? 0) != 0
        return whole + (rest ? 1 : 0)
    }
}

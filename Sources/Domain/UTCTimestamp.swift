import Foundation

/// RFC 3339 UTC timestamps written by hand: every answer carries several, and Foundation's format
/// styles cost microseconds each on the hot paths. Proleptic Gregorian calendar, as `APITime.parse` reads.
public enum UTCTimestamp {
    /// Earliest and latest instants written here: 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
    static let range: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` (or without `.mmm`), or nil for an instant outside years 1 to 9999
    /// (callers fall back to Foundation there).
    public static func format(epochMilliseconds: Int64, milliseconds: Bool) -> String? {
        format(epochMilliseconds: epochMilliseconds, milliseconds: milliseconds, offsetSeconds: nil)
    }

    /// The wall-clock time `offsetSeconds` east of UTC with that offset written out
    /// (`2026-07-14T17:30:00+02:00`), in one allocation; nil `offsetSeconds` writes UTC with `Z`.
    public static func format(epochMilliseconds instant: Int64, milliseconds: Bool, offsetSeconds: Int?) -> String? {
        let offset = Int64(clamping: offsetSeconds ?? 0)
        guard offset > -86_400, offset < 86_400 else { return nil }
        let (epochMilliseconds, overflow) = instant.addingReportingOverflow(offset * 1000)
        guard !overflow, range.contains(epochMilliseconds) else { return nil }
        // Floor division: instants before 1970 are negative.
        var seconds = epochMilliseconds / 1000, fraction = epochMilliseconds % 1000
        if fraction < 0 {
            fraction += 1000
            seconds -= 1
        }
        var days = seconds / 86_400, secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        // Days since 1970-01-01 to a civil date (Howard Hinnant's civil_from_days).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let hour = secondOfDay / 3600, minute = secondOfDay % 3600 / 60, second = secondOfDay % 60
        let length = (milliseconds ? 24 : 20) + (offsetSeconds == nil ? 0 : 5)
        return String(unsafeUninitializedCapacity: length) { buffer in
            var index = 0
            func put(_ value: Int64, digits: Int) {
                var value = value
                for position in stride(from: digits - 1, through: 0, by: -1) {
                    buffer[index + position] = UInt8(truncatingIfNeeded: 0x30 + value % 10)
                    value /= 10
                }
                index += digits
            }
            func put(_ byte: UInt8) {
                buffer[index] = byte
                index += 1
            }
            put(year, digits: 4)
            put(0x2D)
            put(month, digits: 2)
            put(0x2D)
            put(day, digits: 2)
            put(0x54)
            put(hour, digits: 2)
            put(0x3A)
            put(minute, digits: 2)
            put(0x3A)
            put(second, digits: 2)
            if milliseconds {
                put(0x2E)
                put(fraction, digits: 3)
            }
            if offsetSeconds != nil {
                put(offset < 0 ? 0x2D : 0x2B)
                put(abs(offset) / 3600, digits: 2)
                put(0x3A)
                put(abs(offset) % 3600 / 60, digits: 2)
            } else {
                put(0x5A)
            }
            return index
        }
    }
}

import Domain
import Foundation
import Testing

@testable import HTTPAPI

/// Dates the API reads: exactly what the OpenAPI pattern `ISODateTime` allows, nothing more.
@Suite("API date-times")
struct APITimeTests {
    static func seconds(_ text: String) -> Double? { APITime.parse(text)?.timeIntervalSince1970 }

    @Test("RFC 3339 date-times in UTC or with an offset, with 0 to 9 fraction digits, read to the millisecond")
    func accepted() {
        #expect(Self.seconds("1970-01-01T00:00:00Z") == 0)
        #expect(Self.seconds("2026-07-01T09:00:00Z") == 1_782_896_400)
        #expect(Self.seconds("2026-07-01T09:00:00.5Z") == 1_782_896_400.5)
        #expect(Self.seconds("2026-07-01T09:00:00.123456789Z") == 1_782_896_400.123)
        #expect(Self.seconds("2026-07-01T11:30:00+02:30") == 1_782_896_400)
        #expect(Self.seconds("2026-07-01T04:00:00-05:00") == 1_782_896_400)
        #expect(Self.seconds("2024-02-29T00:00:00Z") == 1_709_164_800, "a leap day")
        #expect(Self.seconds("1969-12-31T23:59:59Z") == -1)
        // The proleptic Gregorian calendar of RFC 3339 (Python's datetime agrees; Foundation's
        // calendar switches to the Julian one before 1582).
        #expect(Self.seconds("0187-05-08T23:24:04Z") == -56_254_955_756)
        // What Berth writes reads back unchanged.
        let now = Date(timeIntervalSince1970: 1_795_435_039.988)
        #expect(APITime.parse(APITime.format(now)) == now)
    }

    @Test("anything else is refused: trailing characters, no zone, impossible days and times, other separators")
    func refused() {
        for text in [
            "2026-07-01T09:00:00Z*", "2026-07-01T09:00:00", "2026-07-01 09:00:00Z", "2026-07-01t09:00:00z", "2026-13-01T09:00:00Z",
            "2026-04-31T09:00:00Z", "2025-02-29T09:00:00Z", "2026-07-01T24:00:00Z", "2026-07-01T09:60:00Z", "2026-07-01T09:00:00.Z",
            "2026-07-01T09:00:00.1234567890Z", "2026-07-01T09:00:00+0200", "2026-07-01T09:00:00+24:00", "26-07-01T09:00:00Z",
            "2026-07-01", "", "２０２６-07-01T09:00:00Z", "2026-07-01T09:00:00Z\u{0}",
        ] {
            #expect(APITime.parse(text) == nil, "\(text)")
        }
    }

    @Test("timestamps written by hand agree with Foundation's ISO 8601 dates and times from 1601 to 9999, keep exact milliseconds, and read back")
    func written() {
        var generator = SystemRandomNumberGenerator()
        // 1601-01-01 (after the Gregorian switch, where Foundation and RFC 3339 agree) to 9999-12-31.
        let instants: [Int64] =
            [0, -1, 999, -1000, -1001, 951_782_400_000, 1_709_164_800_000, -11_644_473_600_000, 253_402_300_799_999]
            + (0..<2000).map { _ in Int64.random(in: -11_644_473_600_000...253_402_300_799_999, using: &generator) }
        for milliseconds in instants {
            let date = Date(epochMilliseconds: milliseconds)
            // Foundation's seconds; the milliseconds from the integer (Foundation's own fraction
            // truncates the binary fraction: .999 can come out as .998).
            let second = Date(timeIntervalSince1970: TimeInterval(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000))
            let expected = String(second.formatted(.iso8601).dropLast()) + String(format: ".%03dZ", (milliseconds % 1000 + 1000) % 1000)
            #expect(BerthJSON.timestamp(date) == expected, "\(milliseconds)")
            #expect(APITime.format(date) == expected, "\(milliseconds)")
            #expect(APITime.parse(APITime.format(date)) == date, "\(milliseconds)")
            let seconds = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
            #expect(BerthJSON.secondsTimestamp(date) == seconds.formatted(.iso8601), "\(milliseconds)")
        }
        // Outside years 1 to 9999 Foundation writes them; nothing traps at Int64's ends.
        #expect(UTCTimestamp.format(epochMilliseconds: .max, milliseconds: true) == nil)
        _ = APITime.format(Date(epochMilliseconds: .min))
        _ = APITime.format(Date(epochMilliseconds: .max))
        #expect(UTCTimestamp.format(epochMilliseconds: -62_135_596_800_000, milliseconds: true) == "0001-01-01T00:00:00.000Z")
    }
}

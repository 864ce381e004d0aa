import Foundation
@testable import HTTPAPI
import Testing

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
        for text in ["2026-07-01T09:00:00Z*", "2026-07-01T09:00:00", "2026-07-01 09:00:00Z", "2026-07-01t09:00:00z", "2026-13-01T09:00:00Z",
                     "2026-04-31T09:00:00Z", "2025-02-29T09:00:00Z", "2026-07-01T24:00:00Z", "2026-07-01T09:60:00Z", "2026-07-01T09:00:00.Z",
                     "2026-07-01T09:00:00.1234567890Z", "2026-07-01T09:00:00+0200", "2026-07-01T09:00:00+24:00", "26-07-01T09:00:00Z",
                     "2026-07-01", "", "２０２６-07-01T09:00:00Z", "2026-07-01T09:00:00Z\u{0}"] {
            #expect(APITime.parse(text) == nil, "\(text)")
        }
    }
}

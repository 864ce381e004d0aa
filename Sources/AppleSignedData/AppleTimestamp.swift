import Foundation

/// A point in time as Apple encodes it: integer milliseconds since 1970-01-01T00:00:00Z.
///
/// Kept as an integer so that values round-trip exactly (a `Date` would go through a `Double`).
public struct AppleTimestamp: Codable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var millisecondsSince1970: Int64

    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    public init(_ date: Date) {
        self.millisecondsSince1970 = Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    public var date: Date { Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let integer = try? container.decode(Int64.self) {
            millisecondsSince1970 = integer
        } else {
            // Some producers emit 1.6e12-style numbers; accept whole-millisecond doubles only.
            let double = try container.decode(Double.self)
            guard double.isFinite, double.rounded() == double, abs(double) < 9.0e15 else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a millisecond timestamp")
            }
            millisecondsSince1970 = Int64(double)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(millisecondsSince1970)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.millisecondsSince1970 < rhs.millisecondsSince1970 }

    public var description: String { date.formatted(.iso8601) }
}

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

    /// Integers as they are; a number with a fraction (Xcode's StoreKit testing writes
    /// `1697679936049.7297`) loses its fraction (toward zero), as Apple's libraries read it. Refused:
    /// anything that is not a number, and numbers beyond ±9·10^15 ms (about 285,000 years).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let integer = try? container.decode(Int64.self) {
            millisecondsSince1970 = integer
            return
        }
        guard let double = try? container.decode(Double.self) else {
            throw DecodingError.typeMismatch(
                Int64.self,
                .init(codingPath: decoder.codingPath, debugDescription: "not a number of milliseconds since 1970")
            )
        }
        guard double.isFinite, abs(double) < 9.0e15 else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(double) is not a millisecond timestamp (out of range)")
        }
        millisecondsSince1970 = Int64(double.rounded(.towardZero))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(millisecondsSince1970)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.millisecondsSince1970 < rhs.millisecondsSince1970 }

    public var description: String { date.formatted(.iso8601) }
}

import Foundation

/// A payment source a purchase came from, as stored with it (`purchases.store`): the App Store,
/// Google Play, or the card rail (Stripe).
public struct StoreName: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let appStore = StoreName(rawValue: "app_store")
    public static let googlePlay = StoreName(rawValue: "google_play")
    /// Card payments of bookings (``CardPaymentRules``).
    public static let card = StoreName(rawValue: "stripe")

    /// How a membership names the store that pays it (`apple`, `google`; a store added later: its
    /// own name, never another store's).
    public var payMethod: String {
        switch self {
        case .appStore: "apple"
        case .googlePlay: "google"
        default: rawValue
        }
    }

    /// A plain string in JSON (as stored with kept proofs).
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

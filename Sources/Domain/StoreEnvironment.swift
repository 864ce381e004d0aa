import Foundation

/// Which of a store's worlds a payment was made in, as stored with it (`purchases.environment`):
/// real money (`Production`, Stripe's `live`) or a test (`Sandbox`, Stripe's `test`). Each store
/// names its own: Apple and Google Play `Production`/`Sandbox`, Stripe `live`/`test`. Kept as the
/// store's word so stored rows, answers and webhooks read as before; an unknown word (Apple's
/// `Xcode`, `LocalTesting`) is kept as it came, and counts as a test.
public struct StoreEnvironment: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// The App Store's and Google Play's real purchases.
    public static let production = StoreEnvironment(rawValue: "Production")
    /// The App Store's sandbox (TestFlight, sandbox accounts) and Google Play's test purchases.
    public static let sandbox = StoreEnvironment(rawValue: "Sandbox")
    /// Stripe's live mode (the card rail).
    public static let live = StoreEnvironment(rawValue: "live")
    /// Stripe's test mode.
    public static let test = StoreEnvironment(rawValue: "test")

    /// The environments of the stores (App Store, Google Play), in the order Berth tries them.
    public static let stores: [StoreEnvironment] = [.production, .sandbox]
    /// Every environment an operator may filter by: the stores' and the card rail's.
    public static let all: [StoreEnvironment] = [.production, .sandbox, .live, .test]

    /// Real money: Production or Stripe's live mode.
    public var isReal: Bool { self == .production || self == .live }
    /// A test payment (Sandbox, Stripe's test mode, or a word Berth does not know): it costs nothing.
    public var isTest: Bool { !isReal }

    /// A plain string in JSON (catalogs, kept proofs, answers).
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

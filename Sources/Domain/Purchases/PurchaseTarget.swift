/// What a purchase pays for. Each product kind adds a case, a rules module and its repository;
/// the exactly-once and replay policy (``ClaimPolicy``) is the same for all of them.
public enum PurchaseTarget: Hashable, Sendable, CustomStringConvertible {
    /// A pending booking (boat rental, experience).
    case booking(id: Int64)
    /// Credits of a type, added to the user's ledger.
    case credits(type: String)
    /// An auto-renewable subscription (by its originalTransactionId), attached to the user.
    case subscription(originalTransactionId: String)

    public var bookingId: Int64? {
        switch self {
        case .booking(let id): id
        case .credits, .subscription: nil
        }
    }

    public var creditType: String? {
        switch self {
        case .booking, .subscription: nil
        case .credits(let type): type
        }
    }

    public var description: String {
        switch self {
        case .booking(let id): "booking \(id)"
        case .credits(let type): "\(type) credits"
        case .subscription(let id): "subscription \(id)"
        }
    }
}

/// What a purchase pays for. Each product kind adds a case, a rules module and its repository;
/// the exactly-once and replay policy (``ClaimPolicy``) is the same for all of them.
public enum PurchaseTarget: Hashable, Sendable, CustomStringConvertible {
    /// A pending booking (boat rental, experience).
    case booking(id: Int64)

    public var bookingId: Int64? {
        switch self {
        case .booking(let id): id
        }
    }

    public var description: String {
        switch self {
        case .booking(let id): "booking \(id)"
        }
    }
}

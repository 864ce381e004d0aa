/// What a purchase pays for. Each product kind adds a case, a rules module and its repository;
/// the exactly-once and replay policy (``ClaimPolicy``) is the same for all of them.
public enum PurchaseTarget: Hashable, Sendable, CustomStringConvertible {
    /// A pending booking (boat rental, experience).
    case booking(id: Int64)
    /// Credits of a type, added to the user's ledger.
    case credits(type: String)

    public var bookingId: Int64? {
        switch self {
        case .booking(let id): id
        case .credits: nil
        }
    }

    public var creditType: String? {
        switch self {
        case .booking: nil
        case .credits(let type): type
        }
    }

    public var description: String {
        switch self {
        case .booking(let id): "booking \(id)"
        case .credits(let type): "\(type) credits"
        }
    }
}

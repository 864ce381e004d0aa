/// What a purchase pays for, one case per product kind. Stored as (kind, reference): the kind's
/// name and ``reference``. The exactly-once and replay policy (``ClaimPolicy``) is the same for all.
public enum PurchaseTarget: Hashable, Sendable, CustomStringConvertible, Codable {
    /// A pending booking (boat rental, experience).
    case booking(id: Int64)
    /// Credits of a type, added to the user's ledger.
    case credits(type: String)
    /// An auto-renewable subscription (by its originalTransactionId), attached to the user.
    case subscription(originalTransactionId: String)
    /// A one-time unlock (lifetime or a pass of some days), by its product: grants its entitlement.
    case unlock(productId: String)

    public var kind: ProductKind {
        switch self {
        case .booking: .booking
        case .credits: .credits
        case .subscription: .subscription
        case .unlock: .unlock
        }
    }

    /// The stored reference: booking id, credit type, originalTransactionId, product id.
    public var reference: String {
        switch self {
        case .booking(let id): String(id)
        case .credits(let type): type
        case .subscription(let id): id
        case .unlock(let productId): productId
        }
    }

    /// The target a stored (kind, reference) names; nil for an unknown kind or a malformed reference.
    public init?(kind: String?, reference: String?) {
        guard let kind = kind.flatMap(ProductKind.init(rawValue:)), let reference else { return nil }
        switch kind {
        case .booking:
            guard let id = Int64(reference) else { return nil }
            self = .booking(id: id)
        case .credits: self = .credits(type: reference)
        case .subscription: self = .subscription(originalTransactionId: reference)
        case .unlock: self = .unlock(productId: reference)
        }
    }

    public var bookingId: Int64? {
        if case .booking(let id) = self { id } else { nil }
    }

    public var creditType: String? {
        if case .credits(let type) = self { type } else { nil }
    }

    public var description: String {
        switch self {
        case .booking(let id): "booking \(id)"
        case .credits(let type): "\(type) credits"
        case .subscription(let id): "subscription \(id)"
        case .unlock(let productId): "unlock \(productId)"
        }
    }
}

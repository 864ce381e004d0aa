import Foundation

/// A one-time unlock: the entitlement it grants, for ever (Apple's Non-Consumable) or for some days
/// per purchase (a Non-Renewing Subscription: a season pass, a 30-day club membership).
public struct UnlockTerms: Hashable, Sendable {
    public var entitlement: String
    /// Days one purchase grants; nil for a lifetime unlock.
    public var durationDays: Int?

    public init(entitlement: String, durationDays: Int?) {
        self.entitlement = entitlement
        self.durationDays = durationDays
    }

    /// The longest pass one purchase may grant (ten years): every date computed from it stays far inside `Date`.
    public static let maximumDays = 3_660

    static func validate(_ product: Product, tenant: String) throws {
        guard let entitlement = product.entitlement, !entitlement.isEmpty, entitlement.utf8.count <= 100 else {
            throw CatalogError("tenant \(tenant): unlock product \(product.id) needs an entitlement (1 to 100 bytes)")
        }
        switch product.type {
        case "Non-Consumable":
            guard product.durationDays == nil else {
                throw CatalogError(
                    "tenant \(tenant): unlock product \(product.id) is a Non-Consumable (lifetime); durationDays applies to Non-Renewing Subscription passes"
                )
            }
        case "Non-Renewing Subscription":
            guard let days = product.durationDays, (1...maximumDays).contains(days) else {
                throw CatalogError(
                    "tenant \(tenant): unlock product \(product.id) is a Non-Renewing Subscription; it needs durationDays 1...\(maximumDays)"
                )
            }
        default:
            throw CatalogError("tenant \(tenant): unlock product \(product.id) must be of type Non-Consumable or Non-Renewing Subscription")
        }
    }
}

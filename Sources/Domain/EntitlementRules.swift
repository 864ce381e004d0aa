import Foundation

/// One subscription period a receipt (or transaction history) shows.
public struct SubscriptionPeriod: Hashable, Sendable {
    public var productId: String
    public var expiresAt: Date
    public var cancelled: Bool

    public init(productId: String, expiresAt: Date, cancelled: Bool) {
        self.productId = productId
        self.expiresAt = expiresAt
        self.cancelled = cancelled
    }
}

/// Whether a user is premium, and why.
public struct Entitlement: Hashable, Sendable {
    public var isPremium: Bool
    /// The product of the period that decided (the newest one), if any.
    public var productId: String?
    public var expiresAt: Date?
    public var message: String

    public init(isPremium: Bool, productId: String?, expiresAt: Date?, message: String) {
        self.isPremium = isPremium
        self.productId = productId
        self.expiresAt = expiresAt
        self.message = message
    }
}

public enum EntitlementRules {
    /// The newest non-cancelled period of one of the app's subscription products decides (any product
    /// when the app lists none); premium while it has not expired.
    public static func entitlement(from periods: [SubscriptionPeriod], subscriptionProducts: Set<String>, now: Date) -> Entitlement {
        let relevant = periods.filter { !$0.cancelled && (subscriptionProducts.isEmpty || subscriptionProducts.contains($0.productId)) }
        guard let newest = relevant.max(by: { $0.expiresAt < $1.expiresAt }) else {
            return Entitlement(isPremium: false, productId: nil, expiresAt: nil, message: "Receipt verified; it holds no subscription")
        }
        let active = newest.expiresAt > now
        return Entitlement(
            isPremium: active,
            productId: newest.productId,
            expiresAt: newest.expiresAt,
            message: active ? "Receipt verified successfully" : "Receipt verified; the subscription has expired"
        )
    }
}

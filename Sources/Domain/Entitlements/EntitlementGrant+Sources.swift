import Foundation

extension EntitlementGrant {
    /// The grant an App Store subscription gives its owner: live while its state entitles (active or
    /// in a grace period), ended when revoked, expired otherwise.
    public static func subscription(_ s: Subscription, userId: String, now: Date) -> EntitlementGrant {
        let state = s.state(at: now)
        let from = min(s.originalPurchasedAt ?? s.purchasedAt, now)
        let until: Date? = state.entitles ? (s.accessUntil(at: now) ?? s.expiresAt) : min(s.expiresAt ?? now, now)
        return EntitlementGrant(
            id: 0,
            tenantId: s.tenantId,
            userId: userId,
            entitlement: s.entitlement,
            source: s.grantSource,
            reference: s.originalTransactionId,
            productId: s.productId,
            purchasedAt: s.originalPurchasedAt ?? s.purchasedAt,
            from: from,
            until: until,
            state: state == .revoked ? .ended : .active,
            endedReason: state == .revoked ? "REVOKE" : nil,
            environment: s.environment
        )
    }

    /// The grant of a membership paid elsewhere (recorded by the app's backend or an operator):
    /// `premium` until it expires. Memberships made from an Apple subscription are that subscription's grant.
    public static func membership(_ m: Membership, now: Date) -> EntitlementGrant? {
        guard !m.isApple else { return nil }
        let until = m.expiresAt ?? m.updatedAt
        return EntitlementGrant(
            id: 0,
            tenantId: m.tenantId,
            userId: m.userId,
            entitlement: GrantRules.premium,
            source: .membership,
            reference: m.userId,
            productId: nil,
            purchasedAt: min(m.updatedAt, until),
            from: min(m.updatedAt, until, now),
            until: until
        )
    }
}

extension GrantRules {
    /// The entitlement memberships paid elsewhere grant, and the one `isPremium` answers for
    /// besides every subscription's.
    public static let premium = "premium"
}

extension Subscription {
    /// The grant source of the store that sells it.
    public var grantSource: GrantSource { .subscription(of: store) }
}

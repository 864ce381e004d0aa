import Domain
import Foundation

/// One-time unlocks: a lifetime non-consumable ("Pro forever", a report type, no ads) or a
/// non-renewing pass (a season pass, a 30-day club membership) grants the product's entitlement.
/// Buying a pass again extends it; a refund ends only its own grant; the same transaction sent again
/// by the same user (a restore on a second device) answers the same grant.
public struct UnlockKind: SteppedPurchaseKind {
    public struct Loaded {
        var terms: UnlockTerms
        /// The user's grants of the entitlement (locked).
        var grants: [EntitlementGrant]
    }

    public var kind: ProductKind { .unlock }

    public init() {}

    public func target(for request: PurchaseRequest, store: any Store) async throws -> PurchaseTarget {
        guard case .unlock? = request.tenant.product(id: request.productId)?.terms else { throw Self.unknown(request.productId) }
        return .unlock(productId: request.productId)
    }

    public func load(
        _ claim: inout PurchaseClaim,
        proven: ProvenTransaction,
        request: PurchaseRequest,
        tx: any StoreSession,
        now: Date
    ) throws -> Loaded {
        guard case .unlock(let terms)? = request.tenant.product(id: request.productId)?.terms else { throw Self.unknown(request.productId) }
        try UnlockRules.check(
            proven,
            claimedProductId: request.productId,
            claimedTransactionId: request.transactionId,
            userId: claim.userId,
            policy: request.policy
        )
        let grants = try tx.grants.grants(tenantId: claim.tenantId, userId: claim.userId, entitlement: terms.entitlement, forUpdate: true)
        return Loaded(terms: terms, grants: grants)
    }

    public func plan(
        _ claim: PurchaseClaim,
        existing: Purchase?,
        loaded: Loaded,
        tx: any StoreSession,
        now: Date
    ) throws -> (PurchasePlan, PurchasedState) {
        let passes = loaded.grants.filter { $0.source == .unlock && $0.durationDays != nil }
        let plan = UnlockRules.plan(claim, terms: loaded.terms, passes: passes, now: now)
        let changed = Dictionary(plan.effects.grants.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        let after = loaded.grants.map { changed[$0.id] ?? $0 } + plan.effects.grants.filter { grant in !loaded.grants.contains { $0.id == grant.id } }
        return (plan, Self.state(after, entitlement: loaded.terms.entitlement, transactionId: claim.transactionId, now: now))
    }

    public func state(settled plan: PurchasePlan, claim: PurchaseClaim, loaded: Loaded, tx: any StoreSession, now: Date) throws -> PurchasedState {
        guard case .repeated = plan.outcome else { return .none }
        return Self.state(loaded.grants, entitlement: loaded.terms.entitlement, transactionId: claim.transactionId, now: now)
    }

    public func notificationPlan(
        _ notification: IncomingNotification,
        purchase: Purchase,
        tenant: Tenant,
        tx: any StoreSession,
        now: Date
    ) throws -> NotificationPlan {
        // The grant names its entitlement (the catalog may have changed since the purchase).
        guard let grant = try tx.grants.grant(tenantId: notification.tenantId, source: .unlock, reference: purchase.transactionId) else {
            return UnlockRules.plan(notification, purchase: purchase, grants: [], now: now)
        }
        let grants = try tx.grants.grants(tenantId: notification.tenantId, userId: grant.userId, entitlement: grant.entitlement, forUpdate: true)
        return UnlockRules.plan(notification, purchase: purchase, grants: grants, now: now)
    }

    static func state(_ grants: [EntitlementGrant], entitlement: String, transactionId: String, now: Date) -> PurchasedState {
        let held =
            GrantRules.entitlements(grants, now: now).first { $0.entitlement == entitlement }
            ?? HeldEntitlement(entitlement: entitlement, active: false, expiresAt: nil, grants: [])
        return .unlock(held, grant: grants.first { $0.source == .unlock && $0.reference == transactionId })
    }

    static func unknown(_ productId: String) -> DomainError {
        DomainError(.unprocessable, .unknownProduct, "\(productId) is not an unlock product of this app", field: "productId")
    }
}

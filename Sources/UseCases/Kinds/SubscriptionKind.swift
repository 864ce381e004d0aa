import Domain
import Foundation

/// Auto-renewable subscriptions: a period's transaction attaches the subscription (by its
/// originalTransactionId) to the user and brings its record up to date. Ownership is the
/// subscription's (it moves with link and unlink), not the first claimant's: a later period, or the
/// same one again, refreshes the record for its owner instead of being a replay.
public struct SubscriptionKind: PurchaseKind {
    public struct Loaded {
        var facts: SubscriptionFacts
        var tenant: Tenant
        var emitsEvents: Bool
    }

    public var kind: ProductKind { .subscription }

    public init() {}

    /// The originalTransactionId comes from the proof (see `load`).
    public func target(for request: PurchaseRequest, store: any Store) async throws -> PurchaseTarget {
        .subscription(originalTransactionId: "")
    }

    public func load(_ claim: inout PurchaseClaim, proven: ProvenTransaction, request: PurchaseRequest, tx: any StoreSession, now: Date) throws -> Loaded {
        claim.target = .subscription(originalTransactionId: proven.originalTransactionId)
        try PurchaseChecks.claimedProduct(proven, claimedProductId: request.productId)
        try PurchaseChecks.claimedTransaction(proven, claimedTransactionId: request.transactionId)
        try PurchaseChecks.buyer(proven, userId: claim.userId, policy: request.policy)
        guard let facts = proven.subscription else { throw Self.notAPeriod }
        return Loaded(facts: facts, tenant: request.tenant, emitsEvents: request.emitsEvents)
    }

    /// Another app's transaction, or one that paid for something else, is a replay; the same
    /// subscription's period goes on to `plan` whoever claimed it first.
    public func settle(_ claim: PurchaseClaim, existing: Purchase?, revokedByApple: Bool, loaded: Loaded, now: Date) -> PurchasePlan? {
        if let existing {
            guard existing.tenantId != claim.tenantId || existing.kind != .subscription else { return nil }
            return ClaimPolicy.plan(claim, existing: existing, revokedByApple: false, now: now) ?? PurchasePlan(outcome: .replay(reason: "transaction already used"))
        }
        return ClaimPolicy.plan(claim, existing: nil, revokedByApple: revokedByApple, now: now)
    }

    public func plan(_ claim: PurchaseClaim, existing: Purchase?, loaded: Loaded, tx: any StoreSession, now: Date) throws -> (PurchasePlan, PurchasedState) {
        switch try SubscriptionWrites.apply(tx, facts: loaded.facts, tenant: loaded.tenant, userId: claim.userId, source: "verify_purchase",
                                            actor: .user(claim.userId), emitsEvents: loaded.emitsEvents, now: now) {
        case .ownedByOther:
            return (PurchasePlan(outcome: .refused(code: .linkedToOtherAccount, message: "this Apple subscription belongs to another account")), .none)
        case .nothing:
            throw Self.notAPeriod
        case .applied(let subscription, _):
            let inUse = try tx.subscriptions.membership(tenantId: claim.tenantId, userId: claim.userId)?.originalTransactionId == subscription.originalTransactionId
            if let existing { return (PurchasePlan(outcome: .repeated(existing)), .subscription(subscription, inUse: inUse)) }
            let purchase = Purchase(claim, id: RecordID.next(), status: .applied, outcomeCode: nil, now: now)
            return (PurchasePlan(outcome: .applied(purchase), purchase: purchase, proofHash: claim.proofHash), .subscription(subscription, inUse: inUse))
        }
    }

    public func state(settled plan: PurchasePlan, claim: PurchaseClaim, loaded: Loaded, tx: any StoreSession, now: Date) throws -> PurchasedState { .none }

    /// A period's refund is told through its subscription's record (``ReceiveNotification`` applies
    /// the notification's subscription facts); here only the purchase row follows.
    public func notificationPlan(_ notification: IncomingNotification, purchase: Purchase, tenant: Tenant, tx: any StoreSession, now: Date) throws -> NotificationPlan {
        var plan = NotificationPlan(effect: .recordOnly("recorded"))
        var purchase = purchase
        switch notification.type {
        case .refund where purchase.status == .applied, .revoke where purchase.status == .applied:
            purchase.status = .refunded
            plan.purchase = purchase
        case .refundReversed where purchase.status == .refunded:
            purchase.status = .applied
            plan.purchase = purchase
        default:
            break
        }
        return plan
    }

    static let notAPeriod = DomainError(.unprocessable, .productNotSupported, "the transaction is not a period of an auto-renewable subscription", field: "productId")
}

import Domain
import Foundation

/// Auto-renewable subscriptions: a period's transaction attaches the subscription (by its
/// originalTransactionId) to the user and brings its record up to date. Ownership is the
/// subscription's (it moves with link and unlink), not the first claimant's: a later period, or the
/// same one again, refreshes the record for its owner instead of being a replay.
public struct SubscriptionKind: SteppedPurchaseKind {
    public struct Loaded {
        var facts: SubscriptionFacts
        var tenant: Tenant
        /// The subscription's record and memberships, locked.
        var scene: SubscriptionScene
    }

    public var kind: ProductKind { .subscription }

    public init() {}

    /// The originalTransactionId comes from the proof (see `load`).
    public func target(for request: PurchaseRequest, store: any Store) async throws -> PurchaseTarget {
        .subscription(originalTransactionId: "")
    }

    public func load(
        _ claim: inout PurchaseClaim,
        proven: ProvenTransaction,
        request: PurchaseRequest,
        tx: any StoreSession,
        now: Date
    ) throws -> Loaded {
        claim.target = .subscription(originalTransactionId: proven.originalTransactionId)
        try PurchaseChecks.claimedProduct(proven, claimedProductId: request.productId)
        try PurchaseChecks.claimedTransaction(proven, claimedTransactionId: request.transactionId)
        try PurchaseChecks.buyer(proven, userId: claim.userId, policy: request.policy)
        guard let facts = proven.subscription else { throw Self.notAPeriod }
        let scene = try SubscriptionWrites.scene(tx, facts: facts, tenantId: claim.tenantId, userId: claim.userId)
        return Loaded(facts: facts, tenant: request.tenant, scene: scene)
    }

    /// Another app's transaction, or one that paid for something else, is a replay; the same
    /// subscription's period goes on to `plan` whoever claimed it first.
    public func settle(_ claim: PurchaseClaim, existing: Purchase?, revokedByApple: Bool, loaded: Loaded, now: Date) -> PurchasePlan? {
        if let existing {
            guard existing.tenantId != claim.tenantId || existing.kind != .subscription else { return nil }
            return ClaimPolicy.plan(claim, existing: existing, revokedByApple: false, now: now)
                ?? PurchasePlan(outcome: .replay(reason: "transaction already used"))
        }
        return ClaimPolicy.plan(claim, existing: nil, revokedByApple: revokedByApple, now: now)
    }

    public func plan(
        _ claim: PurchaseClaim,
        existing: Purchase?,
        loaded: Loaded,
        tx: any StoreSession,
        now: Date
    ) throws -> (PurchasePlan, PurchasedState) {
        let changes = SubscriptionChanges.plan(
            loaded.facts,
            scene: loaded.scene,
            tenant: loaded.tenant,
            userId: claim.userId,
            source: "verify_purchase",
            actor: .user(claim.userId),
            now: now
        )
        let effects: [PlanEffect] = changes.change.isEmpty ? [] : [.subscription(changes.change)]
        switch changes.outcome {
        case .ownedByOther:
            return (
                PurchasePlan(
                    outcome: .refused(code: .linkedToOtherAccount, message: "this Apple subscription belongs to another account"),
                    effects: effects,
                    audit: changes.audit
                ), .none
            )
        case .nothing:
            throw Self.notAPeriod
        case .applied(let subscription, _):
            let state = PurchasedState.subscription(subscription, inUse: changes.inUse(subscription, by: claim.userId))
            if let existing {
                return (PurchasePlan(outcome: .repeated(existing), effects: effects, audit: changes.audit, events: changes.events), state)
            }
            let purchase = Purchase(claim, id: RecordID.next(), status: .applied, outcomeCode: nil, now: now)
            return (
                PurchasePlan(
                    outcome: .applied(purchase),
                    purchase: purchase,
                    proofHash: claim.proofHash,
                    effects: effects,
                    audit: changes.audit,
                    events: changes.events
                ), state
            )
        }
    }

    public func state(settled plan: PurchasePlan, claim: PurchaseClaim, loaded: Loaded, tx: any StoreSession, now: Date) throws -> PurchasedState {
        .none
    }

    /// A period's refund is told through its subscription's record (``ReceiveNotification`` applies
    /// the notification's subscription facts); here only the purchase row follows.
    public func notificationPlan(
        _ notification: IncomingNotification,
        purchase: Purchase,
        tenant: Tenant,
        tx: any StoreSession,
        now: Date
    ) throws -> NotificationPlan {
        var plan = NotificationPlan(effect: .recordOnly("recorded"))
        var purchase = purchase
        switch notification.type {
        case .refund where purchase.status == .applied, .revoke where purchase.status == .applied:
            purchase.refund(at: now)
            plan.purchase = purchase
        case .refundReversed where purchase.status == .refunded:
            purchase.reinstate()
            plan.purchase = purchase
        default:
            break
        }
        return plan
    }

    static let notAPeriod = DomainError(
        .unprocessable,
        .productNotSupported,
        "the transaction is not a period of an auto-renewable subscription",
        field: "productId"
    )
}

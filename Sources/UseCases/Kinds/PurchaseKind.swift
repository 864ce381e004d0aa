import Domain
import Foundation

/// What one product kind decides about a purchase and the notifications about it. Everything else
/// (proving, the exactly-once claim policy, saving the plan) is ``VerifyPurchase``'s and the same for
/// every kind. A kind is one file here and one case of ``ProductKind``, ``PurchaseTarget`` and
/// ``PurchasedState``; ``PurchaseKinds/all`` registers it.
public protocol PurchaseKind: Sendable {
    /// What ``load(_:proven:request:tx:now:)`` hands to the later steps.
    associatedtype Loaded

    var kind: ProductKind { get }

    /// Before proving, beside the writer: the target of a claim (the booking the app names, the credit
    /// type of a credit product, …). An unknown product is refused here, costing no verification.
    func target(for request: PurchaseRequest, store: any Store) async throws -> PurchaseTarget

    /// When the proof is refused: a target the caller does not own must answer "not found" first,
    /// so that a refusal tells nothing about someone else's target.
    func checkVisible(_ request: PurchaseRequest, store: any Store) async throws

    /// Inside the unit of work, first: lock and load what the decision needs (reads only), and settle
    /// the claim's final target.
    func load(_ claim: inout PurchaseClaim, proven: ProvenTransaction, request: PurchaseRequest, tx: any StoreSession, now: Date) throws -> Loaded

    /// The claim's decision, given what `load` read and the transaction's stored purchase: the proof
    /// checked against the target (a refusal throws), the claim policy (a repeat, a replay or a
    /// revoked transaction ends the claim) and what a claim let through does, with the target's
    /// state after it. A kind whose rules need nothing more is one call into its Domain rules.
    func decide(
        _ claim: PurchaseClaim,
        proven: ProvenTransaction,
        request: PurchaseRequest,
        existing: Purchase?,
        revokedByApple: Bool,
        loaded: Loaded,
        tx: any StoreSession,
        now: Date
    ) throws -> (PurchasePlan, PurchasedState)

    /// What a REFUND, REVOKE or REFUND_REVERSED (or another notification naming a purchase of this
    /// kind) does, with what it needs loaded and locked here.
    func notificationPlan(
        _ notification: IncomingNotification,
        purchase: Purchase,
        tenant: Tenant,
        tx: any StoreSession,
        now: Date
    ) throws -> NotificationPlan
}

extension PurchaseKind {
    public func checkVisible(_ request: PurchaseRequest, store: any Store) async throws {}
}

/// A kind that decides in steps: the claim policy (``settle``), then its plan, which may read more
/// under the unit of work's locks (a credit account, a subscription's record).
public protocol SteppedPurchaseKind: PurchaseKind {
    /// The claim policy for this kind: a repeat, a replay or a refusal ends the claim here (nil: go on
    /// to ``plan(_:existing:loaded:tx:now:)``). Every kind but subscriptions uses ``ClaimPolicy`` as it is.
    func settle(_ claim: PurchaseClaim, existing: Purchase?, revokedByApple: Bool, loaded: Loaded, now: Date) -> PurchasePlan?

    /// What a claim the policy let through does, and the target's state after it.
    func plan(_ claim: PurchaseClaim, existing: Purchase?, loaded: Loaded, tx: any StoreSession, now: Date) throws -> (PurchasePlan, PurchasedState)

    /// The target's state to answer a claim the policy settled (a restore answers the same grant).
    func state(settled plan: PurchasePlan, claim: PurchaseClaim, loaded: Loaded, tx: any StoreSession, now: Date) throws -> PurchasedState
}

extension SteppedPurchaseKind {
    public func settle(_ claim: PurchaseClaim, existing: Purchase?, revokedByApple: Bool, loaded: Loaded, now: Date) -> PurchasePlan? {
        ClaimPolicy.plan(claim, existing: existing, revokedByApple: revokedByApple, now: now)
    }

    public func decide(
        _ claim: PurchaseClaim,
        proven: ProvenTransaction,
        request: PurchaseRequest,
        existing: Purchase?,
        revokedByApple: Bool,
        loaded: Loaded,
        tx: any StoreSession,
        now: Date
    ) throws -> (PurchasePlan, PurchasedState) {
        if let settled = settle(claim, existing: existing, revokedByApple: revokedByApple, loaded: loaded, now: now) {
            return (settled, try state(settled: settled, claim: claim, loaded: loaded, tx: tx, now: now))
        }
        return try plan(claim, existing: existing, loaded: loaded, tx: tx, now: now)
    }
}

/// What a purchase request says, as the kinds need it.
public struct PurchaseRequest: Sendable {
    public var tenant: Tenant
    public var policy: PurchasePolicy
    /// Whether the tenant receives webhooks (events go to the outbox only then).
    public var emitsEvents: Bool
    public var userId: String
    /// The product claimed (or, for validators that send none, the one the proof names).
    public var productId: String
    public var transactionId: String?
    /// A target the app names (a booking); nil lets the product decide.
    public var named: PurchaseTarget?

    public init(
        tenant: Tenant,
        policy: PurchasePolicy,
        emitsEvents: Bool,
        userId: String,
        productId: String,
        transactionId: String?,
        named: PurchaseTarget?
    ) {
        self.tenant = tenant
        self.policy = policy
        self.emitsEvents = emitsEvents
        self.userId = userId
        self.productId = productId
        self.transactionId = transactionId
        self.named = named
    }
}

/// The state of what a purchase paid for, after the claim: one case per kind.
public enum PurchasedState: Sendable {
    case booking(Booking)
    /// The account's balance after the claim.
    case credits(CreditSummary)
    /// The subscription's record, and whether the account uses it.
    case subscription(Subscription, inUse: Bool)
    /// The entitlement as the user holds it now, with the grant this purchase gave.
    case unlock(HeldEntitlement, grant: EntitlementGrant?)
    /// Nothing to show (a refused or replayed claim).
    case none

    /// Whether the user holds what the purchase paid for as an entitlement (a subscription, an
    /// unlock or pass: listed with the user's holdings) rather than as the purchase itself (a
    /// credit pack, a booking: what a validator lists as this call's purchase).
    public var isHeldAsEntitlement: Bool {
        switch self {
        case .subscription, .unlock: true
        case .booking, .credits, .none: false
        }
    }
}

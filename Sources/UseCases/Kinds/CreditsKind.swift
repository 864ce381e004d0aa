import Domain
import Foundation

/// Credit packs (AI generations, reports): a payment adds the product's credits to the user's
/// ledger of its credit type. Credit products are stored (operators edit them at run time): the
/// stored product decides.
public struct CreditsKind: SteppedPurchaseKind {
    public struct Loaded {
        var product: CreditProduct
        var negativeAllowed: Bool
        /// The account the signup bonus goes to (locked), when this claim is the user's first call
        /// and the bonus is due: every plan of the claim, applied or not, grants it.
        var bonus: SignupBonusRules.Due?
    }

    public var kind: ProductKind { .credits }

    public init() {}

    /// Read beside the writer before proving, so that an unknown product costs no verification.
    public func target(for request: PurchaseRequest, store: any Store) async throws -> PurchaseTarget {
        guard request.tenant.credits != nil else {
            throw DomainError(.invalidInput, .missingField, "this app sells bookings: send bookingId", field: "bookingId")
        }
        let tenantId = request.tenant.id, productId = request.productId
        guard let product = try await store.read({ try $0.credits.product(tenantId: tenantId, productId: productId) }) else {
            throw Self.unknown(productId)
        }
        return .credits(type: product.creditType)
    }

    public func load(
        _ claim: inout PurchaseClaim,
        proven: ProvenTransaction,
        request: PurchaseRequest,
        tx: any StoreSession,
        now: Date
    ) throws -> Loaded {
        // The stored product decides (an operator may have edited it since the pre-check).
        guard let settings = request.tenant.credits, let product = try tx.credits.product(tenantId: claim.tenantId, productId: request.productId)
        else {
            throw Self.unknown(request.productId)
        }
        claim.target = .credits(type: product.creditType)
        try CreditPurchaseRules.check(
            proven,
            claimedProductId: request.productId,
            claimedTransactionId: request.transactionId,
            userId: claim.userId,
            policy: request.policy
        )
        let bonus = try tx.signupBonusDue(tenant: request.tenant, userId: claim.userId, now: now)
        return Loaded(product: product, negativeAllowed: settings.negativeAllowed, bonus: bonus)
    }

    public func settle(_ claim: PurchaseClaim, existing: Purchase?, revokedByApple: Bool, loaded: Loaded, now: Date) -> PurchasePlan? {
        ClaimPolicy.plan(claim, existing: existing, revokedByApple: revokedByApple, now: now).map {
            SignupBonusRules.granting(loaded.bonus, before: $0, now: now)
        }
    }

    // The account is locked after the purchase (as notifications lock them), never before.
    public func plan(
        _ claim: PurchaseClaim,
        existing: Purchase?,
        loaded: Loaded,
        tx: any StoreSession,
        now: Date
    ) throws -> (PurchasePlan, PurchasedState) {
        let creditType = loaded.product.creditType
        let bonus = loaded.bonus.map { SignupBonusRules.change($0, now: now) }
        let account =
            try bonus.flatMap { $0.account.balance.creditType == creditType ? $0.account : nil }
            ?? tx.credits.account(tenantId: claim.tenantId, userId: claim.userId, creditType: creditType, now: now, forUpdate: true)
        var plan = CreditPurchaseRules.plan(claim, product: loaded.product, account: account, negativeAllowed: loaded.negativeAllowed, now: now)
        let after = plan.effects.credits?.account ?? account
        plan = SignupBonusRules.granting(loaded.bonus, before: plan, now: now)
        return (plan, .credits(after.summary))
    }

    public func state(settled plan: PurchasePlan, claim: PurchaseClaim, loaded: Loaded, tx: any StoreSession, now: Date) throws -> PurchasedState {
        let creditType = loaded.product.creditType
        if let planned = plan.effects.credits?.account, planned.balance.creditType == creditType { return .credits(planned.summary) }
        return .credits(
            try tx.credits.account(tenantId: claim.tenantId, userId: claim.userId, creditType: creditType, now: now, forUpdate: true).summary
        )
    }

    public func notificationPlan(
        _ notification: IncomingNotification,
        purchase: Purchase,
        tenant: Tenant,
        tx: any StoreSession,
        now: Date
    ) throws -> NotificationPlan {
        guard let creditType = purchase.creditType else { return NotificationRules.plan(notification, purchase: purchase, now: now) }
        let account = try tx.credits.account(
            tenantId: notification.tenantId,
            userId: purchase.userId,
            creditType: creditType,
            now: now,
            forUpdate: true
        )
        let grant = try tx.credits.grant(purchaseId: purchase.id, tenantId: notification.tenantId).map {
            CreditRefundContext.Grant(entry: $0.entry, lot: $0.lot)
        }
        // A reversal gives back what the refund took: a prorated refund took only a share.
        var refunded: Int64?
        if notification.type == .refundReversed, purchase.status == .refunded {
            refunded = try tx.credits.lastRefund(purchaseId: purchase.id, tenantId: notification.tenantId).map { $0.debtChange - $0.amount }
        }
        let context = CreditRefundContext(
            account: account,
            grant: grant,
            negativeAllowed: tenant.credits?.negativeAllowed ?? false,
            refunded: refunded
        )
        return CreditRefundRules.plan(notification, purchase: purchase, credits: context, now: now)
    }

    static func unknown(_ productId: String) -> DomainError {
        DomainError(.unprocessable, .unknownProduct, "\(productId) is not a credit product of this app", field: "productId")
    }
}

import Domain
import Foundation

/// Credit packs (AI generations, reports): a payment adds the product's credits to the user's
/// ledger of its credit type. Credit products are stored (operators edit them at run time): the
/// stored product decides.
public struct CreditsKind: PurchaseKind {
    public struct Loaded {
        var product: CreditProduct
        var negativeAllowed: Bool
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

    public func load(_ claim: inout PurchaseClaim, proven: ProvenTransaction, request: PurchaseRequest, tx: any StoreSession, now: Date) throws -> Loaded {
        // The stored product decides (an operator may have edited it since the pre-check).
        guard let settings = request.tenant.credits, let product = try tx.credits.product(tenantId: claim.tenantId, productId: request.productId) else {
            throw Self.unknown(request.productId)
        }
        claim.target = .credits(type: product.creditType)
        try CreditPurchaseRules.check(proven, claimedProductId: request.productId, claimedTransactionId: request.transactionId, userId: claim.userId,
                                      policy: request.policy)
        try tx.grantSignupBonusIfDue(tenant: request.tenant, userId: claim.userId, emitsEvents: request.emitsEvents, now: now)
        return Loaded(product: product, negativeAllowed: settings.negativeAllowed)
    }

    // The account is locked after the purchase (as notifications lock them), never before.
    public func plan(_ claim: PurchaseClaim, existing: Purchase?, loaded: Loaded, tx: any StoreSession, now: Date) throws -> (PurchasePlan, PurchasedState) {
        let account = try tx.credits.account(tenantId: claim.tenantId, userId: claim.userId, creditType: loaded.product.creditType, now: now, forUpdate: true)
        let plan = CreditPurchaseRules.plan(claim, product: loaded.product, account: account, negativeAllowed: loaded.negativeAllowed, now: now)
        return (plan, .credits((plan.effects.credits?.account ?? account).summary))
    }

    public func state(settled plan: PurchasePlan, claim: PurchaseClaim, loaded: Loaded, tx: any StoreSession, now: Date) throws -> PurchasedState {
        .credits(try tx.credits.account(tenantId: claim.tenantId, userId: claim.userId, creditType: loaded.product.creditType, now: now, forUpdate: true).summary)
    }

    public func notificationPlan(_ notification: IncomingNotification, purchase: Purchase, tenant: Tenant, tx: any StoreSession, now: Date) throws -> NotificationPlan {
        guard let creditType = purchase.creditType else { return NotificationRules.plan(notification, purchase: purchase, now: now) }
        let account = try tx.credits.account(tenantId: notification.tenantId, userId: purchase.userId, creditType: creditType, now: now, forUpdate: true)
        let grant = try tx.credits.grant(purchaseId: purchase.id, tenantId: notification.tenantId).map { CreditRefundContext.Grant(entry: $0.entry, lot: $0.lot) }
        // A reversal gives back what the refund took: a prorated refund took only a share.
        var refunded: Int64?
        if notification.type == .refundReversed, purchase.status == .refunded {
            refunded = try tx.credits.lastRefund(purchaseId: purchase.id, tenantId: notification.tenantId).map { $0.debtChange - $0.amount }
        }
        let context = CreditRefundContext(account: account, grant: grant, negativeAllowed: tenant.credits?.negativeAllowed ?? false, refunded: refunded)
        return CreditRefundRules.plan(notification, purchase: purchase, credits: context, now: now)
    }

    static func unknown(_ productId: String) -> DomainError {
        DomainError(.unprocessable, .unknownProduct, "\(productId) is not a credit product of this app", field: "productId")
    }
}

extension StoreSession {
    /// Grants the signup bonus in this unit of work if the user never had it (a unique key decides:
    /// concurrent first calls grant it once). Credit reads and credit purchases both start with it.
    public func grantSignupBonusIfDue(tenant: Tenant, userId: String, emitsEvents: Bool, now: Date) throws {
        guard let settings = tenant.credits, let bonus = settings.signupBonus, try credits.claimBonus(tenantId: tenant.id, userId: userId, now: now) else { return }
        let account = try credits.account(tenantId: tenant.id, userId: userId, creditType: bonus.creditType, now: now, forUpdate: true)
        let change = CreditRules.grant(account, amount: Int64(bonus.amount), type: .bonus, actor: .system, reason: "signup bonus",
                                       negativeAllowed: settings.negativeAllowed, now: now)
        try save(change, now: now)
        if emitsEvents, let event = change.event(reason: .bonus) { try outbox.enqueue([event], tenantId: tenant.id, now: now) }
    }
}

import Foundation

/// What a one-time unlock does, once ``ClaimPolicy`` found the transaction new and not revoked: the
/// purchase row and a grant of the product's entitlement (lifetime, or a pass laid after the user's
/// earlier passes); and what App Store notifications do to it.
public enum UnlockRules {
    /// Whether a proven transaction may be claimed as this unlock by this user.
    public static func check(
        _ proven: ProvenTransaction,
        claimedProductId: String,
        claimedTransactionId: String?,
        userId: String,
        policy: PurchasePolicy
    ) throws(DomainError) {
        try PurchaseChecks.claimedProduct(proven, claimedProductId: claimedProductId)
        try PurchaseChecks.claimedTransaction(proven, claimedTransactionId: claimedTransactionId)
        try PurchaseChecks.buyer(proven, userId: userId, policy: policy)
    }

    /// The plan of a new, unrevoked claim. `passes` are the user's grants of the same entitlement
    /// from passes (locked): a new pass is chained after them.
    public static func plan(_ claim: PurchaseClaim, terms: UnlockTerms, passes: [EntitlementGrant], now: Date) -> PurchasePlan {
        let purchase = Purchase(claim, id: RecordID.next(), status: .applied, outcomeCode: nil, now: now)
        let grant = EntitlementGrant(
            id: RecordID.next(),
            tenantId: claim.tenantId,
            userId: claim.userId,
            entitlement: terms.entitlement,
            source: .unlock,
            reference: claim.transactionId,
            productId: claim.productId,
            purchasedAt: claim.purchasedAt,
            from: claim.purchasedAt,
            until: nil,
            durationDays: terms.durationDays,
            environment: claim.environment
        )
        let grants = terms.durationDays == nil ? [grant] : changed(chain: passes + [grant], before: passes)
        let saved = grants.first { $0.id == grant.id } ?? grant
        var detail = ["transactionId": claim.transactionId, "productId": claim.productId, "entitlement": terms.entitlement]
        if let until = saved.until { detail["until"] = String(until.epochMilliseconds) }
        let audit = AuditRecord(
            tenantId: claim.tenantId,
            actor: .user(claim.userId),
            action: .unlockGranted,
            bookingId: nil,
            purchaseId: purchase.id,
            detail: detail,
            at: now
        )
        return PurchasePlan(outcome: .applied(purchase), purchase: purchase, proofHash: claim.proofHash, effects: [.grants(grants)], audit: [audit])
    }

    /// What a REFUND, REVOKE or REFUND_REVERSED does to an unlock purchase: the purchase's status,
    /// and its grant ended (or active again) with the user's passes re-chained. `grants` are the
    /// user's grants of the purchase's entitlement (locked).
    public static func plan(_ notification: IncomingNotification, purchase: Purchase, grants: [EntitlementGrant], now: Date) -> NotificationPlan {
        guard let grant = grants.first(where: { $0.source == .unlock && $0.reference == purchase.transactionId }) else {
            return record(NotificationPlan(effect: .recordOnly("no_grant")), notification, purchase: purchase, now: now)
        }
        var purchase = purchase, ended = grant
        let effect: NotificationEffect
        switch notification.type {
        case .refund, .revoke:
            guard purchase.status == .applied else {
                return record(NotificationPlan(effect: .recordOnly("already_refunded")), notification, purchase: purchase, now: now)
            }
            purchase.refund(at: now)
            ended.state = .ended
            ended.endedReason = notification.type.rawValue
            effect = .appliedByKind("unlock_ended")
        case .refundReversed:
            guard purchase.status == .refunded else {
                return record(NotificationPlan(effect: .recordOnly("not_refunded")), notification, purchase: purchase, now: now)
            }
            purchase.reinstate()
            purchase.outcomeCode = nil
            ended.state = .active
            ended.endedReason = nil
            effect = .appliedByKind("unlock_reinstated")
        default:
            return record(NotificationPlan(effect: .recordOnly("recorded")), notification, purchase: purchase, now: now)
        }
        let others = grants.filter { $0.id != grant.id }
        var plan = NotificationPlan(effect: effect)
        plan.purchase = purchase
        plan.effects = [.grants(ended.durationDays == nil ? [ended] : changed(chain: others + [ended], before: grants))]
        return record(plan, notification, purchase: purchase, now: now)
    }

    private static func record(_ plan: NotificationPlan, _ notification: IncomingNotification, purchase: Purchase, now: Date) -> NotificationPlan {
        NotificationRules.audited(plan, notification, bookingId: nil, purchaseId: purchase.id, now: now)
    }

    /// The grants a re-chaining changes (or adds), compared with what was stored.
    static func changed(chain grants: [EntitlementGrant], before: [EntitlementGrant]) -> [EntitlementGrant] {
        let stored = Dictionary(before.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return GrantRules.chain(grants.filter { $0.durationDays != nil || stored[$0.id] == nil }).filter { stored[$0.id] != $0 }
            + grants.filter { $0.durationDays == nil && stored[$0.id] != $0 }
    }
}

extension AuditAction {
    public static let unlockGranted = AuditAction(rawValue: "unlock.granted")
}

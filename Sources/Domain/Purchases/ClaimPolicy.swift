import Foundation

/// How a claim of an already-recorded transaction ends, whatever the product kind.
public enum ClaimSettlement: Hashable, Sendable {
    /// The same user already claimed this transaction for the same target: answer as before, write nothing.
    case repeatOf(Purchase)
    /// Someone else (another user, target or tenant) already used this transaction: record a replay, refuse.
    case replay(existing: Purchase, reason: String)
}

/// Exactly once, for every product kind: one purchase per (store, environment, transaction id);
/// the same claim again is a repeat, any other claim a replay; money Apple gave back pays nothing.
public enum ClaimPolicy {
    /// Settles a claim against the purchase already recorded for its transaction, if any.
    public static func settle(_ claim: PurchaseClaim, existing: Purchase?) -> ClaimSettlement? {
        guard let existing else { return nil }
        if existing.tenantId == claim.tenantId, existing.userId == claim.userId, existing.target == claim.target {
            return .repeatOf(existing)
        }
        let reason: String
        if existing.tenantId != claim.tenantId {
            reason = "transaction already used by another app"
        } else if existing.userId != claim.userId {
            reason = "transaction already used by another user"
        } else {
            reason = "transaction already used for \(existing.target?.description ?? "another purpose")"
        }
        return .replay(existing: existing, reason: reason)
    }

    /// Why a new claim grants nothing: the proof itself shows a refund or revocation, or Apple
    /// reported one before anyone claimed the transaction.
    public static func refusal(_ claim: PurchaseClaim, revokedByApple: Bool) -> (code: ErrorCode, message: String)? {
        if claim.revoked { return (.transactionRevoked, "Apple has refunded or revoked this transaction") }
        if revokedByApple { return (.transactionRevoked, "Apple reported this transaction refunded or revoked before it was claimed") }
        return nil
    }

    /// The plan of a claim that ends without reaching the kind's rules: a repeat, a replay or a refusal.
    /// `target` is the target's state, for events and the answer.
    public static func plan(_ claim: PurchaseClaim, existing: Purchase?, revokedByApple: Bool, now: Date) -> PurchasePlan? {
        let actor = Actor.user(claim.userId)
        switch settle(claim, existing: existing) {
        case .repeatOf(let purchase):
            if purchase.status == .refunded {
                return PurchasePlan(
                    outcome: .refused(
                        code: .transactionRevoked,
                        message: "Apple has refunded or revoked this transaction; it grants nothing any more"
                    )
                )
            }
            guard purchase.status == .applied else {
                let code = ErrorCode(rawValue: purchase.outcomeCode ?? ErrorCode.bookingNotPayable.rawValue)
                return PurchasePlan(
                    outcome: .needsRefund(
                        purchase,
                        code: code,
                        message: "this payment was recorded earlier but could not be honoured; it awaits a refund"
                    )
                )
            }
            return PurchasePlan(outcome: .repeated(purchase))
        case .replay(let original, let reason):
            var plan = PurchasePlan(outcome: .replay(reason: reason))
            plan.replay = ReplayAttempt(
                id: RecordID.next(),
                tenantId: claim.tenantId,
                userId: claim.userId,
                target: claim.target,
                environment: claim.environment,
                transactionId: claim.transactionId,
                existingPurchaseId: original.id,
                reason: reason,
                proofHash: claim.proofHash,
                at: now
            )
            plan.audit = [
                AuditRecord(
                    tenantId: claim.tenantId,
                    actor: actor,
                    action: .replayDetected,
                    target: claim.target,
                    purchaseId: original.id,
                    detail: ["transactionId": claim.transactionId, "reason": reason],
                    at: now
                )
            ]
            var data = [
                "userId": claim.userId, "transactionId": original.transactionId, "environment": original.environment.rawValue, "reason": reason,
                "store": original.store.rawValue,
            ]
            if let bookingId = claim.target.bookingId { data["bookingId"] = String(bookingId) }
            plan.events = [WebhookEvent(type: .replayDetected, data: data, subject: claim.target.bookingId.map(WebhookEvent.bookingSubject))]
            return plan
        case nil:
            guard let (code, message) = refusal(claim, revokedByApple: revokedByApple) else { return nil }
            var plan = PurchasePlan(outcome: .refused(code: code, message: message))
            plan.audit = [
                AuditRecord(
                    tenantId: claim.tenantId,
                    actor: actor,
                    action: .purchaseRefused,
                    target: claim.target,
                    purchaseId: nil,
                    detail: [
                        "transactionId": claim.transactionId, "environment": claim.environment.rawValue, "code": code.rawValue,
                        "proof": claim.proofKind,
                    ],
                    at: now
                )
            ]
            return plan
        }
    }
}

import Domain
import Foundation

/// What the provider says of a payment, applied inside one unit of work, the same whether a signed
/// event or a fetch by the reconciler says it: success goes through the booking rules exactly once,
/// state moves only forward, refunded amounts only grow, a dispute's end is final.
struct CardPaymentSettlement {
    let tenant: Tenant
    let settings: StripeSettings
    let emitsEvents: Bool
    let tx: any StoreSession
    let now: Date

    /// The payment succeeded: confirm the booking (or record the payment for a refund, refunded by a
    /// job when the tenant says so). A payment already settled changes nothing.
    func succeeded(_ payment: inout CardPayment, facts: CardPaymentFacts) throws -> String {
        guard payment.status != .succeeded else { return "already_applied" }
        if payment.purpose == .deposit { return try captured(&payment, amount: facts.amountMinor) }
        guard let booking = try tx.bookings.booking(id: payment.bookingId, tenantId: payment.tenantId, forUpdate: true) else { return "no_booking" }
        if let existing = try tx.purchases.purchase(
            store: CardPaymentRules.store,
            environment: payment.environment,
            transactionId: facts.providerRef,
            forUpdate: true
        ) {
            payment.status = .succeeded
            payment.purchaseId = existing.id
            payment.nextCheckAt = nil
            payment.updatedAt = now
            try tx.cardPayments.update(payment)
            return "already_applied"
        }
        var occupancy = Occupancy.none
        if booking.holdLapsed(at: now) {
            occupancy = try tx.bookings.admit(booking, now: now)
        }
        let plan = CardPaymentRules.paidPlan(
            payment,
            booking: booking,
            resource: tenant.resource(id: booking.resourceId),
            occupancy: occupancy,
            facts: facts,
            holdExtension: tenant.holdDuration,
            now: now
        )
        try tx.save(plan, tenantId: payment.tenantId, store: CardPaymentRules.store, emitsEvents: emitsEvents, now: now)
        payment.status = .succeeded
        payment.providerStatus = "succeeded"
        payment.purchaseId = plan.purchase?.id
        payment.nextCheckAt = nil
        payment.updatedAt = now
        try tx.cardPayments.update(payment)
        if payment.fullyRefunded {
            // The refund's event came first (events arrive in any order): the refund stands.
            return try applyRefundEffect(payment, reason: "card_refund", disputeLost: false)
        }
        switch plan.outcome {
        case .applied: return plan.effects.booking?.status == .confirmed ? "booking_confirmed" : "booking_part_paid"
        case .needsRefund(let purchase, let code, _):
            if settings.refundsLatePayments {
                try requestRefund(
                    payment,
                    amount: payment.amountMinor,
                    reason: code.rawValue,
                    initiatedBy: .autoLatePayment,
                    actor: .system,
                    key: "berth:refund:\(purchase.id):auto",
                    due: now
                )
                return "needs_refund:\(code.rawValue):refund_requested"
            }
            return "needs_refund:\(code.rawValue)"
        case .repeated, .replay, .refused: return "recorded"
        }
    }

    /// Records a refund before the provider is asked (a job asks, with the fixed key, until it has an answer).
    @discardableResult
    func requestRefund(
        _ payment: CardPayment,
        amount: Int64,
        reason: String,
        initiatedBy: RefundInitiator,
        actor: Actor,
        key: String,
        due: Date
    ) throws -> CardRefund {
        let refund = CardRefund(
            id: RecordID.next(),
            tenantId: payment.tenantId,
            paymentId: payment.id,
            amountMinor: amount,
            reason: reason,
            initiatedBy: initiatedBy,
            actor: actor.rawValue,
            idempotencyKey: key,
            nextAttemptAt: due,
            createdAt: now,
            updatedAt: now
        )
        try tx.cardPayments.insert(refund)
        try tx.audit.append(
            AuditRecord(
                tenantId: payment.tenantId,
                actor: actor,
                action: .cardRefundRequested,
                bookingId: payment.bookingId,
                purchaseId: payment.purchaseId,
                detail: [
                    "paymentId": String(payment.id), "refundId": String(refund.id),
                    "amount": String(amount), "reason": reason,
                    "initiatedBy": initiatedBy.rawValue,
                ],
                at: now
            )
        )
        return refund
    }

    /// The provider reports `total` refunded so far: the count only grows; a full refund refunds the
    /// purchase and frees the booking's slot.
    func refunded(_ payment: inout CardPayment, total: Int64, reason: String) throws -> String {
        guard payment.purpose == .booking else { return "recorded" }
        let amount = min(max(payment.amountRefunded, total), payment.amountMinor)
        guard amount > payment.amountRefunded else { return "already_recorded" }
        payment.amountRefunded = amount
        payment.updatedAt = now
        try tx.cardPayments.update(payment)
        // Before the success is known (events out of order): counted now, applied with the success.
        guard payment.status == .succeeded else { return "recorded_before_success" }
        let effect = try applyRefundEffect(payment, reason: reason, disputeLost: false)
        try tx.audit.append(
            AuditRecord(
                tenantId: payment.tenantId,
                actor: .provider(CardPaymentRules.store),
                action: .cardRefunded,
                bookingId: payment.bookingId,
                purchaseId: payment.purchaseId,
                detail: ["paymentId": String(payment.id), "amountRefunded": String(amount), "outcome": effect],
                at: now
            )
        )
        return effect
    }

    /// A dispute opened or moved; `won` and `lost` are final, and only `lost` counts as a refund.
    func disputed(_ payment: inout CardPayment, status: String) throws -> String {
        guard payment.status == .succeeded else { return "not_paid" }
        if let current = payment.disputeStatus, ["won", "lost"].contains(current) { return "dispute_final" }
        guard payment.disputeStatus != status else { return "already_recorded" }
        payment.disputeStatus = status
        payment.updatedAt = now
        try tx.cardPayments.update(payment)
        var outcome = "dispute_\(status)"
        if status == "lost" { outcome = try applyRefundEffect(payment, reason: "dispute_lost", disputeLost: true) }
        let final = ["won", "lost"].contains(status)
        try tx.audit.append(
            AuditRecord(
                tenantId: payment.tenantId,
                actor: .provider(CardPaymentRules.store),
                action: final ? .cardPaymentDisputeClosed : .cardPaymentDisputed,
                bookingId: payment.bookingId,
                purchaseId: payment.purchaseId,
                detail: ["paymentId": String(payment.id), "disputeStatus": status],
                at: now
            )
        )
        if emitsEvents {
            try tx.outbox.enqueue(
                [
                    WebhookEvent(
                        type: .paymentDisputed,
                        data: [
                            "bookingId": String(payment.bookingId), "userId": payment.userId,
                            "paymentIntentId": payment.providerRef ?? "", "disputeStatus": status,
                        ],
                        subject: WebhookEvent.bookingSubject(payment.bookingId)
                    )
                ],
                tenantId: payment.tenantId,
                now: now
            )
        }
        return outcome
    }

    /// A deposit's authorization: the card holds the amount until it is captured or released, at the
    /// latest just before the card networks' window ends (`captureBefore`, when Berth releases it itself).
    func authorized(_ payment: inout CardPayment, amount: Int64, window: TimeInterval) throws -> String {
        guard payment.purpose == .deposit else { return "ignored_not_a_deposit" }
        guard payment.status.mayMove(to: .authorized) else {
            return payment.status == .authorized ? "already_recorded" : "ignored_after_\(payment.status.rawValue)"
        }
        payment.status = .authorized
        payment.providerStatus = "requires_capture"
        payment.captureBefore = now.addingTimeInterval(window)
        payment.nextCheckAt = payment.captureBefore
        payment.updatedAt = now
        try tx.cardPayments.update(payment)
        try tx.audit.append(
            AuditRecord(
                tenantId: payment.tenantId,
                actor: .provider(CardPaymentRules.store),
                action: .cardDepositAuthorized,
                bookingId: payment.bookingId,
                purchaseId: nil,
                detail: [
                    "paymentId": String(payment.id), "amount": String(amount),
                    "captureBefore": String((payment.captureBefore ?? now).epochMilliseconds),
                ],
                at: now
            )
        )
        return "deposit_authorized"
    }

    /// A deposit captured (all or part of its authorization; the rest is released by the card network).
    func captured(_ payment: inout CardPayment, amount: Int64) throws -> String {
        guard payment.status.mayMove(to: .succeeded) else {
            return payment.status == .succeeded ? "already_recorded" : "ignored_after_\(payment.status.rawValue)"
        }
        payment.status = .succeeded
        payment.providerStatus = "succeeded"
        payment.amountCaptured = min(max(0, amount), payment.amountMinor)
        payment.nextCheckAt = nil
        payment.updatedAt = now
        try tx.cardPayments.update(payment)
        try tx.audit.append(
            AuditRecord(
                tenantId: payment.tenantId,
                actor: .provider(CardPaymentRules.store),
                action: .cardDepositCaptured,
                bookingId: payment.bookingId,
                purchaseId: nil,
                detail: ["paymentId": String(payment.id), "amountCaptured": String(payment.amountCaptured)],
                at: now
            )
        )
        return "deposit_captured"
    }

    /// The payment was canceled (Berth's cancel when the hold lapsed, or the provider's): final unless it had succeeded.
    /// A deposit's cancel is its release.
    func canceled(_ payment: inout CardPayment) throws -> String {
        guard payment.status.mayMove(to: .canceled) else { return payment.status == .canceled ? "already_recorded" : "ignored_after_success" }
        payment.status = .canceled
        payment.providerStatus = "canceled"
        payment.nextCheckAt = nil
        payment.updatedAt = now
        try tx.cardPayments.update(payment)
        try tx.audit.append(
            AuditRecord(
                tenantId: payment.tenantId,
                actor: .provider(CardPaymentRules.store),
                action: payment.purpose == .deposit ? .cardDepositReleased : .cardPaymentCanceled,
                bookingId: payment.bookingId,
                purchaseId: nil,
                detail: ["paymentId": String(payment.id)],
                at: now
            )
        )
        return payment.purpose == .deposit ? "deposit_released" : "payment_canceled"
    }

    /// An attempt failed or needs the customer (a declined card, 3-D Secure): the payment stays open.
    func attempted(_ payment: inout CardPayment, providerStatus: String) throws -> String {
        guard payment.status.isOpen else { return "ignored_after_\(payment.status.rawValue)" }
        payment.providerStatus = providerStatus
        if payment.status == .creating { payment.status = .open }
        payment.updatedAt = now
        try tx.cardPayments.update(payment)
        return providerStatus == "requires_payment_method" ? "payment_failed" : "recorded"
    }

    private func applyRefundEffect(_ payment: CardPayment, reason: String, disputeLost: Bool) throws -> String {
        let purchase = try tx.purchases.purchase(
            store: CardPaymentRules.store,
            environment: payment.environment,
            transactionId: payment.providerRef ?? "",
            forUpdate: true
        )
        let booking = try tx.bookings.booking(id: payment.bookingId, tenantId: payment.tenantId, forUpdate: true)
        let effect = CardPaymentRules.refundPlan(payment, purchase: purchase, booking: booking, reason: reason, disputeLost: disputeLost, now: now)
        if let purchase = effect.purchase { try tx.purchases.update(purchase) }
        if let booking = effect.booking { try tx.bookings.update(booking, now: now) }
        if emitsEvents, !effect.events.isEmpty { try tx.outbox.enqueue(effect.events, tenantId: payment.tenantId, now: now) }
        if effect.booking?.status == .refunded { return "booking_refunded" }
        if effect.purchase != nil { return "purchase_refunded" }
        return payment.fullyRefunded || disputeLost ? "already_refunded" : "part_refunded"
    }
}

extension StoreSession {
    /// A card payment locked for the rest of the unit of work, with its booking locked first: every
    /// unit of work of the card rail (and of a store purchase of the booking) locks the booking before
    /// the payment, so that two of them never wait on each other (PostgreSQL's row locks).
    func lockedCardPayment(_ find: (_ forUpdate: Bool) throws -> CardPayment?) throws -> CardPayment? {
        guard let seen = try find(false) else { return nil }
        _ = try bookings.booking(id: seen.bookingId, tenantId: seen.tenantId, forUpdate: true)
        return try find(true)
    }
}

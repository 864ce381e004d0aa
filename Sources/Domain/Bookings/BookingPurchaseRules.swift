import Foundation

/// What a payment does to a booking, once ``ClaimPolicy`` found the transaction new and not revoked.
public enum BookingPurchaseRules {
    /// What a booking payment does, decided in one place: the proof checked against the booking
    /// (``check(_:claimedProductId:claimedTransactionId:booking:userId:policy:)``, which throws its
    /// refusal), then ``ClaimPolicy`` (a repeat, a replay, a revoked transaction end the claim), then
    /// ``plan(_:booking:resource:occupancy:now:holdExtension:)``. `occupancy` is what the slot's other
    /// bookings hold, read by the caller when the booking's hold expired (``needsOccupancy(_:now:)``;
    /// without it then, the claim is not decided: `unavailable`, nothing written).
    public static func decide(
        _ claim: PurchaseClaim,
        proven: ProvenTransaction,
        claimedProductId: String,
        claimedTransactionId: String?,
        policy: PurchasePolicy,
        booking: Booking,
        resource: Resource?,
        existing: Purchase?,
        revokedByApple: Bool,
        holdExtension: TimeInterval,
        occupancy: Occupancy?,
        now: Date
    ) throws -> PurchasePlan {
        try check(
            proven,
            claimedProductId: claimedProductId,
            claimedTransactionId: claimedTransactionId,
            booking: booking,
            userId: claim.userId,
            policy: policy
        )
        if let settled = ClaimPolicy.plan(claim, existing: existing, revokedByApple: revokedByApple, now: now) { return settled }
        guard needsOccupancy(booking, now: now) else {
            return plan(claim, booking: booking, resource: resource, occupancy: .none, now: now, holdExtension: holdExtension)
        }
        guard let occupancy else { throw DomainError(.unavailable, .internalError, "the slot's occupancy was not read") }
        return plan(claim, booking: booking, resource: resource, occupancy: occupancy, now: now, holdExtension: holdExtension)
    }

    /// Whether the rules need the occupancy of the booking's slot to decide (only when its hold expired).
    public static func needsOccupancy(_ booking: Booking, now: Date) -> Bool {
        booking.holdLapsed(at: now)
    }

    /// The plan of a new, unrevoked claim on `booking`: confirm it, count a part payment, or record
    /// the payment for a refund. A transaction of fewer units than the booking still needs (a client
    /// that always buys quantity 1) is applied as a part payment: the booking stays pending with its
    /// hold extended by `holdExtension` from now, and is confirmed by the payment that completes it.
    /// `occupancy` is what other bookings hold of its slot (needed only when ``needsOccupancy(_:now:)``).
    public static func plan(
        _ claim: PurchaseClaim,
        booking: Booking,
        resource: Resource?,
        occupancy: Occupancy,
        now: Date,
        holdExtension: TimeInterval = 15 * 60
    ) -> PurchasePlan {
        let refund: (code: ErrorCode, message: String, moveTo: BookingStatus?)?
        switch booking.status {
        case .pendingPayment:
            if booking.holdExpiresAt > now {
                refund = nil
            } else if booking.end <= now {
                // L15: a late payment never confirms a booking whose time is over.
                refund = (
                    .bookingNotPayable, "the hold expired and the booking's time has passed; the payment is recorded for a refund",
                    .paymentNeedsRefund
                )
            } else if let resource, Capacity.fits(resource, seats: booking.seats, occupancy: occupancy) {
                refund = nil
            } else {
                refund = (.slotUnavailable, "the hold expired and the slot was taken; the payment is recorded for a refund", .paymentNeedsRefund)
            }
        case .confirmed:
            refund = (.bookingAlreadyPaid, "the booking was already paid by another transaction; this payment is recorded for a refund", nil)
        case .cancelled, .refunded:
            refund = (.bookingNotPayable, "the booking is \(booking.status.rawValue); the payment is recorded for a refund", .paymentNeedsRefund)
        case .paymentNeedsRefund:
            refund = (.bookingNotPayable, "the booking already awaits a refund; this payment is recorded for a refund", nil)
        }

        var updated = booking
        updated.updatedAt = now
        let purchase: Purchase
        let outcome: PurchaseOutcome
        if let refund {
            purchase = Purchase(claim, id: RecordID.next(), status: .needsRefund, outcomeCode: refund.code.rawValue, now: now)
            if let status = refund.moveTo {
                updated.status = status
                updated.statusReason = refund.code.rawValue
            }
            outcome = .needsRefund(purchase, code: refund.code, message: refund.message)
        } else {
            purchase = Purchase(claim, id: RecordID.next(), status: .applied, outcomeCode: nil, now: now)
            updated.paidQuantity = booking.paidQuantity.addingReportingOverflow(max(1, claim.quantity ?? 1)).partialValue
            if updated.paidQuantity >= booking.requiredQuantity {
                updated.status = .confirmed
                updated.confirmedAt = now
                updated.statusReason = nil
                updated.environment = claim.environment
                updated.purchaseId = purchase.id
            } else {
                // Part paid: the slot stays held while the rest is being bought.
                updated.holdExpiresAt = max(booking.holdExpiresAt, now.addingTimeInterval(holdExtension))
            }
            outcome = .applied(purchase)
        }
        let confirmed = refund == nil && updated.status == .confirmed
        var detail = ["transactionId": claim.transactionId, "productId": claim.productId, "outcome": refund?.code.rawValue ?? "applied"]
        if refund == nil {
            detail["paidQuantity"] = String(updated.paidQuantity)
            detail["requiredQuantity"] = String(booking.requiredQuantity)
        }
        let audit = AuditRecord(
            tenantId: claim.tenantId,
            actor: .user(claim.userId),
            action: refund != nil ? .purchaseNeedsRefund : (confirmed ? .bookingConfirmed : .bookingPartlyPaid),
            bookingId: booking.id,
            purchaseId: purchase.id,
            detail: detail,
            at: now
        )
        let events: [WebhookEvent] = confirmed ? [.booking(.bookingConfirmed, updated, purchase: purchase)] : []
        return PurchasePlan(
            outcome: outcome,
            purchase: purchase,
            proofHash: claim.proofHash,
            effects: [.booking(updated)],
            audit: [audit],
            events: events
        )
    }
}

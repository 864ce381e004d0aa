import Foundation

/// What the provider says a payment received (from a signed event or a fetch of the PaymentIntent).
public struct CardPaymentFacts: Hashable, Sendable {
    public var providerRef: String
    public var amountMinor: Int64
    public var currency: String
    public var livemode: Bool
    /// Metadata Berth put on the PaymentIntent (`berth_tenant`, `berth_booking_id`).
    public var metadata: [String: String]
    /// The provider's hash of what proved it (the event body's SHA-256, or of the fetched object).
    public var proofHash: String
    public var at: Date

    public init(providerRef: String, amountMinor: Int64, currency: String, livemode: Bool, metadata: [String: String], proofHash: String, at: Date) {
        self.providerRef = providerRef
        self.amountMinor = amountMinor
        self.currency = currency
        self.livemode = livemode
        self.metadata = metadata
        self.proofHash = proofHash
        self.at = at
    }
}

/// The card rail's decisions: a succeeded payment goes through the booking rules like a store
/// purchase (one purchase per provider id, exactly once); refunds and disputes move a booking the
/// way Apple's REFUND does, and only forward.
public enum CardPaymentRules {
    /// The store name of card purchases (their exactly-once key is (stripe, live|test, pi_…)).
    public static let store = StoreName.card
    /// The product id card purchases are recorded with (a booking names its IAP product; a card pays its price).
    public static let productId = "card"

    /// Why a booking cannot be paid by card now (nil: it can).
    public static func refusal(_ booking: Booking, now: Date) -> DomainError? {
        guard booking.status == .pendingPayment else {
            return DomainError(
                .conflict,
                .bookingNotPayable,
                "booking \(booking.id) is \(booking.status.rawValue); only a pending booking can be paid",
                field: "bookingId"
            )
        }
        guard booking.holdExpiresAt > now else {
            return DomainError(.conflict, .holdExpired, "the hold of booking \(booking.id) expired; book again", field: "bookingId")
        }
        guard booking.paidQuantity == 0 else {
            return DomainError(
                .conflict,
                .bookingNotPayable,
                "booking \(booking.id) is partly paid through the App Store; pay the rest there",
                field: "bookingId"
            )
        }
        return nil
    }

    /// The hold while the payment sheet is open: extended once (by the first payment), to at least
    /// `now + minutes`, never shortened.
    public static func extendedHold(_ booking: Booking, minutes: Int, now: Date) -> Date {
        max(booking.holdExpiresAt, now.addingTimeInterval(TimeInterval(minutes * 60)))
    }

    /// The claim a succeeded payment makes on its booking: the whole booking, by its user.
    public static func claim(_ payment: CardPayment, booking: Booking, facts: CardPaymentFacts) -> PurchaseClaim {
        let digits = CurrencyUnits.fractionDigits(facts.currency)
        var milli = facts.amountMinor
        for _ in digits..<3 { milli = milli.multipliedReportingOverflow(by: 10).partialValue }
        return PurchaseClaim(
            tenantId: payment.tenantId,
            userId: payment.userId,
            target: .booking(id: booking.id),
            store: store,
            environment: payment.environment,
            transactionId: facts.providerRef,
            originalTransactionId: facts.providerRef,
            productId: productId,
            purchasedAt: facts.at,
            proofHash: facts.proofHash,
            priceMilliunits: milli,
            currency: facts.currency.uppercased(),
            quantity: max(1, booking.requiredQuantity),
            revoked: false,
            proofKind: "card"
        )
    }

    /// The plan of a succeeded payment: the booking rules' plan (confirm; late but free → confirm;
    /// slot taken or booking no longer payable → recorded for a refund), or, when what was paid is
    /// not the booking's price, a purchase recorded for a refund that changes nothing else.
    public static func paidPlan(
        _ payment: CardPayment,
        booking: Booking,
        resource: Resource?,
        occupancy: Occupancy,
        facts: CardPaymentFacts,
        holdExtension: TimeInterval,
        now: Date
    ) -> PurchasePlan {
        let claim = claim(payment, booking: booking, facts: facts)
        if facts.amountMinor != booking.priceMinor || facts.currency.uppercased() != booking.currency.uppercased()
            || (facts.metadata["berth_booking_id"].map { $0 != String(booking.id) } ?? false)
        {
            let purchase = Purchase(claim, id: RecordID.next(), status: .needsRefund, outcomeCode: ErrorCode.amountMismatch.rawValue, now: now)
            let message =
                "paid \(facts.amountMinor) \(facts.currency.uppercased()) for a booking of \(booking.priceMinor) \(booking.currency); recorded for a refund"
            let audit = AuditRecord(
                tenantId: payment.tenantId,
                actor: .provider(store),
                action: .purchaseNeedsRefund,
                bookingId: booking.id,
                purchaseId: purchase.id,
                detail: ["transactionId": facts.providerRef, "outcome": ErrorCode.amountMismatch.rawValue],
                at: now
            )
            return PurchasePlan(
                outcome: .needsRefund(purchase, code: .amountMismatch, message: message),
                purchase: purchase,
                proofHash: facts.proofHash,
                audit: [audit]
            )
        }
        var plan = BookingPurchaseRules.plan(
            claim,
            booking: booking,
            resource: resource,
            occupancy: occupancy,
            now: now,
            holdExtension: holdExtension
        )
        plan.audit = plan.audit.map { record in
            var record = record
            record.actor = .provider(store)
            return record
        }
        return plan
    }

    /// What a refund (or a lost dispute) of `payment` does to its purchase and booking: a full one
    /// refunds the purchase and, when the purchase paid the booking, refunds the booking (its slot is
    /// free again; a lost dispute of a stay that already began leaves the booking as it is). A
    /// partial refund (a cancellation fee kept) changes neither.
    public static func refundPlan(
        _ payment: CardPayment,
        purchase: Purchase?,
        booking: Booking?,
        reason: String,
        disputeLost: Bool = false,
        now: Date
    ) -> (purchase: Purchase?, booking: Booking?, events: [WebhookEvent]) {
        guard payment.fullyRefunded || disputeLost, var purchase, purchase.status != .refunded else { return (nil, nil, []) }
        let wasApplied = purchase.status == .applied
        purchase.refund(at: now)
        guard var booking else { return (purchase, nil, []) }
        let paidThisBooking = booking.purchaseId == purchase.id || booking.purchaseId == nil
        let begun = booking.start <= now
        if wasApplied, paidThisBooking, booking.status == .confirmed, !(disputeLost && begun) {
            booking.status = .refunded
            booking.statusReason = reason
            booking.updatedAt = now
            return (
                purchase, booking,
                [.booking(.bookingRefunded, booking, purchase: purchase), .booking(.purchaseRefunded, booking, purchase: purchase)]
            )
        }
        if booking.status == .paymentNeedsRefund, paidThisBooking {
            // The money that could not be honoured went back: nothing is owed any more.
            booking.status = .refunded
            booking.statusReason = reason
            booking.updatedAt = now
            return (purchase, booking, [.booking(.purchaseRefunded, booking, purchase: purchase)])
        }
        return (purchase, nil, [.booking(.purchaseRefunded, booking, purchase: purchase)])
    }
}

extension Actor {
    /// A payment provider, through its signed events (`stripe`).
    public static func provider(_ name: String) -> Actor { Actor(rawValue: name) }
    public static func provider(_ store: StoreName) -> Actor { Actor(rawValue: store.rawValue) }
}

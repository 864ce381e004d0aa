import Foundation

/// What a REFUND, REVOKE or REFUND_REVERSED does to a purchase that paid (or tried to pay) for a
/// booking, and to the booking. Other notification types are ``NotificationRules``'.
public enum BookingRefundRules {
    public enum Effect: Hashable, Sendable {
        /// The purchase was refunded or revoked: purchase `refunded`, booking `refunded` (its slot is released).
        case refundBooking
        /// A payment that was never honoured (it awaited a refund) was refunded: purchase `refunded` only.
        case refundPurchaseOnly
        /// One of several payments of a booking was refunded: purchase `refunded` and its units no longer
        /// paid. A pending booking stays pending (the units are to be bought again); a confirmed one is no
        /// longer paid in full and becomes `payment_needs_refund` (slot released; operators refund the
        /// other payments or confirm it by hand).
        case refundPart
        /// A refund was reversed: purchase `applied` again, booking `confirmed` (or `payment_needs_refund`
        /// if its slot was taken meanwhile).
        case reinstateBooking(slotStillFree: Bool)
        /// Nothing changes; the string says why (`already_refunded`, `not_refunded`, `no_booking`).
        case recordOnly(String)

        /// The outcome stored with the notification.
        public var outcome: String {
            switch self {
            case .refundBooking: "booking_refunded"
            case .refundPurchaseOnly: "purchase_refunded"
            case .refundPart: "part_refunded"
            case .reinstateBooking(let free): free ? "booking_reinstated" : "reinstated_needs_refund"
            case .recordOnly(let reason): reason
            }
        }
    }

    /// Whether deciding needs the occupancy of the booking's slot (a reversed refund gives the slot back only if it is free).
    public static func needsOccupancy(_ notification: IncomingNotification) -> Bool { notification.type == .refundReversed }

    /// The effect of a refund, revocation or reversal of `purchase` on it and its booking.
    public static func decide(_ notification: IncomingNotification, purchase: Purchase, booking: Booking?, slotStillFree: Bool) -> Effect {
        guard let booking else { return .recordOnly("no_booking") }
        if notification.type == .refundReversed {
            guard purchase.status == .refunded, booking.status == .refunded else { return .recordOnly("not_refunded") }
            return .reinstateBooking(slotStillFree: slotStillFree)
        }
        switch purchase.status {
        case .refunded: return .recordOnly("already_refunded")
        case .needsRefund: return .refundPurchaseOnly
        case .applied:
            // A booking paid by several transactions: refunding one of them takes its units back.
            let units = max(1, purchase.quantity ?? 1)
            let paidByOthers = booking.paidQuantity - units > 0
            if booking.status == .pendingPayment || (booking.status == .confirmed && paidByOthers) { return .refundPart }
            return booking.purchaseId == purchase.id ? .refundBooking : .refundPurchaseOnly
        }
    }

    /// Everything a notification about a booking's purchase writes: the purchase and booking as they
    /// become, the audit entry and the events. Types other than a refund are ``NotificationRules``'.
    public static func plan(
        _ notification: IncomingNotification,
        purchase: Purchase,
        booking: Booking?,
        slotStillFree: Bool,
        now: Date
    ) -> NotificationPlan {
        guard NotificationRules.isRefund(notification) else { return NotificationRules.plan(notification, purchase: purchase, now: now) }
        let effect = decide(notification, purchase: purchase, booking: booking, slotStillFree: slotStillFree)
        var p = purchase
        var plan: NotificationPlan
        switch (effect, booking) {
        case (.recordOnly(let reason), _):
            plan = NotificationPlan(effect: .recordOnly(reason))
        case (.refundPurchaseOnly, let booking):
            p.refund(at: now)
            plan = NotificationPlan(effect: .appliedByKind(effect.outcome))
            plan.purchase = p
            if let booking { plan.events = [.booking(.purchaseRefunded, booking, purchase: p)] }
        case (.refundBooking, var b?):
            p.refund(at: now)
            b.status = .refunded
            b.statusReason = notification.type.rawValue
            b.updatedAt = now
            plan = changed(effect, p, b, events: [.booking(.bookingRefunded, b, purchase: p), .booking(.purchaseRefunded, b, purchase: p)])
        case (.refundPart, var b?):
            p.refund(at: now)
            b.paidQuantity = max(0, b.paidQuantity - max(1, p.quantity ?? 1))
            if b.status == .confirmed {
                b.status = .paymentNeedsRefund
                b.statusReason = notification.type.rawValue
            }
            b.updatedAt = now
            plan = changed(effect, p, b, events: [.booking(.purchaseRefunded, b, purchase: p)])
        case (.reinstateBooking(let free), var b?):
            p.status = free ? .applied : .needsRefund
            p.refundedAt = nil
            p.outcomeCode = free ? nil : ErrorCode.slotUnavailable.rawValue
            b.status = free ? .confirmed : .paymentNeedsRefund
            b.statusReason = notification.type.rawValue
            b.updatedAt = now
            plan = changed(effect, p, b, events: [.booking(.bookingConfirmed, b, purchase: p)])
        case (.refundBooking, nil), (.refundPart, nil), (.reinstateBooking, nil):
            // `decide` answers these only with a booking.
            plan = NotificationPlan(effect: .recordOnly("no_booking"))
        }
        return NotificationRules.audited(plan, notification, bookingId: plan.effects.booking?.id ?? booking?.id, purchaseId: purchase.id, now: now)
    }

    private static func changed(_ effect: Effect, _ purchase: Purchase, _ booking: Booking, events: [WebhookEvent]) -> NotificationPlan {
        var plan = NotificationPlan(effect: .appliedByKind(effect.outcome))
        plan.purchase = purchase
        plan.effects = [.booking(booking)]
        plan.events = events
        return plan
    }
}

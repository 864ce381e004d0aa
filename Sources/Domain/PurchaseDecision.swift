import Foundation

/// Everything the exactly-once rules look at, read inside the applying transaction.
public struct PurchaseContext: Sendable {
    public var claim: PurchaseClaim
    /// The purchase already recorded for this (store, environment, transaction id), if any.
    public var existing: Purchase?
    public var booking: Booking
    public var resource: Resource?
    /// What other bookings hold of a slot overlapping this booking's, at `now`.
    public var occupancy: Occupancy
    public var now: Date

    public init(claim: PurchaseClaim, existing: Purchase?, booking: Booking, resource: Resource?, occupancy: Occupancy, now: Date) {
        self.claim = claim
        self.existing = existing
        self.booking = booking
        self.resource = resource
        self.occupancy = occupancy
        self.now = now
    }
}

/// What to do with a claimed purchase. Pure data; the store applies it in one transaction.
public enum PurchaseDecision: Hashable, Sendable {
    /// The same user already claimed this transaction for this booking: answer as before, write nothing.
    case repeatOf(Purchase)
    /// Someone else (another user, booking or tenant) already used this transaction: record a replay, refuse.
    case replay(existing: Purchase, reason: String)
    /// Record the purchase and confirm the booking.
    case confirm
    /// Record the purchase as needing a refund; optionally move the booking (to `payment_needs_refund`).
    case needsRefund(code: String, message: String, bookingStatus: BookingStatus?)
}

public enum PurchaseRules {
    /// The exactly-once and booking rules of `POST /api/verify-purchase`.
    public static func decide(_ context: PurchaseContext) -> PurchaseDecision {
        let claim = context.claim
        if let existing = context.existing {
            if existing.tenantId == claim.tenantId, existing.userId == claim.userId, existing.bookingId == claim.bookingId {
                return .repeatOf(existing)
            }
            let reason: String
            if existing.tenantId != claim.tenantId {
                reason = "transaction already used by another app"
            } else if existing.userId != claim.userId {
                reason = "transaction already used by another user"
            } else {
                reason = "transaction already used for booking \(existing.bookingId.map(String.init) ?? "none")"
            }
            return .replay(existing: existing, reason: reason)
        }
        let booking = context.booking
        switch booking.status {
        case .pendingPayment:
            if booking.holdExpiresAt > context.now { return .confirm }
            if let resource = context.resource, Capacity.fits(resource, seats: booking.seats, occupancy: context.occupancy) {
                return .confirm
            }
            return .needsRefund(code: "slot_unavailable", message: "the hold expired and the slot was taken; the payment is recorded for a refund", bookingStatus: .paymentNeedsRefund)
        case .confirmed:
            return .needsRefund(code: "booking_already_paid", message: "the booking was already paid by another transaction; this payment is recorded for a refund", bookingStatus: nil)
        case .cancelled, .refunded:
            return .needsRefund(code: "booking_not_payable", message: "the booking is \(booking.status.rawValue); the payment is recorded for a refund", bookingStatus: .paymentNeedsRefund)
        case .paymentNeedsRefund:
            return .needsRefund(code: "booking_not_payable", message: "the booking already awaits a refund; this payment is recorded for a refund", bookingStatus: nil)
        }
    }
}

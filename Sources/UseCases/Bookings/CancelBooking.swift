import Domain
import Foundation

/// `GET /api/bookings/{id}/cancellation` and `POST /api/bookings/{id}/cancel`: a customer cancels
/// their own booking under the cancellation policy (issue "Run the season").
///
/// Unpaid: the hold is released. Paid by card: the booking is cancelled, then the policy's share is
/// refunded through Stripe (recorded before Stripe is asked, retried until it answers, never twice);
/// what the policy keeps is recorded as kept, so it is not listed as owed. Paid through the App
/// Store or Google Play: cancelled and owed (the stores decide their refunds), with the words the
/// app shows the customer.
public struct CancelBooking: Sendable {
    public struct Done: Sendable {
        public var booking: Booking
        public var quote: CancellationQuote
        /// The card refund asked of Stripe, when the policy gave something back by card.
        public var refund: CardRefund?
    }

    let store: any Store
    let clock: any BerthClock
    let refund: RefundCardBooking
    let transition: AdminBookingTransition

    public init(store: any Store, clock: any BerthClock, refund: RefundCardBooking, transition: AdminBookingTransition) {
        (self.store, self.clock, self.refund, self.transition) = (store, clock, refund, transition)
    }

    /// What cancelling `bookingId` now gives back. `userId`: the customer's own bookings only.
    public func quote(runtime: TenantRuntime, bookingId: Int64, userId: String?) async throws -> (Booking, CancellationQuote) {
        let tenantId = runtime.id, now = clock.now()
        let (booking, paid) = try await store.read { tx -> (Booking, BookingPaid?) in
            guard let booking = try tx.bookings.booking(id: bookingId, tenantId: tenantId, forUpdate: false),
                userId == nil || booking.userId == userId
            else { throw DomainError.bookingNotFound(bookingId) }
            return (booking, try tx.operatorViews.bookingPayments(tenantId: tenantId, bookingIds: [bookingId])[bookingId])
        }
        let rails = paid?.rails ?? []
        let rail: CancellationQuote.Rail =
            rails.contains(.card) ? .card : rails.contains(.appStore) ? .appStore : rails.contains(.googlePlay) ? .googlePlay : .none
        let quote = CancellationQuote.make(
            booking: booking,
            paidMinor: paid?.amountMinor ?? 0,
            rail: rail,
            policy: runtime.tenant.cancellationPolicy(resourceId: booking.resourceId),
            byOperator: userId == nil,
            now: now
        )
        return (booking, quote)
    }

    /// Cancels `bookingId` for its customer as ``quote`` says, or refuses with the quote's code.
    public func callAsFunction(runtime: TenantRuntime, bookingId: Int64, userId: String, actor: Actor) async throws -> Done {
        let (booking, quote) = try await self.quote(runtime: runtime, bookingId: bookingId, userId: userId)
        guard quote.allowed else {
            throw DomainError(.conflict, quote.refusal ?? .invalidTransition, quote.words)
        }
        let hours = Int(quote.hoursLeft.rounded(.down))
        let reason =
            booking.status == .pendingPayment
            ? "customer: cancelled before paying"
            : "customer: cancelled \(hours) h before the start, \(quote.refundPercent) % back"
        let cancelled = try await transition(bookingId, to: .cancelled, runtime: runtime, actor: actor, reason: reason)
        guard booking.status == .confirmed, quote.rail == .card else { return Done(booking: cancelled, quote: quote, refund: nil) }
        // Across the booking's card payments (its own, and a dearer move's difference), each refund
        // recorded before Stripe is asked and retried by the jobs until it answers.
        let done =
            quote.refundMinor > 0
            ? try await refund.upTo(
                quote.refundMinor,
                runtime: runtime,
                bookingId: bookingId,
                reason: "cancelled by the customer: \(quote.refundPercent) % under the cancellation policy",
                actor: actor
            ) : []
        let refunded = done.reduce(Int64(0)) { $0 + $1.refund.amountMinor }
        // What the policy keeps is closed only once the policy's share is all on its way back: until
        // then (a refund refused, or one of two payments still being refunded) the card payment stays
        // listed as owed, never hidden.
        if quote.refundPercent < 100, refunded >= quote.refundMinor {
            let tenantId = runtime.id, now = clock.now()
            let kept = OwedPayment.Resolved(
                how: .policyKept,
                note: "cancelled \(hours) h before the start: \(quote.refundPercent) % refunded under the cancellation policy",
                actor: actor.rawValue,
                at: now
            )
            _ = try await store.write { tx in try tx.operatorViews.resolveOwed(tenantId: tenantId, bookingId: bookingId, resolved: kept) }
        }
        guard let last = done.last else { return Done(booking: cancelled, quote: quote, refund: nil) }
        var refund = last.refund
        refund.amountMinor = refunded
        return Done(booking: last.booking, quote: quote, refund: refund)
    }
}

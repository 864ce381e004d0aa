import Domain
import Foundation
import Logging

/// `POST /api/admin/bookings/{id}/refund`: an operator refunds (all or part of) the card payment of a
/// booking. The refund is recorded with a fixed idempotency key before the provider is asked, then
/// asked at once; if that fails it is retried by the jobs, never repeated. A full refund refunds the
/// booking and frees its slot. App Store purchases are refunded by Apple only.
public struct RefundCardBooking: Sendable {
    public struct Result: Sendable {
        public var refund: CardRefund
        public var payment: CardPayment
        public var booking: Booking
    }

    let store: any Store
    let jobs: CardPaymentJobs
    let clock: any BerthClock

    public init(store: any Store, jobs: CardPaymentJobs, clock: any BerthClock) {
        self.store = store
        self.jobs = jobs
        self.clock = clock
    }

    /// Refunds all that is left of every card payment of the booking (a booking moved to a dearer
    /// place has two: its own and its difference's), one refund per payment, each asked once.
    /// Returns the refunds made; none when nothing was left.
    public func all(runtime: TenantRuntime, bookingId: Int64, reason: String, actor: Actor) async throws -> [Result] {
        try await upTo(nil, runtime: runtime, bookingId: bookingId, reason: reason, actor: actor)
    }

    /// Refunds `amountMinor` (nil: all that is left) across the booking's card payments, the first
    /// payment first.
    public func upTo(_ amountMinor: Int64?, runtime: TenantRuntime, bookingId: Int64, reason: String, actor: Actor) async throws -> [Result] {
        var results: [Result] = []
        var remaining = amountMinor
        // At most one refund per payment; a booking has a handful.
        for _ in 0..<20 {
            if let left = remaining, left <= 0 { break }
            do {
                let done = try await self(runtime: runtime, bookingId: bookingId, amountMinor: remaining, reason: reason, actor: actor, capped: true)
                results.append(done)
                if let left = remaining { remaining = left - done.refund.amountMinor }
            } catch let error as DomainError where (error.code == .bookingNotPaid || error.code == .refundInProgress) && !results.isEmpty {
                // Nothing left, or what is left is being refunded (a refund recorded here and retried by the jobs).
                break
            }
        }
        return results
    }

    public func callAsFunction(
        runtime: TenantRuntime,
        bookingId: Int64,
        amountMinor: Int64?,
        reason: String,
        actor: Actor,
        capped: Bool = false
    ) async throws -> Result {
        guard let stripe = runtime.stripe else { throw DomainError(.unprocessable, .cardPaymentsNotOffered, "this app takes no card payments") }
        let now = clock.now(), tenantId = runtime.id, tenant = runtime.tenant, settings = stripe.settings, emitsEvents = runtime.webhook != nil
        let refund = try await store.write { tx -> CardRefund in
            guard let booking = try tx.bookings.booking(id: bookingId, tenantId: tenantId, forUpdate: true) else {
                throw DomainError(.notFound, .bookingNotFound, "no booking \(bookingId)", field: "id")
            }
            let payments = try tx.cardPayments.payments(bookingId: bookingId, tenantId: tenantId).filter {
                $0.status == .succeeded && $0.purpose == .booking
            }
            // The payment that confirmed the booking first, then the others (a dearer move's difference);
            // one whose refund is still being processed is passed over for the next.
            let candidates =
                payments.filter { $0.purchaseId != nil && $0.purchaseId == booking.purchaseId && $0.refundable > 0 }
                + payments.filter { !($0.purchaseId != nil && $0.purchaseId == booking.purchaseId) && $0.refundable > 0 }
            guard !candidates.isEmpty else {
                if booking.purchaseId != nil || booking.paidQuantity > 0, payments.isEmpty {
                    throw DomainError(.conflict, .refundViaApple, "booking \(bookingId) was paid through the App Store: only Apple refunds it")
                }
                throw DomainError(.conflict, .bookingNotPaid, "booking \(bookingId) has no card payment left to refund")
            }
            var chosen: (CardPayment, [CardRefund])?
            for candidate in candidates {
                let refunds = try tx.cardPayments.refunds(paymentId: candidate.id, tenantId: tenantId)
                if !refunds.contains(where: { $0.status == .pending }) {
                    chosen = (candidate, refunds)
                    break
                }
            }
            guard let (payment, refunds) = chosen else {
                throw DomainError(.conflict, .refundInProgress, "a refund of this payment is still being processed; look again shortly")
            }
            // Capped: what this payment has left, the rest from the next one (``upTo(_:runtime:bookingId:reason:actor:)``).
            let amount = capped ? min(amountMinor ?? payment.refundable, payment.refundable) : amountMinor ?? payment.refundable
            guard amount >= 1, amount <= payment.refundable else {
                throw DomainError(
                    .unprocessable,
                    .invalidAmount,
                    "amountMinor must be 1...\(payment.refundable) (what is left of the payment)",
                    field: "amountMinor"
                )
            }
            let settlement = CardPaymentSettlement(tenant: tenant, settings: settings, emitsEvents: emitsEvents, tx: tx, now: now)
            // The worker takes it over if this call's attempt does not end (a crash, the provider down).
            return try settlement.requestRefund(
                payment,
                amount: amount,
                reason: reason,
                initiatedBy: .admin,
                actor: actor,
                key: "berth:refund:\(payment.purchaseId ?? payment.id):\(refunds.count + 1)",
                due: now.addingTimeInterval(30)
            )
        }
        let attempted = await jobs.attempt(refund)
        return try await store.read { tx in
            guard let payment = try tx.cardPayments.payment(id: attempted.paymentId, tenantId: tenantId, forUpdate: false),
                let booking = try tx.bookings.booking(id: bookingId, tenantId: tenantId, forUpdate: false)
            else {
                throw DomainError(.notFound, .bookingNotFound, "no booking \(bookingId)", field: "id")
            }
            return Result(refund: attempted, payment: payment, booking: booking)
        }
    }
}

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

    public func callAsFunction(runtime: TenantRuntime, bookingId: Int64, amountMinor: Int64?, reason: String, actor: Actor) async throws -> Result {
        guard let stripe = runtime.stripe else { throw DomainError(.unprocessable, .cardPaymentsNotOffered, "this app takes no card payments") }
        let now = clock.now(), tenantId = runtime.id, tenant = runtime.tenant, settings = stripe.settings, emitsEvents = runtime.webhook != nil
        let refund = try await store.write { tx -> CardRefund in
            guard let booking = try tx.bookings.booking(id: bookingId, tenantId: tenantId, forUpdate: true) else {
                throw DomainError(.notFound, .bookingNotFound, "no booking \(bookingId)", field: "id")
            }
            let payments = try tx.cardPayments.payments(bookingId: bookingId, tenantId: tenantId).filter {
                $0.status == .succeeded && $0.purpose == .booking
            }
            guard
                let payment = payments.first(where: { $0.purchaseId != nil && $0.purchaseId == booking.purchaseId && $0.refundable > 0 })
                    ?? payments.first(where: { $0.refundable > 0 })
            else {
                if booking.purchaseId != nil || booking.paidQuantity > 0, payments.isEmpty {
                    throw DomainError(.conflict, .refundViaApple, "booking \(bookingId) was paid through the App Store: only Apple refunds it")
                }
                throw DomainError(.conflict, .bookingNotPaid, "booking \(bookingId) has no card payment left to refund")
            }
            let refunds = try tx.cardPayments.refunds(paymentId: payment.id, tenantId: tenantId)
            guard !refunds.contains(where: { $0.status == .pending }) else {
                throw DomainError(.conflict, .refundInProgress, "a refund of this payment is still being processed; look again shortly")
            }
            let amount = amountMinor ?? payment.refundable
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

import Domain
import Foundation
import Logging
import StripeAPI

/// `POST /api/bookings/{id}/card-payment`: the PaymentIntent of a pending booking (created, or the
/// open one returned), for exactly the booking's price, with the booking in its metadata and an
/// idempotency key that makes a retry after a lost answer find the same one. The first payment of
/// a booking extends its hold once, so that 3-D Secure has time.
public struct StartCardPayment: Sendable {
    public struct Result: Sendable {
        public var payment: CardPayment
        public var clientSecret: String
        public var publishableKey: String
        public var holdExpiresAt: Date
        /// False when an open payment was returned.
        public var created: Bool
    }

    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    public func callAsFunction(runtime: TenantRuntime, userId: String, bookingId: Int64) async throws -> Result {
        guard let stripe = runtime.stripe, runtime.tenant.bookingPaymentRails.contains(.card) else {
            throw DomainError(.unprocessable, .cardPaymentsNotOffered, "this app takes no card payments for bookings")
        }
        let now = clock.now()
        let tenantId = runtime.id, environment = stripe.environment, settings = stripe.settings
        let (payment, booking, created) = try await store.write { tx -> (CardPayment, Booking, Bool) in
            guard var booking = try tx.bookings.booking(id: bookingId, tenantId: tenantId, forUpdate: true), booking.userId == userId else {
                throw DomainError.bookingNotFound(bookingId)
            }
            if let refusal = CardPaymentRules.refusal(booking, now: now) { throw refusal }
            if let open = try tx.cardPayments.openPayment(bookingId: bookingId, purpose: .booking, tenantId: tenantId, forUpdate: true) {
                return (open, booking, false)
            }
            let attempt = try tx.cardPayments.payments(bookingId: bookingId, tenantId: tenantId).filter { $0.purpose == .booking }.count + 1
            if attempt == 1 {
                booking.holdExpiresAt = CardPaymentRules.extendedHold(booking, minutes: settings.holdMinutes, now: now)
                booking.updatedAt = now
                try tx.bookings.update(booking, now: now)
            }
            let payment = CardPayment(
                id: RecordID.next(),
                tenantId: tenantId,
                bookingId: bookingId,
                userId: userId,
                environment: environment,
                providerRef: nil,
                amountMinor: booking.priceMinor,
                currency: booking.currency.uppercased(),
                status: .creating,
                idempotencyKey: "berth:\(tenantId):booking:\(bookingId):pi:\(attempt)",
                nextCheckAt: min(booking.holdExpiresAt, now.addingTimeInterval(settings.reconcileAfter)),
                createdAt: now,
                updatedAt: now
            )
            try tx.cardPayments.insert(payment)
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: .user(userId),
                    action: .cardPaymentCreated,
                    bookingId: bookingId,
                    purchaseId: nil,
                    detail: [
                        "paymentId": String(payment.id), "amount": String(payment.amountMinor), "currency": payment.currency,
                        "holdExpiresAt": String(booking.holdExpiresAt.epochMilliseconds),
                    ],
                    at: now
                )
            )
            return (payment, booking, true)
        }
        let intent: StripePaymentIntent
        do {
            if let ref = payment.providerRef {
                intent = try await stripe.client.paymentIntent(id: ref)
            } else {
                intent = try await stripe.client.createPaymentIntent(
                    amount: payment.amountMinor,
                    currency: payment.currency,
                    metadata: ["berth_tenant": tenantId, "berth_booking_id": String(bookingId), "berth_payment_id": String(payment.id)],
                    idempotencyKey: payment.idempotencyKey
                )
            }
        } catch {
            logger.warning("card payment not created", metadata: ["booking": .string(String(bookingId)), "error": .string(error.description)])
            throw DomainError.providerUnavailable(error)
        }
        guard let clientSecret = intent.clientSecret else {
            throw DomainError(.unavailable, .paymentProviderUnavailable, "the payment provider answered without a client secret", retryAfter: 5)
        }
        var recorded = payment
        if payment.providerRef == nil {
            recorded = try await store.write { tx in
                guard var current = try tx.lockedCardPayment({ try tx.cardPayments.payment(id: payment.id, tenantId: tenantId, forUpdate: $0) })
                else { return payment }
                if current.providerRef == nil, current.status == .creating {
                    current.providerRef = intent.id
                    current.status = .open
                    current.providerStatus = intent.status
                    current.updatedAt = now
                    try tx.cardPayments.update(current)
                }
                return current
            }
        }
        return Result(
            payment: recorded,
            clientSecret: clientSecret,
            publishableKey: stripe.settings.publishableKey,
            holdExpiresAt: booking.holdExpiresAt,
            created: created
        )
    }
}

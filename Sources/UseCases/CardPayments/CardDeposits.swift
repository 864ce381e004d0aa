import Domain
import Foundation
import Logging
import StripeAPI

/// Security deposits (a boat's damage deposit) at check-in: a PaymentIntent with manual capture for
/// a confirmed booking, authorized on the customer's card, then captured in part (damage) or released.
/// Berth releases an authorization itself before the card networks' window ends.
public struct CardDeposits: Sendable {
    /// How long an authorization is kept before Berth releases it: card-not-present authorizations
    /// last 7 days (Visa merchant-initiated ones 5); six days leaves a margin.
    public static let captureWindow: TimeInterval = 6 * 86_400
    /// A deposit the customer never authorized is canceled after a day.
    public static let unauthorizedLifetime: TimeInterval = 86_400
    /// The largest deposit (as for prices).
    public static let maximumAmount: Int64 = Resource.maximumPriceMinor

    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// Starts (or returns the active) deposit of a confirmed booking: what the Payment Sheet needs.
    public func start(runtime: TenantRuntime, bookingId: Int64, amountMinor: Int64, actor: Actor) async throws -> StartCardPayment.Result {
        let stripe = try Self.rail(runtime)
        guard (1...Self.maximumAmount).contains(amountMinor) else {
            throw DomainError(.unprocessable, .invalidAmount, "amountMinor must be 1...\(Self.maximumAmount)", field: "amountMinor")
        }
        let now = clock.now(), tenantId = runtime.id, environment = stripe.environment, settings = stripe.settings
        let (payment, booking, created) = try await store.write { tx -> (CardPayment, Booking, Bool) in
            guard let booking = try tx.bookings.booking(id: bookingId, tenantId: tenantId, forUpdate: true) else {
                throw DomainError(.notFound, .bookingNotFound, "no booking \(bookingId)", field: "id")
            }
            guard booking.status == .confirmed else {
                throw DomainError(
                    .conflict,
                    .bookingNotPayable,
                    "booking \(bookingId) is \(booking.status.rawValue); a deposit is taken for a confirmed booking",
                    field: "id"
                )
            }
            if let active = try tx.cardPayments.openPayment(bookingId: bookingId, purpose: .deposit, tenantId: tenantId, forUpdate: true) {
                guard active.status.isOpen else {
                    throw DomainError(
                        .conflict,
                        .depositHeld,
                        "booking \(bookingId) already holds a deposit: capture or release it first",
                        field: "id"
                    )
                }
                return (active, booking, false)
            }
            let attempt = try tx.cardPayments.payments(bookingId: bookingId, tenantId: tenantId).filter { $0.purpose == .deposit }.count + 1
            let payment = CardPayment(
                id: RecordID.next(),
                tenantId: tenantId,
                bookingId: bookingId,
                userId: booking.userId,
                purpose: .deposit,
                environment: environment,
                providerRef: nil,
                amountMinor: amountMinor,
                currency: booking.currency.uppercased(),
                status: .creating,
                idempotencyKey: "berth:\(tenantId):booking:\(bookingId):deposit:\(attempt)",
                nextCheckAt: now.addingTimeInterval(settings.reconcileAfter),
                createdAt: now,
                updatedAt: now
            )
            try tx.cardPayments.insert(payment)
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: .cardDepositRequested,
                    bookingId: bookingId,
                    purchaseId: nil,
                    detail: ["paymentId": String(payment.id), "amount": String(amountMinor), "currency": payment.currency],
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
                    metadata: [
                        "berth_tenant": tenantId, "berth_booking_id": String(bookingId), "berth_payment_id": String(payment.id),
                        "berth_purpose": "deposit",
                    ],
                    captureMethod: "manual",
                    idempotencyKey: payment.idempotencyKey
                )
            }
        } catch {
            logger.warning("deposit not created", metadata: ["booking": .string(String(bookingId)), "error": .string(error.description)])
            throw DomainError.providerUnavailable(error)
        }
        guard let clientSecret = intent.clientSecret else {
            throw DomainError(.unavailable, .paymentProviderUnavailable, "the payment provider answered without a client secret", retryAfter: 5)
        }
        let recorded = try await record(intent, of: payment, runtime: runtime, stripe: stripe)
        return StartCardPayment.Result(
            payment: recorded,
            clientSecret: clientSecret,
            publishableKey: settings.publishableKey,
            holdExpiresAt: booking.holdExpiresAt,
            created: created
        )
    }

    /// Captures `amountMinor` (default all) of the booking's authorized deposit; the rest is released.
    public func capture(runtime: TenantRuntime, bookingId: Int64, amountMinor: Int64?, actor: Actor) async throws -> CardPayment {
        let stripe = try Self.rail(runtime)
        let deposit = try await held(runtime: runtime, bookingId: bookingId, authorizedOnly: true)
        let amount = amountMinor ?? deposit.amountMinor
        guard amount >= 1, amount <= deposit.amountMinor else {
            throw DomainError(
                .unprocessable,
                .invalidAmount,
                "amountMinor must be 1...\(deposit.amountMinor) (the authorized deposit)",
                field: "amountMinor"
            )
        }
        let intent: StripePaymentIntent
        do {
            intent = try await stripe.client.capturePaymentIntent(
                id: deposit.providerRef ?? "",
                amount: amount,
                idempotencyKey: "berth:capture:\(deposit.providerRef ?? ""):\(amount)"
            )
        } catch {
            throw DomainError.providerUnavailable(error)
        }
        let request = AuditRecord(
            tenantId: runtime.id,
            actor: actor,
            action: .cardDepositCaptureRequested,
            bookingId: bookingId,
            purchaseId: nil,
            detail: ["paymentId": String(deposit.id), "amount": String(amount)],
            at: clock.now()
        )
        return try await record(intent, of: deposit, runtime: runtime, stripe: stripe, request: request)
    }

    /// Releases the booking's deposit (cancels its authorization, or the deposit not yet authorized).
    public func release(runtime: TenantRuntime, bookingId: Int64, actor: Actor) async throws -> CardPayment {
        let stripe = try Self.rail(runtime)
        let deposit = try await held(runtime: runtime, bookingId: bookingId, authorizedOnly: false)
        let intent: StripePaymentIntent
        do {
            intent = try await Self.released(deposit, stripe: stripe)
        } catch {
            throw DomainError.providerUnavailable(error)
        }
        let request = AuditRecord(
            tenantId: runtime.id,
            actor: actor,
            action: .cardDepositReleaseRequested,
            bookingId: bookingId,
            purchaseId: nil,
            detail: ["paymentId": String(deposit.id)],
            at: clock.now()
        )
        return try await record(intent, of: deposit, runtime: runtime, stripe: stripe, request: request)
    }

    /// Cancels the deposit's PaymentIntent; one captured meanwhile is answered as it is.
    static func released(_ deposit: CardPayment, stripe: StripeRuntime) async throws(StripeError) -> StripePaymentIntent {
        guard let ref = deposit.providerRef else {
            throw StripeError(status: nil, type: "network", message: "the deposit's PaymentIntent is not known yet")
        }
        do {
            return try await stripe.client.cancelPaymentIntent(id: ref, reason: "requested_by_customer", idempotencyKey: "berth:cancel:\(ref)")
        } catch {
            guard error.code == "payment_intent_unexpected_state" else { throw error }
            return try await stripe.client.paymentIntent(id: ref)
        }
    }

    private func held(runtime: TenantRuntime, bookingId: Int64, authorizedOnly: Bool) async throws -> CardPayment {
        let tenantId = runtime.id
        let deposit = try await store.read { tx -> CardPayment? in
            guard try tx.bookings.booking(id: bookingId, tenantId: tenantId, forUpdate: false) != nil else {
                throw DomainError(.notFound, .bookingNotFound, "no booking \(bookingId)", field: "id")
            }
            return try tx.cardPayments.openPayment(bookingId: bookingId, purpose: .deposit, tenantId: tenantId, forUpdate: false)
        }
        guard let deposit, !authorizedOnly || deposit.status == .authorized else {
            throw DomainError(.conflict, .depositNotHeld, "booking \(bookingId) holds no authorized deposit", field: "id")
        }
        return deposit
    }

    /// Records what Stripe answered of a deposit (and who asked, `request`), through the same rules as its events.
    private func record(
        _ intent: StripePaymentIntent,
        of payment: CardPayment,
        runtime: TenantRuntime,
        stripe: StripeRuntime,
        request: AuditRecord? = nil
    ) async throws -> CardPayment {
        let now = clock.now(), tenantId = payment.tenantId, tenant = runtime.tenant, settings = stripe.settings
        return try await store.write { tx in
            guard var current = try tx.lockedCardPayment({ try tx.cardPayments.payment(id: payment.id, tenantId: tenantId, forUpdate: $0) }) else {
                return payment
            }
            if current.providerRef == nil { current.providerRef = intent.id }
            if let request { try tx.audit.append(request) }
            let settlement = CardPaymentSettlement(tenant: tenant, settings: settings, emitsEvents: false, tx: tx, now: now)
            switch intent.status {
            case "requires_capture":
                _ = try settlement.authorized(&current, amount: intent.amountCapturable ?? intent.amount, window: Self.captureWindow)
            case "succeeded": _ = try settlement.captured(&current, amount: intent.amountReceived ?? intent.amount)
            case "canceled": _ = try settlement.canceled(&current)
            default:
                if current.status == .creating {
                    current.status = .open
                    current.providerStatus = intent.status
                    current.updatedAt = now
                    try tx.cardPayments.update(current)
                }
            }
            return current
        }
    }

    static func rail(_ runtime: TenantRuntime) throws -> StripeRuntime {
        guard let stripe = runtime.stripe else { throw DomainError(.unprocessable, .cardPaymentsNotOffered, "this app takes no card payments") }
        return stripe
    }
}

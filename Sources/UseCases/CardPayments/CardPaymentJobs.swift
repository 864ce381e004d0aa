import Domain
import Foundation
import Logging
import StripeAPI

/// The card rail's background work, safe on every instance at once (every call to the provider
/// carries a fixed idempotency key, every write is conditional on the row's state): refunds recorded
/// but not yet answered, and open payments whose check is due (events overdue, or the hold lapsed:
/// the PaymentIntent is fetched; paid → applied like its event; still open after the hold → canceled).
public struct CardPaymentJobs: Sendable {
    let store: any Store
    let tenants: TenantRegistry
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, tenants: TenantRegistry, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.tenants = tenants
        self.clock = clock
        self.logger = logger
    }

    /// Whether any tenant has a card rail (the service runs only then).
    public var hasWork: Bool { tenants.ordered.contains { $0.stripe != nil } }

    /// One round: due refunds, then due checks. Returns how many of each were handled.
    @discardableResult
    public func runDue(limit: Int = 20) async -> (refunds: Int, checks: Int) {
        let now = clock.now()
        var handled = (refunds: 0, checks: 0)
        do {
            let refunds = try await store.read { try $0.cardPayments.dueRefunds(now: now, limit: limit) }
            for refund in refunds {
                _ = await attempt(refund)
                handled.refunds += 1
            }
            let checks = try await store.read { try $0.cardPayments.dueChecks(now: now, limit: limit) }
            for payment in checks {
                await check(payment)
                handled.checks += 1
            }
        } catch {
            logger.error("card payment jobs not read: \(error)")
        }
        return handled
    }

    /// Asks the provider for a recorded refund (with its fixed key) and records the answer: the
    /// refunded amount grows, a full refund frees the booking. A transient failure waits and retries.
    public func attempt(_ refund: CardRefund) async -> CardRefund {
        guard let runtime = tenants.tenant(id: refund.tenantId), let stripe = runtime.stripe else { return refund }
        let tenantId = refund.tenantId
        guard let payment = try? await store.read({ try $0.cardPayments.payment(id: refund.paymentId, tenantId: tenantId, forUpdate: false) }),
            let ref = payment.providerRef
        else { return refund }
        let answer: Result<StripeRefund, StripeError>
        do {
            answer = .success(
                try await stripe.client.createRefund(
                    paymentIntent: ref,
                    amount: refund.amountMinor,
                    reason: nil,
                    metadata: ["berth_refund_id": String(refund.id), "berth_booking_id": String(payment.bookingId)],
                    idempotencyKey: refund.idempotencyKey
                )
            )
        } catch {
            answer = .failure(error)
        }
        let now = clock.now()
        let tenant = runtime.tenant, settings = stripe.settings, emitsEvents = runtime.webhook != nil
        do {
            return try await store.write { tx in
                guard var current = try tx.cardPayments.refund(id: refund.id, tenantId: tenantId, forUpdate: true), current.status == .pending else {
                    return refund
                }
                current.attempts += 1
                current.updatedAt = now
                switch answer {
                case .success(let stripeRefund):
                    current.providerRef = stripeRefund.id
                    current.status = ["failed", "canceled"].contains(stripeRefund.status) ? .failed : .succeeded
                    current.nextAttemptAt = nil
                    current.lastError = current.status == .failed ? "the provider reports the refund \(stripeRefund.status)" : nil
                    try tx.cardPayments.update(current)
                    if current.status == .succeeded,
                        var payment = try tx.lockedCardPayment({
                            try tx.cardPayments.payment(id: current.paymentId, tenantId: tenantId, forUpdate: $0)
                        })
                    {
                        let total = try tx.cardPayments.refunds(paymentId: payment.id, tenantId: tenantId).filter { $0.status == .succeeded }
                            .reduce(Int64(0)) { $0.addingReportingOverflow($1.amountMinor).partialValue }
                        let settlement = CardPaymentSettlement(tenant: tenant, settings: settings, emitsEvents: emitsEvents, tx: tx, now: now)
                        // The operator's own words ("storm warning"), as a cancellation or a manual confirmation keeps them.
                        _ = try settlement.refunded(&payment, total: total, reason: current.reason)
                    }
                case .failure(let error) where error.isTransient:
                    current.lastError = error.description
                    current.nextAttemptAt = now.addingTimeInterval(Self.backoff(attempts: current.attempts))
                    try tx.cardPayments.update(current)
                case .failure(let error):
                    current.status = .failed
                    current.lastError = error.description
                    current.nextAttemptAt = nil
                    try tx.cardPayments.update(current)
                    try tx.audit.append(
                        AuditRecord(
                            tenantId: tenantId,
                            actor: .system,
                            action: .cardRefundFailed,
                            bookingId: payment.bookingId,
                            purchaseId: payment.purchaseId,
                            detail: ["refundId": String(current.id), "error": error.description],
                            at: now
                        )
                    )
                }
                return current
            }
        } catch {
            logger.error("card refund \(refund.id) not recorded: \(error)")
            return refund
        }
    }

    /// Asks the provider about an open payment and applies what it says.
    func check(_ payment: CardPayment) async {
        guard let runtime = tenants.tenant(id: payment.tenantId), let stripe = runtime.stripe else { return }
        let tenantId = payment.tenantId
        let booking: Booking?
        do {
            booking = try await store.read { try $0.bookings.booking(id: payment.bookingId, tenantId: tenantId, forUpdate: false) }
        } catch {
            logger.error("card payment \(payment.id) not checked: \(error)")
            return
        }
        let intent: StripePaymentIntent
        do {
            intent = try await currentIntent(payment, stripe: stripe, booking: booking)
        } catch {
            logger.warning("card payment check failed", metadata: ["payment": .string(String(payment.id)), "error": .string(error.description)])
            let now = clock.now()
            _ = try? await store.write { tx in
                guard var current = try tx.lockedCardPayment({ try tx.cardPayments.payment(id: payment.id, tenantId: tenantId, forUpdate: $0) }),
                    current.status.isActive
                else { return }
                current.checkFailures += 1
                current.nextCheckAt = now.addingTimeInterval(Self.backoff(attempts: current.checkFailures))
                current.updatedAt = now
                try tx.cardPayments.update(current)
            }
            return
        }
        do {
            try await apply(intent, to: payment, runtime: runtime, stripe: stripe, holdEnds: booking?.holdExpiresAt)
        } catch {
            logger.error("card payment \(payment.id) not settled: \(error)")
        }
    }

    /// The PaymentIntent as it is now; one whose booking no longer waits for it (hold lapsed, booking
    /// cancelled) is canceled first, unless it was paid meanwhile.
    private func currentIntent(_ payment: CardPayment, stripe: StripeRuntime, booking: Booking?) async throws(StripeError) -> StripePaymentIntent {
        var intent: StripePaymentIntent
        if let ref = payment.providerRef {
            intent = try await stripe.client.paymentIntent(id: ref)
        } else {
            // Created while its answer was lost: the same key finds the same PaymentIntent.
            intent = try await stripe.client.createPaymentIntent(
                amount: payment.amountMinor,
                currency: payment.currency,
                metadata: ["berth_tenant": payment.tenantId, "berth_booking_id": String(payment.bookingId), "berth_payment_id": String(payment.id)],
                idempotencyKey: payment.idempotencyKey
            )
        }
        let now = clock.now()
        let lapsed: Bool
        switch payment.purpose {
        case .booking:
            lapsed = (booking.map { $0.status != .pendingPayment || $0.holdExpiresAt <= now } ?? true) && intent.status != "requires_capture"
        case .deposit:
            // Released before the card networks' window ends; a deposit nobody authorized goes after a day.
            lapsed = payment.status == .authorized || payment.createdAt.addingTimeInterval(CardDeposits.unauthorizedLifetime) <= now
        }
        guard lapsed, !["succeeded", "canceled", "processing"].contains(intent.status) else { return intent }
        do {
            return try await stripe.client.cancelPaymentIntent(id: intent.id, idempotencyKey: "berth:cancel:\(intent.id)")
        } catch {
            // Paid meanwhile: what it is now decides.
            guard error.code == "payment_intent_unexpected_state" else { throw error }
            return try await stripe.client.paymentIntent(id: intent.id)
        }
    }

    private func apply(
        _ intent: StripePaymentIntent,
        to payment: CardPayment,
        runtime: TenantRuntime,
        stripe: StripeRuntime,
        holdEnds: Date?
    ) async throws {
        let now = clock.now()
        let tenant = runtime.tenant, settings = stripe.settings, emitsEvents = runtime.webhook != nil, tenantId = payment.tenantId
        let encoded = (try? JSONEncoder().encode(intent)) ?? Data()
        let outcome = try await store.write { tx -> String in
            guard var current = try tx.lockedCardPayment({ try tx.cardPayments.payment(id: payment.id, tenantId: tenantId, forUpdate: $0) }),
                current.status.isActive
            else { return "settled" }
            if current.providerRef == nil { current.providerRef = intent.id }
            let settlement = CardPaymentSettlement(tenant: tenant, settings: settings, emitsEvents: emitsEvents, tx: tx, now: now)
            switch intent.status {
            case "succeeded":
                let facts = CardPaymentFacts(
                    providerRef: intent.id,
                    amountMinor: intent.amountReceived ?? intent.amount,
                    currency: intent.currency,
                    livemode: intent.livemode,
                    metadata: intent.metadata ?? [:],
                    proofHash: ReceiveStripeEvent.hash(encoded),
                    at: now
                )
                return try settlement.succeeded(&current, facts: facts)
            case "canceled":
                return try settlement.canceled(&current)
            case "requires_capture" where current.purpose == .deposit && current.status != .authorized:
                return try settlement.authorized(&current, amount: intent.amountCapturable ?? intent.amount, window: CardDeposits.captureWindow)
            case _ where current.purpose == .deposit:
                current.providerStatus = intent.status
                current.checkFailures = 0
                current.nextCheckAt = current.status == .authorized ? now.addingTimeInterval(60) : now.addingTimeInterval(settings.reconcileAfter)
                current.updatedAt = now
                try tx.cardPayments.update(current)
                return "still_open"
            default:
                // Still open: next look when the hold ends (or shortly, when it already has).
                current.status = .open
                current.providerStatus = intent.status
                current.checkFailures = 0
                current.nextCheckAt = holdEnds.map { $0 > now ? $0 : now.addingTimeInterval(60) } ?? now.addingTimeInterval(60)
                current.updatedAt = now
                try tx.cardPayments.update(current)
                return "still_open"
            }
        }
        logger.info(
            "card payment checked",
            metadata: ["payment": .string(String(payment.id)), "status": .string(intent.status), "outcome": .string(outcome)]
        )
    }

    /// 10 s doubling, at most 10 minutes.
    static func backoff(attempts: Int) -> TimeInterval { JobRetry.cardPayments.delay(afterAttempts: attempts) }
}

import Crypto
import Domain
import Foundation
import Logging
import StripeAPI

/// `POST /api/stripe/webhooks/{tenant}`: a Stripe event, verified on its raw bytes with every
/// configured secret (bounded tolerance), recorded once by its id, then applied in the same unit of
/// work (a redelivery, even one racing the first, changes nothing).
public struct ReceiveStripeEvent: Sendable {
    public struct Result: Sendable {
        public var eventId: String
        public var type: String
        public var outcome: String
        public var duplicate: Bool
    }

    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    public func callAsFunction(runtime: TenantRuntime, body: Data, signature: String?) async throws -> Result {
        guard let stripe = runtime.stripe else { throw DomainError(.notFound, .tenantNotFound, "no card payments are received for this app") }
        let now = clock.now()
        do {
            try StripeSignature.verify(payload: body, header: signature, secrets: stripe.webhookSecrets.map(\.value), now: now)
        } catch {
            logger.warning(
                "stripe event refused",
                metadata: [
                    "tenant": .string(runtime.id), "code": .string(error.code.rawValue),
                    "body.sha256": .string(String(Self.hash(body).prefix(16))),
                ]
            )
            throw DomainError(.invalidInput, .invalidSignature, error.message, field: "Stripe-Signature")
        }
        guard let event = StripeEvent.decode(body) else {
            throw DomainError(.invalidInput, .invalidJson, "the body is not a Stripe event")
        }
        let hash = Self.hash(body)
        let tenant = runtime.tenant, emitsEvents = runtime.webhook != nil, environment = stripe.environment, settings = stripe.settings
        let record = PaymentEventRecord(
            tenantId: runtime.id,
            provider: CardPaymentRules.store.rawValue,
            eventId: event.id,
            type: event.type,
            objectId: event.data.object.id,
            created: Date(timeIntervalSince1970: TimeInterval(event.created)),
            livemode: event.livemode,
            receivedAt: now,
            outcome: "received",
            payloadHash: hash
        )
        let result = try await store.write { tx -> Result in
            guard try tx.cardPayments.recordEvent(record) else {
                let outcome =
                    try tx.cardPayments.eventOutcome(tenantId: record.tenantId, provider: record.provider, eventId: record.eventId) ?? "received"
                return Result(eventId: event.id, type: event.type, outcome: outcome, duplicate: true)
            }
            let settlement = CardPaymentSettlement(tenant: tenant, settings: settings, emitsEvents: emitsEvents, tx: tx, now: now)
            let outcome = try Self.apply(event, hash: hash, environment: environment, settlement: settlement)
            try tx.cardPayments.setEventOutcome(outcome, tenantId: record.tenantId, provider: record.provider, eventId: record.eventId)
            return Result(eventId: event.id, type: event.type, outcome: outcome, duplicate: false)
        }
        logger.info(
            "stripe event",
            metadata: [
                "tenant": .string(runtime.id), "event": .string(event.id), "type": .string(event.type),
                "outcome": .string(result.outcome), "duplicate": .string(String(result.duplicate)),
            ]
        )
        return result
    }

    static func apply(_ event: StripeEvent, hash: String, environment: StoreEnvironment, settlement: CardPaymentSettlement) throws -> String {
        let object = event.data.object
        guard event.livemode == (environment == .live) else { return "livemode_mismatch" }
        guard let paymentIntentId = object.paymentIntentId,
            var payment = try payment(for: object, paymentIntentId: paymentIntentId, settlement: settlement)
        else {
            return "unknown_payment"
        }
        let at = Date(timeIntervalSince1970: TimeInterval(event.created))
        if payment.lastEventAt.map({ at > $0 }) ?? true { payment.lastEventAt = at }
        switch event.type {
        case "payment_intent.succeeded":
            let facts = CardPaymentFacts(
                providerRef: paymentIntentId,
                amountMinor: object.amountReceived ?? object.amount ?? 0,
                currency: object.currency ?? "",
                livemode: event.livemode,
                metadata: object.metadata ?? [:],
                proofHash: hash,
                at: at
            )
            return try settlement.succeeded(&payment, facts: facts)
        case "payment_intent.amount_capturable_updated":
            return try settlement.authorized(&payment, amount: object.amount ?? payment.amountMinor, window: CardDeposits.captureWindow)
        case "payment_intent.payment_failed", "payment_intent.requires_action", "payment_intent.processing":
            return try settlement.attempted(&payment, providerStatus: object.status ?? "requires_payment_method")
        case "payment_intent.canceled":
            return try settlement.canceled(&payment)
        case "charge.refunded", "charge.refund.updated":
            guard let total = object.amountRefunded else { return "recorded" }
            // A refund an operator asked for keeps their words as the booking's reason, whichever of
            // Stripe's event and the refund job's answer arrives first; a refund made in Stripe's
            // dashboard is `card_refund`.
            let asked = try settlement.tx.cardPayments.refunds(paymentId: payment.id, tenantId: payment.tenantId).last {
                $0.initiatedBy == RefundInitiator.admin
            }
            return try settlement.refunded(&payment, total: total, reason: asked?.reason ?? "card_refund")
        case "charge.dispute.created", "charge.dispute.updated", "charge.dispute.closed", "charge.dispute.funds_withdrawn",
            "charge.dispute.funds_reinstated":
            guard let status = object.status, !status.isEmpty, status.utf8.count <= 40 else { return "recorded" }
            return try settlement.disputed(&payment, status: status)
        default:
            return "recorded"
        }
    }

    /// The payment of an event's object: by its PaymentIntent id, or (a PaymentIntent whose creation
    /// answer Berth never recorded) by the payment id Berth put in its metadata.
    static func payment(for object: StripeEventObject, paymentIntentId: String, settlement: CardPaymentSettlement) throws -> CardPayment? {
        let tx = settlement.tx, tenantId = settlement.tenant.id
        if let payment = try tx.lockedCardPayment({
            try tx.cardPayments.payment(provider: CardPaymentRules.store.rawValue, providerRef: paymentIntentId, tenantId: tenantId, forUpdate: $0)
        }) {
            return payment
        }
        guard let metadata = object.metadata, metadata["berth_tenant"] == tenantId, let id = metadata["berth_payment_id"].flatMap(Int64.init),
            var payment = try tx.lockedCardPayment({ try tx.cardPayments.payment(id: id, tenantId: tenantId, forUpdate: $0) }),
            payment.providerRef == nil,
            metadata["berth_booking_id"] == String(payment.bookingId)
        else { return nil }
        payment.providerRef = paymentIntentId
        if payment.status == .creating { payment.status = .open }
        payment.updatedAt = settlement.now
        try tx.cardPayments.update(payment)
        return payment
    }

    static func hash(_ body: Data) -> String {
        SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
    }
}

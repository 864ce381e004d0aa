import Foundation

/// A PaymentIntent as Stripe's API answers it (the fields Berth reads).
public struct StripePaymentIntent: Codable, Hashable, Sendable {
    public var id: String
    public var object: String?
    public var amount: Int64
    public var amountReceived: Int64?
    public var amountCapturable: Int64?
    public var currency: String
    /// `requires_payment_method`, `requires_confirmation`, `requires_action`, `processing`,
    /// `requires_capture`, `canceled` or `succeeded`.
    public var status: String
    public var clientSecret: String?
    public var livemode: Bool
    public var metadata: [String: String]?
    public var captureMethod: String?
    public var latestCharge: String?
    public var created: Int64?
    public var cancellationReason: String?

    enum CodingKeys: String, CodingKey {
        case id, object, amount, currency, status, livemode, metadata, created
        case amountReceived = "amount_received"
        case amountCapturable = "amount_capturable"
        case clientSecret = "client_secret"
        case captureMethod = "capture_method"
        case latestCharge = "latest_charge"
        case cancellationReason = "cancellation_reason"
    }

    public init(
        id: String,
        amount: Int64,
        currency: String,
        status: String,
        clientSecret: String?,
        livemode: Bool,
        metadata: [String: String]?,
        captureMethod: String? = "automatic",
        latestCharge: String? = nil,
        created: Int64? = nil,
        amountReceived: Int64? = nil
    ) {
        self.id = id
        self.object = "payment_intent"
        self.amount = amount
        self.currency = currency
        self.status = status
        self.clientSecret = clientSecret
        self.livemode = livemode
        self.metadata = metadata
        self.captureMethod = captureMethod
        self.latestCharge = latestCharge
        self.created = created
        self.amountReceived = amountReceived
    }
}

/// A Refund as Stripe's API answers it.
public struct StripeRefund: Codable, Hashable, Sendable {
    public var id: String
    public var object: String?
    public var amount: Int64
    public var currency: String?
    /// `pending`, `requires_action`, `succeeded`, `failed` or `canceled`.
    public var status: String
    public var paymentIntent: String?
    public var charge: String?
    public var reason: String?
    public var metadata: [String: String]?

    enum CodingKeys: String, CodingKey {
        case id, object, amount, currency, status, charge, reason, metadata
        case paymentIntent = "payment_intent"
    }

    public init(
        id: String,
        amount: Int64,
        currency: String?,
        status: String,
        paymentIntent: String?,
        charge: String?,
        reason: String?,
        metadata: [String: String]?
    ) {
        self.id = id
        self.object = "refund"
        self.amount = amount
        self.currency = currency
        self.status = status
        self.paymentIntent = paymentIntent
        self.charge = charge
        self.reason = reason
        self.metadata = metadata
    }
}

/// The object of a webhook event: a PaymentIntent, a Charge, a Refund or a Dispute. Only the fields
/// Berth reads, all optional but `id` (the `object` field says which it is).
public struct StripeEventObject: Codable, Hashable, Sendable {
    public var id: String
    public var object: String?
    public var amount: Int64?
    public var amountReceived: Int64?
    public var amountRefunded: Int64?
    public var currency: String?
    public var status: String?
    public var livemode: Bool?
    public var metadata: [String: String]?
    /// Charges, refunds and disputes name their PaymentIntent.
    public var paymentIntent: String?
    public var charge: String?
    public var refunded: Bool?

    enum CodingKeys: String, CodingKey {
        case id, object, amount, currency, status, livemode, metadata, charge, refunded
        case amountReceived = "amount_received"
        case amountRefunded = "amount_refunded"
        case paymentIntent = "payment_intent"
    }

    public init(
        id: String,
        object: String?,
        amount: Int64? = nil,
        amountReceived: Int64? = nil,
        amountRefunded: Int64? = nil,
        currency: String? = nil,
        status: String? = nil,
        livemode: Bool? = nil,
        metadata: [String: String]? = nil,
        paymentIntent: String? = nil,
        charge: String? = nil,
        refunded: Bool? = nil
    ) {
        self.id = id
        self.object = object
        self.amount = amount
        self.amountReceived = amountReceived
        self.amountRefunded = amountRefunded
        self.currency = currency
        self.status = status
        self.livemode = livemode
        self.metadata = metadata
        self.paymentIntent = paymentIntent
        self.charge = charge
        self.refunded = refunded
    }

    /// The PaymentIntent this object is or belongs to.
    public var paymentIntentId: String? { object == "payment_intent" ? id : paymentIntent }
}

/// A webhook event (`payment_intent.succeeded`, `charge.refunded`, …).
public struct StripeEvent: Codable, Hashable, Sendable {
    public struct Payload: Codable, Hashable, Sendable {
        public var object: StripeEventObject
        public init(object: StripeEventObject) { self.object = object }
    }

    public var id: String
    public var object: String?
    public var type: String
    /// Seconds since 1970 when Stripe created the event.
    public var created: Int64
    public var livemode: Bool
    public var data: Payload

    public init(id: String, type: String, created: Int64, livemode: Bool, object: StripeEventObject) {
        self.id = id
        self.object = "event"
        self.type = type
        self.created = created
        self.livemode = livemode
        self.data = Payload(object: object)
    }

    /// Decodes an event's body (already authenticated by its signature). Nil when it is not an event.
    public static func decode(_ body: Data) -> StripeEvent? {
        guard let event = try? JSONDecoder().decode(StripeEvent.self, from: body),
            !event.id.isEmpty, event.id.utf8.count <= 255, !event.type.isEmpty, event.type.utf8.count <= 100,
            !event.data.object.id.isEmpty, event.data.object.id.utf8.count <= 255
        else { return nil }
        return event
    }
}

/// Stripe's error body: `{"error": {"type", "code", "message", "param"}}`.
public struct StripeErrorBody: Codable, Hashable, Sendable {
    public struct Detail: Codable, Hashable, Sendable {
        public var type: String
        public var code: String?
        public var message: String?
        public var param: String?

        public init(type: String, code: String? = nil, message: String? = nil, param: String? = nil) {
            self.type = type
            self.code = code
            self.message = message
            self.param = param
        }
    }
    public var error: Detail

    public init(error: Detail) { self.error = error }
}

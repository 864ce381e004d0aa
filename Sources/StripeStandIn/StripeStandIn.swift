import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import StripeAPI
import Synchronization

/// A local HTTP server that plays Stripe for tests and integrators' CI (Stripe cannot be reached from
/// test machines): PaymentIntents (create, read, cancel, capture), refunds, idempotency keys and
/// Stripe's error shape, plus test controls (`/_standin/…`) that settle a payment and send its
/// webhooks, signed as Stripe signs them, to a URL: once, twice, out of order, tampered or stale.
/// Mount `router()` on a Hummingbird application on 127.0.0.1.
public final class StripeStandIn: Sendable {
    /// One API request as received (to count refunds, check idempotency keys…).
    public struct Recorded: Sendable, Codable {
        public var method: String
        public var path: String
        public var idempotencyKey: String?
        public var status: Int
    }

    /// One webhook delivery: the event, and what the receiver answered (nil: no answer).
    public struct Delivery: Sendable, Codable {
        public var eventId: String
        public var type: String
        public var status: Int?
        public var note: String?
    }

    /// How a control sends its events.
    public struct Sending: Sendable {
        /// Each event twice.
        public var duplicate = false
        /// Also an older `payment_intent.payment_failed` (a declined first attempt), delivered after the success.
        public var outOfOrder = false
        /// The body changed after signing.
        public var tamper = false
        /// Signed ten minutes ago.
        public var stale = false
        public init(duplicate: Bool = false, outOfOrder: Bool = false, tamper: Bool = false, stale: Bool = false) {
            self.duplicate = duplicate
            self.outOfOrder = outOfOrder
            self.tamper = tamper
            self.stale = stale
        }
    }

    struct Idempotent: Sendable {
        var fingerprint: String
        var status: Int
        var body: String
    }

    public struct State: Sendable {
        public var intents: [String: StripePaymentIntent] = [:]
        /// Refunds in the order they were made.
        public var refunds: [StripeRefund] = []
        public var requests: [Recorded] = []
        public var deliveries: [Delivery] = []
        /// Where webhooks go, and the secrets they are signed with (one `v1` each).
        public var webhookURL: String?
        public var webhookSecrets: [String]
        /// The next API answers forced, in order: a status, and whether the request is applied before it (a lost answer).
        public var faults: [(status: Int, applied: Bool)] = []
        var idempotency: [String: Idempotent] = [:]
        var sequence = 0
    }

    public let secretKey: String
    public let state: Mutex<State>
    let client: HTTPClient
    /// The time events are created and signed at (tests that move Berth's clock move this one too).
    let now: @Sendable () -> Date

    public init(
        secretKey: String = "sk_test_berth_standin",
        webhookURL: String? = nil,
        webhookSecrets: [String] = [],
        httpClient: HTTPClient = .shared,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.secretKey = secretKey
        state = Mutex(State(webhookURL: webhookURL, webhookSecrets: webhookSecrets))
        client = httpClient
        self.now = now
    }

    public var refunds: [StripeRefund] { state.withLock { $0.refunds } }
    func seconds() -> Int64 { Int64(now().timeIntervalSince1970) }
    public var requests: [Recorded] { state.withLock { $0.requests } }
    public func intent(_ id: String) -> StripePaymentIntent? { state.withLock { $0.intents[id] } }

    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/v1/payment_intents") { request, context in
            try await self.api(request, context) { state, form in try Self.create(&state, form, at: self.seconds()) }
        }
        router.get("/v1/payment_intents/{id}") { request, context in
            try await self.api(request, context) { state, _ in try Self.existing(state, context.parameters.get("id")) }
        }
        router.post("/v1/payment_intents/{id}/cancel") { request, context in
            try await self.api(request, context) { state, _ in try Self.cancel(&state, context.parameters.get("id"), at: self.seconds()) }
        }
        router.post("/v1/payment_intents/{id}/capture") { request, context in
            try await self.api(request, context) { state, form in try Self.capture(&state, context.parameters.get("id"), form, at: self.seconds()) }
        }
        router.post("/v1/payment_intents/{id}/confirm") { request, context in
            try await self.api(request, context) { state, form in try Self.confirm(&state, context.parameters.get("id"), form, at: self.seconds()) }
        }
        router.post("/v1/refunds") { request, context in
            try await self.api(request, context) { state, form in try Self.refund(&state, form, at: self.seconds()) }
        }

        router.post("/_standin/payment_intents/{id}/succeed") { request, context in
            try await self.control(request, context.parameters.get("id") ?? "") { try await self.succeed($0, sending: $1) }
        }
        router.post("/_standin/payment_intents/{id}/fail") { request, context in
            try await self.control(request, context.parameters.get("id") ?? "") { try await self.fail($0, sending: $1) }
        }
        router.post("/_standin/payment_intents/{id}/dispute") { request, context in
            let status = request.uri.queryParameters["status"].map(String.init) ?? "needs_response"
            return try await self.control(request, context.parameters.get("id") ?? "") { try await self.dispute($0, status: status, sending: $1) }
        }
        router.post("/_standin/webhook-url") { request, _ in
            // Where the next events go (a test moves it between instances, or away to lose them).
            let url = request.uri.queryParameters["url"].map(String.init)
            self.state.withLock { $0.webhookURL = url }
            return try Self.json(["webhookURL": url ?? ""])
        }
        router.get("/_standin/refunds") { _, _ in try Self.json(self.refunds) }
        router.get("/_standin/payment_intents") { _, _ in try Self.json(self.state.withLock { Array($0.intents.values) }.sorted { $0.id < $1.id }) }
        router.get("/_standin/requests") { _, _ in try Self.json(self.requests) }
        router.get("/_standin/deliveries") { _, _ in try Self.json(self.state.withLock { $0.deliveries }) }
        return router
    }

    // MARK: - Test controls

    /// The payment succeeds (the card was charged): `payment_intent.succeeded` is sent.
    public func succeed(_ id: String, sending: Sending = Sending()) async throws -> [Delivery] {
        let (succeeded, failed) = try state.withLock { state throws(StandInFailure) -> (StripeEvent, StripeEvent?) in
            guard var intent = state.intents[id] else { throw StandInFailure(404, "no PaymentIntent \(id)") }
            guard ["requires_payment_method", "requires_confirmation", "requires_action", "processing"].contains(intent.status) else {
                throw StandInFailure(409, "PaymentIntent \(id) is \(intent.status)")
            }
            let now = Int64(self.now().timeIntervalSince1970)
            var failedEvent: StripeEvent?
            if sending.outOfOrder {
                var declined = intent
                declined.status = "requires_payment_method"
                failedEvent = Self.event(&state, "payment_intent.payment_failed", declined, created: now - 30)
            }
            intent.status = intent.captureMethod == "manual" ? "requires_capture" : "succeeded"
            intent.amountReceived = intent.captureMethod == "manual" ? 0 : intent.amount
            intent.amountCapturable = intent.captureMethod == "manual" ? intent.amount : 0
            intent.latestCharge = "ch_" + String(id.dropFirst(3))
            state.intents[id] = intent
            let type = intent.captureMethod == "manual" ? "payment_intent.amount_capturable_updated" : "payment_intent.succeeded"
            return (Self.event(&state, type, intent, created: now), failedEvent)
        }
        var events = [succeeded]
        if let failed { events.append(failed) }
        return await deliver(events, sending: sending)
    }

    /// The card is declined: `payment_intent.payment_failed` (the PaymentIntent can be paid again).
    public func fail(_ id: String, sending: Sending = Sending()) async throws -> [Delivery] {
        let event = try state.withLock { state throws(StandInFailure) -> StripeEvent in
            guard var intent = state.intents[id] else { throw StandInFailure(404, "no PaymentIntent \(id)") }
            guard intent.status != "succeeded", intent.status != "canceled" else {
                throw StandInFailure(409, "PaymentIntent \(id) is \(intent.status)")
            }
            intent.status = "requires_payment_method"
            state.intents[id] = intent
            return Self.event(&state, "payment_intent.payment_failed", intent, created: Int64(self.now().timeIntervalSince1970))
        }
        return await deliver([event], sending: sending)
    }

    /// The cardholder disputes the charge: `charge.dispute.created`, or `charge.dispute.closed` with `won`/`lost`.
    public func dispute(_ id: String, status: String, sending: Sending = Sending()) async throws -> [Delivery] {
        let event = try state.withLock { state throws(StandInFailure) -> StripeEvent in
            guard let intent = state.intents[id], intent.status == "succeeded" else { throw StandInFailure(409, "PaymentIntent \(id) is not paid") }
            state.sequence += 1
            let dispute = StripeEventObject(
                id: "dp_\(state.sequence)\(id.suffix(8))",
                object: "dispute",
                amount: intent.amount,
                currency: intent.currency,
                status: status,
                livemode: false,
                paymentIntent: id,
                charge: intent.latestCharge
            )
            let type = ["won", "lost", "warning_closed"].contains(status) ? "charge.dispute.closed" : "charge.dispute.created"
            return Self.event(&state, type, object: dispute, created: Int64(self.now().timeIntervalSince1970))
        }
        return await deliver([event], sending: sending)
    }

    // MARK: - API

    struct StandInFailure: Error {
        var status: Int
        var type = "invalid_request_error"
        var code: String?
        var message: String
        init(_ status: Int, _ message: String, type: String = "invalid_request_error", code: String? = nil) {
            self.status = status
            self.message = message
            self.type = type
            self.code = code
        }
    }

    /// What an API call answers, and the events it sends afterwards.
    struct Answer {
        var body: any Encodable
        var events: [StripeEvent] = []
    }

    private func api(
        _ request: Request,
        _ context: BasicRequestContext,
        _ handle: @escaping @Sendable (inout State, [(String, String)]) throws -> Answer
    ) async throws -> Response {
        let method = request.method.rawValue, path = request.uri.path
        let key = request.headers[.init("Idempotency-Key")!]
        let text = String(buffer: try await request.body.collect(upTo: 1 << 20))
        guard request.headers[.authorization] == "Bearer \(secretKey)" else {
            return record(method, path, key, Self.failure(StandInFailure(401, "Invalid API Key provided")))
        }
        guard let form = FormEncoding.decode(text) else {
            return record(method, path, key, Self.failure(StandInFailure(400, "the body is not a form")))
        }
        let fingerprint = method + " " + path + " " + form.map { "\($0.0)=\($0.1)" }.sorted().joined(separator: "&")
        var events: [StripeEvent] = []
        let answer: (Int, String) = state.withLock { state in
            if let key, method == "POST", let saved = state.idempotency[key] {
                guard saved.fingerprint == fingerprint else {
                    return Self.failure(
                        StandInFailure(
                            400,
                            "Keys for idempotent requests can only be used with the same parameters they were first used with.",
                            type: "idempotency_error"
                        )
                    )
                }
                return (saved.status, saved.body)
            }
            var fault: (status: Int, applied: Bool)?
            if !state.faults.isEmpty { fault = state.faults.removeFirst() }
            if let fault, !fault.applied { return Self.failure(StandInFailure(fault.status, "forced failure", type: "api_error")) }
            var result: (Int, String)
            do {
                let answer = try handle(&state, form)
                result = (200, Self.encode(answer.body))
                events = answer.events
            } catch {
                result = Self.failure(error as? StandInFailure ?? StandInFailure(500, "\(error)", type: "api_error"))
            }
            if let key, method == "POST" { state.idempotency[key] = Idempotent(fingerprint: fingerprint, status: result.0, body: result.1) }
            // A lost answer: the request was applied, the caller sees a failure.
            if let fault { return Self.failure(StandInFailure(fault.status, "forced failure after applying", type: "api_error")) }
            return result
        }
        if !events.isEmpty {
            // Stripe sends events on its own time, after the answer.
            Task { _ = await self.deliver(events, sending: Sending()) }
        }
        return record(method, path, key, answer)
    }

    private func record(_ method: String, _ path: String, _ key: String?, _ answer: (Int, String)) -> Response {
        state.withLock { $0.requests.append(Recorded(method: method, path: path, idempotencyKey: key, status: answer.0)) }
        var response = Response(status: .init(code: answer.0), body: .init(byteBuffer: ByteBuffer(string: answer.1)))
        response.headers[.contentType] = "application/json"
        return response
    }

    private func control(_ request: Request, _ id: String, _ run: (String, Sending) async throws -> [Delivery]) async throws -> Response {
        let query = request.uri.queryParameters
        func flag(_ name: String) -> Bool { query[name[...]].map { $0 == "1" || $0 == "true" } ?? false }
        let sending = Sending(duplicate: flag("duplicate"), outOfOrder: flag("out_of_order"), tamper: flag("tamper"), stale: flag("stale"))
        do {
            let deliveries = try await run(id, sending)
            return try Self.json(ControlAnswer(intent: intent(id), deliveries: deliveries))
        } catch let failure as StandInFailure {
            let (status, body) = Self.failure(failure)
            return Response(
                status: .init(code: status),
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: body))
            )
        }
    }

    struct ControlAnswer: Encodable {
        var intent: StripePaymentIntent?
        var deliveries: [Delivery]
    }

    static func create(_ state: inout State, _ form: [(String, String)], at now: Int64) throws(StandInFailure) -> Answer {
        let fields = Dictionary(form, uniquingKeysWith: { $1 })
        guard let amountText = fields["amount"], let amount = Int64(amountText), amount >= 1, amount <= 99_999_999 else {
            throw StandInFailure(400, "Invalid positive integer", code: "parameter_invalid_integer")
        }
        guard let currency = fields["currency"], currency.count == 3 else {
            throw StandInFailure(400, "Missing required param: currency.", code: "parameter_missing")
        }
        let captureMethod = fields["capture_method"] ?? "automatic"
        guard ["automatic", "automatic_async", "manual"].contains(captureMethod) else {
            throw StandInFailure(400, "Invalid capture_method", code: "parameter_invalid")
        }
        var metadata: [String: String] = [:]
        for (key, value) in form where key.hasPrefix("metadata[") && key.hasSuffix("]") {
            metadata[String(key.dropFirst(9).dropLast())] = value
        }
        state.sequence += 1
        let id = "pi_" + Self.randomId()
        let intent = StripePaymentIntent(
            id: id,
            amount: amount,
            currency: currency.lowercased(),
            status: "requires_payment_method",
            clientSecret: id + "_secret_" + Self.randomId(),
            livemode: false,
            metadata: metadata,
            captureMethod: captureMethod,
            created: now,
            amountReceived: 0
        )
        state.intents[id] = intent
        return Answer(body: intent)
    }

    static func existing(_ state: State, _ id: String?) throws(StandInFailure) -> Answer {
        guard let id, let intent = state.intents[id] else {
            throw StandInFailure(404, "No such payment_intent: '\(id ?? "")'", code: "resource_missing")
        }
        return Answer(body: intent)
    }

    static func cancel(_ state: inout State, _ id: String?, at now: Int64) throws(StandInFailure) -> Answer {
        guard let id, var intent = state.intents[id] else {
            throw StandInFailure(404, "No such payment_intent: '\(id ?? "")'", code: "resource_missing")
        }
        guard !["succeeded", "canceled", "processing"].contains(intent.status) else {
            throw StandInFailure(
                400,
                "You cannot cancel this PaymentIntent because it has a status of \(intent.status).",
                code: "payment_intent_unexpected_state"
            )
        }
        intent.status = "canceled"
        intent.cancellationReason = "abandoned"
        state.intents[id] = intent
        return Answer(body: intent, events: [event(&state, "payment_intent.canceled", intent, created: now)])
    }

    static func capture(_ state: inout State, _ id: String?, _ form: [(String, String)], at now: Int64) throws(StandInFailure) -> Answer {
        guard let id, var intent = state.intents[id] else {
            throw StandInFailure(404, "No such payment_intent: '\(id ?? "")'", code: "resource_missing")
        }
        guard intent.status == "requires_capture" else {
            throw StandInFailure(
                400,
                "This PaymentIntent could not be captured because it has a status of \(intent.status).",
                code: "payment_intent_unexpected_state"
            )
        }
        let fields = Dictionary(form, uniquingKeysWith: { $1 })
        let amount = fields["amount_to_capture"].flatMap { Int64($0) } ?? intent.amount
        guard amount >= 1, amount <= intent.amount else {
            throw StandInFailure(400, "amount_to_capture exceeds the authorized amount", code: "amount_too_large")
        }
        intent.status = "succeeded"
        intent.amountReceived = amount
        intent.amountCapturable = 0
        state.intents[id] = intent
        return Answer(body: intent, events: [event(&state, "payment_intent.succeeded", intent, created: now)])
    }

    /// Confirms with a test payment method: `pm_card_visa` (and any other) succeeds, `pm_card_chargeDeclined` fails.
    static func confirm(_ state: inout State, _ id: String?, _ form: [(String, String)], at now: Int64) throws(StandInFailure) -> Answer {
        guard let id, var intent = state.intents[id] else {
            throw StandInFailure(404, "No such payment_intent: '\(id ?? "")'", code: "resource_missing")
        }
        guard ["requires_payment_method", "requires_confirmation", "requires_action"].contains(intent.status) else {
            throw StandInFailure(
                400,
                "You cannot confirm this PaymentIntent because it has a status of \(intent.status).",
                code: "payment_intent_unexpected_state"
            )
        }
        let method = Dictionary(form, uniquingKeysWith: { $1 })["payment_method"] ?? "pm_card_visa"
        if method == "pm_card_chargeDeclined" {
            intent.status = "requires_payment_method"
            state.intents[id] = intent
            return Answer(body: intent, events: [event(&state, "payment_intent.payment_failed", intent, created: now)])
        }
        intent.status = intent.captureMethod == "manual" ? "requires_capture" : "succeeded"
        intent.amountReceived = intent.captureMethod == "manual" ? 0 : intent.amount
        intent.latestCharge = "ch_" + String(id.dropFirst(3))
        state.intents[id] = intent
        let type = intent.captureMethod == "manual" ? "payment_intent.amount_capturable_updated" : "payment_intent.succeeded"
        return Answer(body: intent, events: [event(&state, type, intent, created: now)])
    }

    static func refund(_ state: inout State, _ form: [(String, String)], at now: Int64) throws(StandInFailure) -> Answer {
        let fields = Dictionary(form, uniquingKeysWith: { $1 })
        guard let id = fields["payment_intent"], let intent = state.intents[id] else {
            throw StandInFailure(404, "No such payment_intent: '\(fields["payment_intent"] ?? "")'", code: "resource_missing")
        }
        guard intent.status == "succeeded", let received = intent.amountReceived, received > 0 else {
            throw StandInFailure(400, "This PaymentIntent does not have a successful charge to refund.", code: "charge_not_refundable")
        }
        let refunded = state.refunds.filter { $0.paymentIntent == id && $0.status != "failed" && $0.status != "canceled" }.reduce(Int64(0)) {
            $0 + $1.amount
        }
        let remaining = received - refunded
        guard remaining > 0 else {
            throw StandInFailure(400, "Charge \(intent.latestCharge ?? "") has already been refunded.", code: "charge_already_refunded")
        }
        let amount = fields["amount"].flatMap { Int64($0) } ?? remaining
        guard amount >= 1, amount <= remaining else {
            throw StandInFailure(
                400,
                "Refund amount (\(amount)) is greater than unrefunded amount on charge (\(remaining))",
                code: "amount_too_large"
            )
        }
        var metadata: [String: String] = [:]
        for (key, value) in form where key.hasPrefix("metadata[") && key.hasSuffix("]") { metadata[String(key.dropFirst(9).dropLast())] = value }
        let refund = StripeRefund(
            id: "re_" + randomId(),
            amount: amount,
            currency: intent.currency,
            status: "succeeded",
            paymentIntent: id,
            charge: intent.latestCharge,
            reason: fields["reason"],
            metadata: metadata
        )
        state.refunds.append(refund)
        let charge = StripeEventObject(
            id: intent.latestCharge ?? "ch_unknown",
            object: "charge",
            amount: received,
            amountRefunded: refunded + amount,
            currency: intent.currency,
            status: "succeeded",
            livemode: false,
            paymentIntent: id,
            refunded: refunded + amount == received
        )
        return Answer(body: refund, events: [event(&state, "charge.refunded", object: charge, created: now)])
    }

    // MARK: - Events

    static func event(_ state: inout State, _ type: String, _ intent: StripePaymentIntent, created: Int64) -> StripeEvent {
        let object = StripeEventObject(
            id: intent.id,
            object: "payment_intent",
            amount: intent.amount,
            amountReceived: intent.amountReceived,
            currency: intent.currency,
            status: intent.status,
            livemode: intent.livemode,
            metadata: intent.metadata
        )
        return event(&state, type, object: object, created: created)
    }

    static func event(_ state: inout State, _ type: String, object: StripeEventObject, created: Int64) -> StripeEvent {
        state.sequence += 1
        return StripeEvent(id: "evt_" + randomId(), type: type, created: created, livemode: false, object: object)
    }

    /// Sends each event to the webhook URL, signed, as `sending` says; waits for each answer.
    public func deliver(_ events: [StripeEvent], sending: Sending) async -> [Delivery] {
        let (url, secrets) = state.withLock { ($0.webhookURL, $0.webhookSecrets) }
        var deliveries: [Delivery] = []
        var queue: [StripeEvent] = []
        for event in events { queue += sending.duplicate ? [event, event] : [event] }
        for event in queue {
            var delivery = Delivery(eventId: event.id, type: event.type, status: nil)
            if let url {
                var body = Self.encode(event)
                let timestamp = Int64(self.now().timeIntervalSince1970) - (sending.stale ? 600 : 0)
                let header = StripeSignature.header(payload: Data(body.utf8), secrets: secrets, timestamp: timestamp)
                if sending.tamper { body = body.replacingOccurrences(of: "\"amount\":", with: "\"amount\":1") }
                var request = HTTPClientRequest(url: url)
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
                request.headers.add(name: "Stripe-Signature", value: header)
                request.body = .bytes(ByteBuffer(string: body))
                do {
                    let response = try await client.execute(request, timeout: .seconds(15))
                    delivery.status = Int(response.status.code)
                    let answer = try await response.body.collect(upTo: 64 * 1024)
                    delivery.note = String(buffer: answer)
                } catch {
                    delivery.note = "not delivered: \(error)"
                }
            } else {
                delivery.note = "no webhook URL"
            }
            deliveries.append(delivery)
        }
        state.withLock { $0.deliveries += deliveries }
        return deliveries
    }

    // MARK: - Encoding

    static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    static func json(_ value: some Encodable) throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: encode(value))))
    }

    static func failure(_ failure: StandInFailure) -> (Int, String) {
        (failure.status, encode(StripeErrorBody(error: .init(type: failure.type, code: failure.code, message: failure.message))))
    }

    static func randomId() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<24).map { _ in alphabet.randomElement() ?? "A" })
    }
}

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OutboundHTTP

/// A failure talking to Stripe: its error body when it answered one, else the transport's.
public struct StripeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stripe's HTTP status; nil when no answer came.
    public var status: Int?
    /// Stripe's error type (`invalid_request_error`, `idempotency_error`, `api_error`, …) or `network`.
    public var type: String
    /// Stripe's error code (`payment_intent_unexpected_state`, `resource_missing`, …).
    public var code: String?
    public var message: String

    public init(status: Int?, type: String, code: String? = nil, message: String) {
        self.status = status
        self.type = type
        self.code = code
        self.message = message
    }

    /// Worth trying again later (no answer, 429 or 5xx); a 4xx is Stripe's final word.
    public var isTransient: Bool {
        guard let status else { return true }
        return status == 429 || status >= 500 || type == "idempotency_error" && code == "idempotency_key_in_use"
    }

    public var description: String { "stripe \(status.map(String.init) ?? "-") \(type)\(code.map { " \($0)" } ?? ""): \(message)" }
}

/// Stripe's REST API for what Berth does with a payment: PaymentIntents (create, read, cancel,
/// capture) and refunds. Every write carries an `Idempotency-Key`, so that a retry after a lost
/// answer changes nothing twice. The base URL is configuration (tests point it at the stand-in).
public struct StripeClient: Sendable {
    public let apiBase: String
    let secretKey: String
    let apiVersion: String?
    let httpClient: HTTPClient
    let timeout: TimeAmount

    public init(apiBase: String, secretKey: String, apiVersion: String? = nil, httpClient: HTTPClient, timeout: TimeAmount = .seconds(10)) {
        self.apiBase = apiBase.hasSuffix("/") ? String(apiBase.dropLast()) : apiBase
        self.secretKey = secretKey
        self.apiVersion = apiVersion
        self.httpClient = httpClient
        self.timeout = timeout
    }

    /// Whether the secret key is a live-mode one (`sk_live_…`, `rk_live_…`).
    public var livemode: Bool { secretKey.hasPrefix("sk_live_") || secretKey.hasPrefix("rk_live_") }

    public func createPaymentIntent(
        amount: Int64,
        currency: String,
        metadata: [String: String],
        captureMethod: String = "automatic",
        idempotencyKey: String
    ) async throws(StripeError) -> StripePaymentIntent {
        var form: [(String, String)] = [
            ("amount", String(amount)), ("currency", currency.lowercased()),
            ("automatic_payment_methods[enabled]", "true"), ("capture_method", captureMethod),
        ]
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) { form.append(("metadata[\(key)]", value)) }
        return try await send(.POST, "/v1/payment_intents", form: form, idempotencyKey: idempotencyKey)
    }

    public func paymentIntent(id: String) async throws(StripeError) -> StripePaymentIntent {
        try await send(.GET, "/v1/payment_intents/\(try Self.pathComponent(id))", form: nil, idempotencyKey: nil)
    }

    public func cancelPaymentIntent(id: String, reason: String = "abandoned", idempotencyKey: String) async throws(StripeError) -> StripePaymentIntent
    {
        try await send(
            .POST,
            "/v1/payment_intents/\(try Self.pathComponent(id))/cancel",
            form: [("cancellation_reason", reason)],
            idempotencyKey: idempotencyKey
        )
    }

    public func capturePaymentIntent(id: String, amount: Int64?, idempotencyKey: String) async throws(StripeError) -> StripePaymentIntent {
        try await send(
            .POST,
            "/v1/payment_intents/\(try Self.pathComponent(id))/capture",
            form: amount.map { [("amount_to_capture", String($0))] } ?? [],
            idempotencyKey: idempotencyKey
        )
    }

    /// Refunds `amount` (nil: what is left) of a PaymentIntent.
    public func createRefund(
        paymentIntent: String,
        amount: Int64?,
        reason: String?,
        metadata: [String: String],
        idempotencyKey: String
    ) async throws(StripeError) -> StripeRefund {
        var form: [(String, String)] = [("payment_intent", paymentIntent)]
        if let amount { form.append(("amount", String(amount))) }
        if let reason { form.append(("reason", reason)) }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) { form.append(("metadata[\(key)]", value)) }
        return try await send(.POST, "/v1/refunds", form: form, idempotencyKey: idempotencyKey)
    }

    static func pathComponent(_ id: String) throws(StripeError) -> String {
        guard !id.isEmpty, id.utf8.count <= 255, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw StripeError(status: nil, type: "invalid_request_error", code: "invalid_id", message: "not a Stripe object id")
        }
        return id
    }

    private func send<T: Decodable>(
        _ method: HTTPMethod,
        _ path: String,
        form: [(String, String)]?,
        idempotencyKey: String?
    ) async throws(StripeError) -> T {
        var request = HTTPClientRequest(url: apiBase + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(secretKey)")
        request.headers.add(name: "User-Agent", value: "Berth")
        if let apiVersion { request.headers.add(name: "Stripe-Version", value: apiVersion) }
        if let idempotencyKey { request.headers.add(name: "Idempotency-Key", value: idempotencyKey) }
        if let form {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: FormEncoding.encode(form)))
        }
        let status: Int, body: Data
        do {
            let response = try await httpClient.execute(request, timeout: timeout)
            status = Int(response.status.code)
            body = Data((try await response.body.collect(upTo: 1 << 20)).readableBytesView)
        } catch {
            throw StripeError(status: nil, type: "network", message: "Stripe could not be reached: \(TransportFailure.describe(error))")
        }
        guard (200..<300).contains(status) else {
            if let failure = try? JSONDecoder().decode(StripeErrorBody.self, from: body) {
                throw StripeError(
                    status: status,
                    type: failure.error.type,
                    code: failure.error.code,
                    message: failure.error.message ?? "Stripe answered \(status)"
                )
            }
            throw StripeError(status: status, type: status >= 500 ? "api_error" : "invalid_request_error", message: "Stripe answered \(status)")
        }
        do {
            return try JSONDecoder().decode(T.self, from: body)
        } catch {
            throw StripeError(status: status, type: "api_error", code: "unreadable_answer", message: "Stripe's answer could not be read: \(error)")
        }
    }
}

/// `application/x-www-form-urlencoded`, as Stripe's API takes its parameters (bracketed keys for
/// nested ones: `metadata[booking_id]=42`).
public enum FormEncoding {
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    public static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// Decodes a form body into its pairs, in order (`+` is a space). Nil when it is not a form.
    public static func decode(_ body: String) -> [(String, String)]? {
        var pairs: [(String, String)] = []
        for item in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func unescape(_ part: Substring) -> String? { String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let key = unescape(parts[0]), let value = parts.count > 1 ? unescape(parts[1]) : "" else { return nil }
            pairs.append((key, value))
        }
        return pairs
    }
}

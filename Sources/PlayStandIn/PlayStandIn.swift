import Crypto
import Foundation
import GooglePlayAPI
import Hummingbird
import NIOCore
import NIOFoundationCompat
import Synchronization
import _CryptoExtras

/// A local HTTP server that plays Google for Berth's tests and integrators' CI (Google cannot be
/// reached from test machines): the OAuth2 token endpoint (it checks the service account's RS256
/// assertion), the Play Developer API's one-time product and subscription reads, acknowledge,
/// consume and voided purchases, and the JWKS that publishes the push-token key. Purchases live in
/// the TestKit directory (``PlayTestKit``). Test controls: `POST /_standin/fail?call=…&count=N`
/// makes the next N calls of a kind fail with 503; `GET /_standin/purchases/{token}` shows a
/// purchase with its acknowledge and consume counts. Serve `router()` on 127.0.0.1.
public final class PlayStandIn: Sendable {
    public let kit: PlayTestKit
    struct State {
        var tokens: [String: Date] = [:]
        /// Calls of a kind (`token`, `get`, `acknowledge`, `consume`, `voided`) still to fail.
        var failures: [String: (count: Int, status: Int)] = [:]
        var calls: [String: Int] = [:]
        var omitPurchaseState = false
    }

    private let state = Mutex(State())
    /// Serialises changes to the purchase files.
    private let files = Mutex(())

    public init(kit: PlayTestKit) {
        self.kit = kit
    }

    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/token") { request, _ in try await self.token(request) }
        router.get("/oauth2/v3/certs") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "public, max-age=60"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: try self.kit.jwks())))
        }
        router.get("/androidpublisher/v3/applications/**") { request, _ in try await self.api(request) }
        router.post("/androidpublisher/v3/applications/**") { request, _ in try await self.api(request) }
        router.post("/_standin/fail") { request, _ in
            let call = request.uri.queryParameters["call"].map(String.init) ?? "acknowledge"
            let count = request.uri.queryParameters["count"].flatMap { Int($0) } ?? 1
            let status = request.uri.queryParameters["status"].flatMap { Int($0) } ?? 503
            self.state.withLock { $0.failures[call] = (count, status) }
            return Self.json(["call": .string(call), "count": .number(Double(count)), "status": .number(Double(status))])
        }
        router.get("/_standin/purchases/{token}") { _, context in
            guard let record = self.kit.record(context.parameters.get("token") ?? "") else {
                return Self.failure(404, "notFound", "no such purchase")
            }
            return Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(data: try PlayTestKit.encoder.encode(record)))
            )
        }
        router.get("/_standin/calls") { _, _ in
            Self.json(.object(self.state.withLock { $0.calls }.mapValues { .number(Double($0)) }))
        }
        return router
    }

    /// Makes the next `count` calls of `call` fail with `status` (a test's "Google is down").
    public func fail(_ call: String, count: Int, status: Int = 503) {
        state.withLock { $0.failures[call] = (count, status) }
    }

    /// Test control: one-time purchases are answered without `purchaseState` (an answer Berth must
    /// not read as paid).
    public var omitPurchaseState: Bool {
        get { state.withLock { $0.omitPurchaseState } }
        set { state.withLock { $0.omitPurchaseState = newValue } }
    }

    /// Calls of the Play Developer API answered so far (every kind).
    public var requestCount: Int { state.withLock { $0.calls.values.reduce(0, +) } }

    private func failing(_ call: String) -> Response? {
        state.withLock { state in
            state.calls[call, default: 0] += 1
            guard let failure = state.failures[call], failure.count > 0 else { return nil }
            state.failures[call] = (failure.count - 1, failure.status)
            return Self.failure(failure.status, "backendError", "the stand-in was told to fail this call")
        }
    }

    // MARK: Token endpoint

    private func token(_ request: Request) async throws -> Response {
        if let failure = failing("token") { return failure }
        let body = String(buffer: try await request.body.collect(upTo: 64 * 1024))
        var form: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = form["assertion"] else {
            return Self.tokenFailure("unsupported_grant_type", "only the JWT-bearer grant")
        }
        guard let parts = RS256JWT.parts(assertion), parts.verified(by: kit.account.privateKey.publicKey) else {
            return Self.tokenFailure("invalid_grant", "Invalid JWT Signature.")
        }
        let now = Date().timeIntervalSince1970
        guard parts.claims["iss"]?.string == kit.account.clientEmail else { return Self.tokenFailure("invalid_grant", "Invalid issuer") }
        guard parts.claims["scope"]?.string?.split(separator: " ").contains(Substring(PlayClient.scope)) == true else {
            return Self.tokenFailure("invalid_scope", "the androidpublisher scope is required")
        }
        guard let aud = parts.claims["aud"]?.string, aud.hasSuffix("/token") else {
            return Self.tokenFailure("invalid_grant", "Invalid JWT audience")
        }
        guard let iat = parts.claims["iat"]?.number, let exp = parts.claims["exp"]?.number, exp > now, iat <= now + 60, exp - iat <= 3600 else {
            return Self.tokenFailure("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        let token = "ya29.standin-" + (0..<40).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement() ?? "a") }.joined()
        state.withLock { $0.tokens[token] = Date().addingTimeInterval(3600) }
        return Self.json(["access_token": .string(token), "expires_in": .number(3599), "token_type": .string("Bearer")])
    }

    // MARK: Play Developer API

    private func api(_ request: Request) async throws -> Response {
        let authorization = request.headers[.authorization] ?? ""
        let bearer = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : ""
        let authorized = state.withLock { state in state.tokens[bearer].map { $0 > Date() } ?? false }
        guard authorized else { return Self.failure(401, "authError", "Request had invalid authentication credentials.") }
        let prefix = "/androidpublisher/v3/applications/"
        let path = request.uri.path
        guard path.hasPrefix(prefix) else { return Self.failure(404, "notFound", "no such call") }
        let segments = path.dropFirst(prefix.count).split(separator: "/").map(String.init)
        guard segments.count >= 3, segments[1] == "purchases" else { return Self.failure(404, "notFound", "no such call") }
        let package = segments[0]
        switch (request.method, Array(segments.dropFirst(2))) {
        case (.get, let rest) where rest.count == 4 && rest[0] == "products" && rest[2] == "tokens":
            if let failure = failing("get") { return failure }
            guard let record = kit.record(rest[3]), record.package == package, record.productId == rest[1], !record.subscription else {
                return Self.notFound()
            }
            var answer = Self.product(record)
            if omitPurchaseState { answer.purchaseState = nil }
            return try Self.encoded(answer)
        case (.get, let rest) where rest.count == 3 && rest[0] == "subscriptionsv2" && rest[1] == "tokens":
            if let failure = failing("get") { return failure }
            guard let record = kit.record(rest[2]), record.package == package, record.subscription else { return Self.notFound() }
            return try Self.encoded(Self.subscription(record))
        case (.post, let rest) where rest.count == 4 && (rest[0] == "products" || rest[0] == "subscriptions") && rest[2] == "tokens":
            let (token, action) = Self.split(rest[3])
            guard action == "acknowledge" || (action == "consume" && rest[0] == "products") else {
                return Self.failure(404, "notFound", "no such call")
            }
            if let failure = failing(action) { return failure }
            return try files.withLock { _ in
                guard var record = kit.record(token), record.package == package, record.productId == rest[1],
                    record.subscription == (rest[0] == "subscriptions")
                else {
                    return Self.notFound()
                }
                guard record.purchaseState == 0, record.voidedAt == nil else {
                    return Self.failure(400, "invalid", "The purchase is not in a valid state to perform the desired operation.")
                }
                if action == "consume" {
                    guard !record.consumed else { return Self.failure(400, "invalid", "The purchase has already been consumed.") }
                    record.consumed = true
                    record.acknowledged = true
                    record.consumeCalls += 1
                } else {
                    // Acknowledging twice is harmless at Google; the count shows whether Berth did.
                    record.acknowledged = true
                    record.acknowledgeCalls += 1
                }
                try kit.save(record)
                return Response(status: .noContent)
            }
        case (.get, let rest) where rest == ["voidedpurchases"]:
            if let failure = failing("voided") { return failure }
            let start = request.uri.queryParameters["startTime"].flatMap { Int64($0) } ?? 0
            let voided = kit.records().filter { $0.package == package }.compactMap { record -> VoidedPurchase? in
                guard let at = record.voidedAt, Int64(at.timeIntervalSince1970 * 1000) >= start else { return nil }
                return VoidedPurchase(
                    purchaseToken: record.token,
                    purchaseTimeMillis: String(Int64(record.purchasedAt.timeIntervalSince1970 * 1000)),
                    voidedTimeMillis: String(Int64(at.timeIntervalSince1970 * 1000)),
                    orderId: record.latestOrderId
                )
            }.sorted { ($0.voidedTimeMillis ?? "") < ($1.voidedTimeMillis ?? "") }
            return try Self.encoded(VoidedPurchasesPage(voidedPurchases: voided, nextPageToken: nil))
        default:
            return Self.failure(404, "notFound", "no such call")
        }
    }

    static func split(_ segment: String) -> (String, String) {
        guard let colon = segment.lastIndex(of: ":") else { return (segment, "") }
        return (String(segment[..<colon]), String(segment[segment.index(after: colon)...]))
    }

    static func millis(_ date: Date) -> String { String(Int64((date.timeIntervalSince1970 * 1000).rounded())) }

    public static func product(_ record: PlayTestKit.Record) -> ProductPurchase {
        ProductPurchase(
            purchaseTimeMillis: millis(record.purchasedAt),
            purchaseState: record.purchaseState,
            consumptionState: record.consumed ? 1 : 0,
            orderId: record.orderId,
            purchaseType: record.test ? 0 : nil,
            acknowledgementState: record.acknowledged ? 1 : 0,
            purchaseToken: nil,
            productId: record.productId,
            quantity: record.quantity,
            obfuscatedExternalAccountId: record.accountId
        )
    }

    public static func subscription(_ record: PlayTestKit.Record) -> SubscriptionPurchaseV2 {
        let order = record.latestOrderId
        let item = SubscriptionPurchaseV2.LineItem(
            productId: record.productId,
            expiryTime: record.expiresAt.map(RFC3339.string),
            autoRenewingPlan: .init(
                autoRenewEnabled: record.autoRenew,
                recurringPrice: record.priceMicros.flatMap { micros in
                    record.currency.map {
                        .init(currencyCode: $0, units: String(micros / 1_000_000), nanos: Int(micros % 1_000_000) * 1000)
                    }
                }
            ),
            offerDetails: .init(basePlanId: record.basePlanId),
            latestSuccessfulOrderId: order
        )
        return SubscriptionPurchaseV2(
            lineItems: [item],
            startTime: RFC3339.string(record.purchasedAt),
            subscriptionState: "SUBSCRIPTION_STATE_" + record.state,
            latestOrderId: order,
            linkedPurchaseToken: record.linkedPurchaseToken,
            testPurchase: record.test ? [:] : nil,
            acknowledgementState: record.acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
            externalAccountIdentifiers: record.accountId.map { .init(obfuscatedExternalAccountId: $0) }
        )
    }

    // MARK: Answers

    static func encoded(_ value: some Encodable) throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: try JSONEncoder().encode(value))))
    }

    static func json(_ value: JSONValue) -> Response {
        (try? encoded(value)) ?? Response(status: .internalServerError)
    }

    static func notFound() -> Response { failure(404, "purchaseTokenNotFound", "The purchase token was not found.") }

    static func failure(_ status: Int, _ reason: String, _ message: String) -> Response {
        let body: JSONValue = [
            "error": [
                "code": .number(Double(status)), "message": .string(message), "errors": [["reason": .string(reason), "message": .string(message)]],
            ]
        ]
        var response = json(body)
        response.status = .init(code: status)
        return response
    }

    static func tokenFailure(_ error: String, _ description: String) -> Response {
        var response = json(["error": .string(error), "error_description": .string(description)])
        response.status = .badRequest
        return response
    }
}

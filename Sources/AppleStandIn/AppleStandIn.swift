import AppleSignedData
import Crypto
import Foundation
import Hummingbird
import NIOFoundationCompat
import Synchronization

/// A local HTTP server that plays Apple's App Store Server API and verifyReceipt for tests (Apple's
/// services cannot be reached from test machines), checking the bearer tokens it receives and
/// recording every request. Mount `router()` on a Hummingbird application on 127.0.0.1; its paths
/// are `/production/…` and `/sandbox/…`.
public final class AppleStandIn: Sendable {
    public struct Recorded: Sendable {
        public var method: String
        public var path: String
        public var claims: [String: String]
        public var kid: String?
        /// The query's `revision` (Get Transaction History's page), when it has one.
        public var revision: String? = nil
        /// The request's body (Send Consumption Information's report), when it has one.
        public var body: String? = nil
    }

    public struct Canned: Sendable {
        public var status: Int
        public var body: String
        public var retryAfter: String?
        public var delay: Duration?

        public init(status: Int, body: String, retryAfter: String? = nil, delay: Duration? = nil) {
            self.status = status
            self.body = body
            self.retryAfter = retryAfter
            self.delay = delay
        }
    }

    public struct State: Sendable {
        /// Signed transactions Apple knows, per environment ("production", "sandbox"), by transaction id.
        public var transactions: [String: [String: String]] = ["production": [:], "sandbox": [:]]
        public var historyPages: [[String]] = []
        /// Answers used before the normal behaviour, in order, per environment.
        public var forced: [String: [Canned]] = ["production": [], "sandbox": []]
        public var receiptStatus: [String: Int] = ["production": 0, "sandbox": 0]
        /// Notifications Apple sent (or tried to), per environment: Get Notification History answers
        /// those whose signedDate lies in the asked window, two per page.
        public var notificationHistory: [String: [String]] = ["production": [], "sandbox": []]
        /// Subscriptions' current expiries (ms) by original transaction id: Extend a Subscription
        /// Renewal Date moves them and answers the new one; unknown ids are not extended.
        public var expiries: [String: Int64] = [:]
        public var requests: [Recorded] = []
        /// Look Up Order ID: the signed transactions of each order id (the customer's receipt email), per environment.
        public var orders: [String: [String: [String]]] = ["production": [:], "sandbox": [:]]
    }

    public let apiKey: P256.Signing.PublicKey
    public let issuerId: String
    public let bundleId: String
    public let state = Mutex(State())

    public init(apiKey: P256.Signing.PublicKey, issuerId: String, bundleId: String) {
        self.apiKey = apiKey
        self.issuerId = issuerId
        self.bundleId = bundleId
    }

    public var requests: [Recorded] { state.withLock { $0.requests } }

    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        for environment in ["production", "sandbox"] {
            router.get("/\(environment)/inApps/v1/transactions/{id}") { request, context in
                try await self.answer(environment, request, context) { state in
                    let id = context.parameters.get("id") ?? ""
                    guard let signed = state.transactions[environment]?[id] else {
                        return Canned(status: 404, body: #"{"errorCode": 4040010, "errorMessage": "Transaction id not found."}"#)
                    }
                    return Canned(status: 200, body: #"{"signedTransactionInfo": "\#(signed)"}"#)
                }
            }
            router.get("/\(environment)/inApps/v1/lookup/{orderId}") { request, context in
                try await self.answer(environment, request, context) { state in
                    // Apple answers 200 with status 1 for an order id it does not know.
                    guard let signed = state.orders[environment]?[context.parameters.get("orderId") ?? ""] else {
                        return Canned(status: 200, body: #"{"status": 1}"#)
                    }
                    let list = signed.map { "\"\($0)\"" }.joined(separator: ",")
                    return Canned(status: 200, body: #"{"status": 0, "signedTransactions": [\#(list)]}"#)
                }
            }
            router.get("/\(environment)/inApps/v2/history/{id}") { request, context in
                try await self.answer(environment, request, context) { state in
                    let page = Int(request.uri.queryParameters["revision"].map(String.init) ?? "0") ?? 0
                    let items = page < state.historyPages.count ? state.historyPages[page] : []
                    let hasMore = page + 1 < state.historyPages.count
                    let list = items.map { "\"\($0)\"" }.joined(separator: ",")
                    return Canned(status: 200, body: #"{"revision": "\#(page + 1)", "hasMore": \#(hasMore), "signedTransactions": [\#(list)]}"#)
                }
            }
            router.put("/\(environment)/inApps/v1/subscriptions/extend/{id}") { request, context in
                var request = request
                let body = try await request.collectBody(upTo: 64 * 1024)
                // Apple allows 1…90 days; anything else extends nothing here (and never overflows).
                let asked =
                    ((try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])?["extendByDays"] as? NSNumber)?.int64Value ?? 0
                let days = (1...90).contains(asked) ? asked : 0
                let id = context.parameters.get("id") ?? ""
                // Moved before the answer is chosen (the answer is chosen under the state's lock).
                let effective: Int64? = self.state.withLock { state in
                    guard let current = state.expiries[id] else { return nil }
                    state.expiries[id] = current + days * 86_400_000
                    return current + days * 86_400_000
                }
                return try await self.answer(environment, request, context, body: String(buffer: body)) { _ in
                    guard let effective else { return Canned(status: 200, body: #"{"success": false, "originalTransactionId": "\#(id)"}"#) }
                    return Canned(
                        status: 200,
                        body: #"{"success": true, "effectiveDate": \#(effective), "originalTransactionId": "\#(id)", "webOrderLineItemId": "1"}"#
                    )
                }
            }
            router.post("/\(environment)/inApps/v1/subscriptions/extend/mass") { request, context in
                var request = request
                let body = try await request.collectBody(upTo: 64 * 1024)
                let rid = ((try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])?["requestIdentifier"] as? String) ?? ""
                return try await self.answer(environment, request, context, body: String(buffer: body)) { _ in
                    Canned(status: 200, body: #"{"requestIdentifier": "\#(rid)"}"#)
                }
            }
            router.get("/\(environment)/inApps/v1/subscriptions/extend/mass/{product}/{rid}") { request, context in
                let rid = context.parameters.get("rid") ?? ""
                return try await self.answer(environment, request, context) { state in
                    let extended = state.expiries.count
                    return Canned(
                        status: 200,
                        body:
                            #"{"requestIdentifier": "\#(rid)", "complete": true, "completeDate": 1800000000000, "succeededCount": \#(extended), "failedCount": 0}"#
                    )
                }
            }
            router.put("/\(environment)/inApps/v1/transactions/{id}/appAccountToken") { request, context in
                var request = request
                let body = try await request.collectBody(upTo: 64 * 1024)
                return try await self.answer(environment, request, context, body: String(buffer: body)) { _ in Canned(status: 200, body: "") }
            }
            router.post("/\(environment)/inApps/v1/notifications/history") { request, context in
                var request = request
                let body = try await request.collectBody(upTo: 64 * 1024)
                let window = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
                let start = (window?["startDate"] as? NSNumber)?.int64Value ?? 0, end = (window?["endDate"] as? NSNumber)?.int64Value ?? Int64.max
                let offset = max(0, Int(request.uri.queryParameters["paginationToken"].map(String.init) ?? "0") ?? 0)
                return try await self.answer(environment, request, context, body: String(buffer: body)) { state in
                    let inWindow = (state.notificationHistory[environment] ?? []).filter { payload in
                        Self.signedDate(payload).map { $0 >= start && $0 < end } ?? false
                    }
                    let page = Array(inWindow.dropFirst(offset).prefix(2))
                    let more = offset + page.count < inWindow.count
                    let items = page.map {
                        #"{"signedPayload": "\#($0)", "sendAttempts": [{"attemptDate": \#(start), "sendAttemptResult": "TIMED_OUT"}]}"#
                    }
                    let token = more ? #", "paginationToken": "\#(offset + page.count)""# : ""
                    return Canned(status: 200, body: #"{"notificationHistory": [\#(items.joined(separator: ","))], "hasMore": \#(more)\#(token)}"#)
                }
            }
            router.post("/\(environment)/inApps/v1/notifications/test") { request, context in
                try await self.answer(environment, request, context) { _ in
                    Canned(status: 200, body: #"{"testNotificationToken": "\#(environment)-token"}"#)
                }
            }
            for version in ["v1", "v2"] {
                router.put("/\(environment)/inApps/\(version)/transactions/consumption/{id}") { request, context in
                    var request = request
                    let body = try await request.collectBody(upTo: 64 * 1024)
                    return try await self.answer(environment, request, context, body: String(buffer: body)) { _ in Canned(status: 202, body: "") }
                }
            }
            router.post("/\(environment)/verifyReceipt") { request, context in
                try await self.answer(environment, request, context, authenticated: false) { state in
                    Canned(
                        status: 200,
                        body:
                            #"{"status": \#(state.receiptStatus[environment] ?? 0), "environment": "\#(environment == "production" ? "Production" : "Sandbox")", "receipt": {"bundle_id": "\#(self.bundleId)", "in_app": []}}"#
                    )
                }
            }
        }
        return router
    }

    private func answer(
        _ environment: String,
        _ request: Request,
        _ context: BasicRequestContext,
        authenticated: Bool = true,
        body: String? = nil,
        _ normal: (State) -> Canned
    ) async throws -> Response {
        var claims: [String: String] = [:]
        var kid: String?
        if authenticated {
            guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
                let parsed = verifyToken(String(header.dropFirst(7)))
            else {
                record(environment, request, claims: [:], kid: nil, body: body)
                return Self.response(Canned(status: 401, body: #"{"errorCode": 4010000}"#))
            }
            (claims, kid) = parsed
        }
        record(environment, request, claims: claims, kid: kid, body: body)
        let canned: Canned = state.withLock { state in
            if var queue = state.forced[environment], !queue.isEmpty {
                let first = queue.removeFirst()
                state.forced[environment] = queue
                return first
            }
            return normal(state)
        }
        if let delay = canned.delay { try await Task.sleep(for: delay) }
        return Self.response(canned)
    }

    private func record(_ environment: String, _ request: Request, claims: [String: String], kid: String?, body: String? = nil) {
        state.withLock {
            $0.requests.append(
                Recorded(
                    method: request.method.rawValue,
                    path: request.uri.path,
                    claims: claims,
                    kid: kid,
                    revision: request.uri.queryParameters["revision"].map(String.init),
                    body: body
                )
            )
        }
    }

    /// Checks what Apple checks: ES256 by the registered key, kid, iss, bid, aud, a short lifetime.
    private func verifyToken(_ token: String) -> (claims: [String: String], kid: String?)? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]),
            let signatureData = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any],
            header["alg"] as? String == "ES256",
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            apiKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)),
            claims["iss"] as? String == issuerId, claims["bid"] as? String == bundleId,
            claims["aud"] as? String == "appstoreconnect-v1",
            let iat = claims["iat"] as? Int, let exp = claims["exp"] as? Int, exp > iat, exp - iat <= 3600
        else { return nil }
        return (claims.mapValues { "\($0)" }, header["kid"] as? String)
    }

    /// A JWS payload's signedDate (milliseconds), read without verifying (the stand-in only files it).
    static func signedDate(_ jws: String) -> Int64? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(parts[1]),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return (object["signedDate"] as? NSNumber)?.int64Value
    }

    private static func response(_ canned: Canned) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter = canned.retryAfter { headers[.retryAfter] = retryAfter }
        return Response(status: .init(code: canned.status), headers: headers, body: .init(byteBuffer: ByteBuffer(string: canned.body)))
    }
}

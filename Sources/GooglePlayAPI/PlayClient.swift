import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OutboundHTTP
import Synchronization

/// The Play Developer API calls Berth makes for one service account: read a one-time purchase or a
/// subscription, acknowledge, consume, list voided purchases. Access tokens are bought with the
/// OAuth2 JWT-bearer grant (an RS256 assertion signed by the service account's key, scope
/// androidpublisher), kept until a minute before they expire and bought again after a 401. The API
/// base and the token URL are configuration: tests point both at the Play stand-in.
public final class PlayClient: Sendable {
    public static let defaultAPIBase = "https://androidpublisher.googleapis.com"
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"

    public let apiBase: String
    public let tokenURL: String
    let account: ServiceAccount
    let httpClient: HTTPClient
    let timeout: TimeAmount
    private let cached = Mutex<(token: String, expires: Date)?>(nil)

    public init(
        account: ServiceAccount,
        apiBase: String = PlayClient.defaultAPIBase,
        tokenURL: String? = nil,
        httpClient: HTTPClient,
        timeout: TimeAmount = .seconds(10)
    ) {
        self.account = account
        self.apiBase = apiBase.hasSuffix("/") ? String(apiBase.dropLast()) : apiBase
        self.tokenURL = tokenURL ?? account.tokenURI
        self.httpClient = httpClient
        self.timeout = timeout
    }

    /// The service account's email (logged, never its key).
    public var serviceAccountEmail: String { account.clientEmail }

    // MARK: Purchases

    public func productPurchase(package: String, productId: String, token: String) async throws(PlayError) -> ProductPurchase {
        try await call(.GET, try Self.path(package, "purchases/products", productId, "tokens", token))
    }

    public func subscriptionPurchase(package: String, token: String) async throws(PlayError) -> SubscriptionPurchaseV2 {
        try await call(.GET, try Self.path(package, "purchases/subscriptionsv2/tokens", token))
    }

    public func acknowledgeProduct(package: String, productId: String, token: String) async throws(PlayError) {
        let _: Empty = try await call(.POST, try Self.path(package, "purchases/products", productId, "tokens", token) + ":acknowledge", body: "{}")
    }

    public func consumeProduct(package: String, productId: String, token: String) async throws(PlayError) {
        let _: Empty = try await call(.POST, try Self.path(package, "purchases/products", productId, "tokens", token) + ":consume", body: nil)
    }

    public func acknowledgeSubscription(package: String, subscriptionId: String, token: String) async throws(PlayError) {
        let _: Empty = try await call(
            .POST,
            try Self.path(package, "purchases/subscriptions", subscriptionId, "tokens", token) + ":acknowledge",
            body: "{}"
        )
    }

    /// One page of voided purchases (one-time products and subscriptions) voided since `start`.
    public func voidedPurchases(package: String, since start: Date, pageToken: String?) async throws(PlayError) -> VoidedPurchasesPage {
        var query = "?type=1&startTime=\(Int64((start.timeIntervalSince1970 * 1000).rounded()))"
        if let pageToken {
            guard let escaped = pageToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics) else {
                throw PlayError(status: nil, reason: "invalid", message: "unusable page token")
            }
            query += "&token=\(escaped)"
        }
        return try await call(.GET, try Self.path(package, "purchases/voidedpurchases") + query)
    }

    /// `/androidpublisher/v3/applications/{package}/…`, every caller-supplied part checked and escaped.
    static func path(_ package: String, _ parts: String...) throws(PlayError) -> String {
        var path = "/androidpublisher/v3/applications/" + (try component(package))
        for (index, part) in parts.enumerated() {
            // Literal segments (even positions after the package) are Berth's own; the others came from outside.
            path += "/" + (index % 2 == 0 ? part : try component(part))
        }
        return path
    }

    static func component(_ value: String) throws(PlayError) -> String {
        guard !value.isEmpty, value.utf8.count <= 1024,
            value.utf8.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D
            }),
            // At least one letter or digit: `.` and `..` would walk the path (T11).
            value.utf8.contains(where: { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) })
        else { throw PlayError(status: 400, reason: "invalid", message: "not a package name, product id or purchase token") }
        return value
    }

    // MARK: Access tokens

    /// A current access token: the cached one, or one bought now.
    public func accessToken(now: Date = Date()) async throws(PlayError) -> String {
        if let cached = cached.withLock({ $0 }), cached.expires > now.addingTimeInterval(60) { return cached.token }
        let assertion: String
        do {
            let issued = Int64(now.timeIntervalSince1970)
            assertion = try RS256JWT.sign(
                claims: [
                    "iss": .string(account.clientEmail), "scope": .string(Self.scope), "aud": .string(tokenURL),
                    "iat": .number(Double(issued)), "exp": .number(Double(issued + 3600)),
                ],
                kid: account.privateKeyId,
                key: account.privateKey
            )
        } catch {
            throw PlayError(status: nil, reason: "service_account", message: "the assertion could not be signed")
        }
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
        var request = HTTPClientRequest(url: tokenURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: form))
        let (status, body) = try await send(request)
        guard (200..<300).contains(status) else {
            let failure = try? JSONDecoder().decode(TokenFailure.self, from: body)
            throw PlayError(
                status: status,
                reason: "token",
                message: "the token endpoint answered \(status): \(failure?.error ?? "") \(failure?.error_description ?? "")"
            )
        }
        guard let answer = try? JSONDecoder().decode(TokenAnswer.self, from: body), !answer.access_token.isEmpty else {
            throw PlayError(status: status, reason: "unreadable_answer", message: "the token endpoint's answer has no access_token")
        }
        let lifetime = TimeInterval(min(max(answer.expires_in ?? 3600, 60), 3600))
        cached.withLock { $0 = (answer.access_token, now.addingTimeInterval(lifetime)) }
        return answer.access_token
    }

    /// Forgets the cached token (Google refused it).
    func forgetToken() { cached.withLock { $0 = nil } }

    struct TokenAnswer: Decodable {
        var access_token: String
        var expires_in: Int?
        var token_type: String?
    }

    struct TokenFailure: Decodable {
        var error: String?
        var error_description: String?
    }

    struct Empty: Decodable {}

    struct GoogleFailure: Decodable {
        struct Body: Decodable {
            struct Detail: Decodable { var reason: String? }
            var code: Int?
            var message: String?
            var status: String?
            var errors: [Detail]?
        }

        var error: Body
    }

    // MARK: Transport

    private func call<T: Decodable>(_ method: HTTPMethod, _ path: String, body: String? = nil) async throws(PlayError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            let token = try await accessToken()
            var request = HTTPClientRequest(url: apiBase + path)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "User-Agent", value: "Berth")
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: body))
            } else if method == .POST {
                request.headers.add(name: "Content-Length", value: "0")
            }
            let (status, data) = try await send(request)
            if status == 401, attempt == 1 {
                // A token Google no longer takes (revoked, or the stand-in restarted): buy another once.
                forgetToken()
                continue
            }
            guard (200..<300).contains(status) else {
                let failure = try? JSONDecoder().decode(GoogleFailure.self, from: data)
                throw PlayError(
                    status: status,
                    reason: failure?.error.errors?.first?.reason ?? failure?.error.status ?? "http_\(status)",
                    message: failure?.error.message ?? "Google Play answered \(status)"
                )
            }
            if T.self == Empty.self, let empty = Empty() as? T { return empty }
            do {
                return try JSONDecoder().decode(T.self, from: data)
            } catch {
                throw PlayError(status: status, reason: "unreadable_answer", message: "Google Play's answer could not be read: \(error)")
            }
        }
    }

    private func send(_ request: HTTPClientRequest) async throws(PlayError) -> (Int, Data) {
        do {
            let response = try await httpClient.execute(request, timeout: timeout)
            let body = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), Data(body.readableBytesView))
        } catch {
            throw PlayError(status: nil, reason: "network", message: "Google could not be reached: \(TransportFailure.describe(error))")
        }
    }
}

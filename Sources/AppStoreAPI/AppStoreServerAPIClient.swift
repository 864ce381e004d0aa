import AppleSignedData
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A client of the App Store Server API. Production is asked first and Sandbox when Production does
/// not know the transaction; every signed answer is verified like any other signed data.
public struct AppStoreServerAPIClient: Sendable {
    public struct Endpoints: Sendable {
        public var production: String
        public var sandbox: String

        public init(production: String = "https://api.storekit.itunes.apple.com", sandbox: String = "https://api.storekit-sandbox.itunes.apple.com") {
            self.production = production
            self.sandbox = sandbox
        }
    }

    public let credentials: AppStoreAPICredentials
    let endpoints: Endpoints
    let http: AppleHTTP
    let verifier: SignedDataVerifier
    let expectations: AppExpectations
    let now: @Sendable () -> Date

    public init(
        credentials: AppStoreAPICredentials,
        endpoints: Endpoints = Endpoints(),
        httpClient: HTTPClient,
        retry: RetryPolicy = RetryPolicy(),
        verifier: SignedDataVerifier,
        expectations: AppExpectations,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.credentials = credentials
        self.endpoints = endpoints
        self.http = AppleHTTP(client: httpClient, retry: retry)
        self.verifier = verifier
        self.expectations = expectations
        self.now = now
    }

    /// Apple's "transaction id not found" error code.
    static let transactionIdNotFound = 4_040_010

    struct TransactionInfoResponse: Decodable { var signedTransactionInfo: String }
    struct HistoryResponse: Decodable {
        var revision: String?
        var hasMore: Bool?
        var signedTransactions: [String]?
    }
    struct StatusResponse: Decodable {
        struct Group: Decodable {
            var subscriptionGroupIdentifier: String?
            var lastTransactions: [Item]?
        }
        struct Item: Decodable {
            var status: Int?
            var originalTransactionId: String?
            var signedTransactionInfo: String?
            var signedRenewalInfo: String?
        }
        var data: [Group]?
    }
    struct TestNotificationResponse: Decodable { var testNotificationToken: String }
    struct ErrorBody: Decodable {
        var errorCode: Int?
        var errorMessage: String?
    }

    /// Get Transaction Info.
    public func transactionInfo(_ transactionId: String) async throws -> VerifiedTransaction {
        let reply = try await getWithFallback("/inApps/v1/transactions/\(Self.escape(transactionId))")
        let decoded = try Self.decode(TransactionInfoResponse.self, reply)
        return try await verifier.verifyTransaction(decoded.signedTransactionInfo, expecting: expectations)
    }

    struct OrderLookupResponse: Decodable {
        var status: Int
        var signedTransactions: [String]?
    }

    /// Look Up Order ID: the transactions of the order a customer's receipt email names (Production,
    /// then Sandbox when Production does not know it); empty when neither knows it.
    public func lookUpOrder(_ orderId: String) async throws -> [VerifiedTransaction] {
        for environment in [AppStoreEnvironment.production, .sandbox] {
            let reply = try await send(method: .GET, path: "/inApps/v1/lookup/\(Self.escape(orderId))", environment: environment, body: nil)
            let decoded = try Self.decode(OrderLookupResponse.self, reply)
            guard decoded.status == 0 else { continue }
            var results: [VerifiedTransaction] = []
            for signed in decoded.signedTransactions ?? [] { results.append(try await verifier.verifyTransaction(signed, expecting: expectations)) }
            return results
        }
        return []
    }

    /// Get Transaction History v2, every page.
    public func transactionHistory(_ transactionId: String, maximumPages: Int = 100) async throws -> [VerifiedTransaction] {
        var revision: String?
        var results: [VerifiedTransaction] = []
        for _ in 0..<maximumPages {
            var path = "/inApps/v2/history/\(Self.escape(transactionId))"
            if let revision { path += "?revision=\(Self.escape(revision))" }
            let page = try Self.decode(HistoryResponse.self, try await getWithFallback(path))
            for signed in page.signedTransactions ?? [] {
                results.append(try await verifier.verifyTransaction(signed, expecting: expectations))
            }
            guard page.hasMore == true, let next = page.revision else { return results }
            revision = next
        }
        return results
    }

    /// Get All Subscription Statuses: each latest transaction with its renewal info, verified.
    public func subscriptionStatuses(
        _ transactionId: String
    ) async throws -> [(status: Int?, transaction: VerifiedTransaction?, renewalInfo: VerifiedRenewalInfo?)] {
        let decoded = try Self.decode(StatusResponse.self, try await getWithFallback("/inApps/v1/subscriptions/\(Self.escape(transactionId))"))
        var results: [(status: Int?, transaction: VerifiedTransaction?, renewalInfo: VerifiedRenewalInfo?)] = []
        for group in decoded.data ?? [] {
            for item in group.lastTransactions ?? [] {
                let transaction = try await item.signedTransactionInfo.asyncMap { try await verifier.verifyTransaction($0, expecting: expectations) }
                let renewal = try await item.signedRenewalInfo.asyncMap { try await verifier.verifyRenewalInfo($0, expecting: expectations) }
                results.append((item.status, transaction, renewal))
            }
        }
        return results
    }

    /// Send Consumption Information V2 (a `ConsumptionRequest` JSON body as Apple documents it).
    public func sendConsumptionInformation(_ transactionId: String, body: Data, environment: AppStoreEnvironment) async throws(AppStoreAPIError) {
        let reply = try await send(
            method: .PUT,
            path: "/inApps/v2/transactions/consumption/\(Self.escape(transactionId))",
            environment: environment,
            body: body
        )
        guard (200..<300).contains(reply.status) else { throw Self.rejection(reply) }
    }

    /// Request a Test Notification; returns Apple's test notification token.
    public func requestTestNotification(environment: AppStoreEnvironment) async throws(AppStoreAPIError) -> String {
        let reply = try await send(method: .POST, path: "/inApps/v1/notifications/test", environment: environment, body: nil)
        return try Self.decode(TestNotificationResponse.self, reply).testNotificationToken
    }

    /// One page of Get Notification History: the signed payloads Apple sent (or tried to send)
    /// between `start` and `end` (Apple keeps 180 days), and the token of the next page.
    public struct NotificationHistoryPage: Sendable {
        public var signedPayloads: [String]
        public var hasMore: Bool
        public var paginationToken: String?
    }

    struct NotificationHistoryRequest: Encodable {
        var startDate: Int64
        var endDate: Int64
    }

    struct NotificationHistoryResponse: Decodable {
        struct Item: Decodable { var signedPayload: String? }
        var notificationHistory: [Item]?
        var hasMore: Bool?
        var paginationToken: String?
    }

    /// Get Notification History (`POST /inApps/v1/notifications/history`).
    public func notificationHistory(
        environment: AppStoreEnvironment,
        start: Date,
        end: Date,
        paginationToken: String?
    ) async throws(AppStoreAPIError) -> NotificationHistoryPage {
        let query = paginationToken.map { "?paginationToken=\(Self.escape($0))" } ?? ""
        let body: Data
        do {
            body = try JSONEncoder().encode(NotificationHistoryRequest(startDate: Self.milliseconds(start), endDate: Self.milliseconds(end)))
        } catch {
            throw AppStoreAPIError(.invalidResponse, "the history request could not be encoded")
        }
        let reply = try await send(method: .POST, path: "/inApps/v1/notifications/history" + query, environment: environment, body: body)
        let page = try Self.decode(NotificationHistoryResponse.self, reply)
        return NotificationHistoryPage(
            signedPayloads: (page.notificationHistory ?? []).compactMap(\.signedPayload),
            hasMore: page.hasMore ?? false,
            paginationToken: page.paginationToken
        )
    }

    /// Set App Account Token (`PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`):
    /// later transactions and notifications of the purchase carry `token`.
    public func setAppAccountToken(originalTransactionId: String, token: UUID, environment: AppStoreEnvironment) async throws(AppStoreAPIError) {
        let body = Data(#"{"appAccountToken":"\#(token.uuidString.lowercased())"}"#.utf8)
        let reply = try await send(
            method: .PUT,
            path: "/inApps/v1/transactions/\(Self.escape(originalTransactionId))/appAccountToken",
            environment: environment,
            body: body
        )
        guard (200..<300).contains(reply.status) else { throw Self.rejection(reply) }
    }

    struct ExtendRequest: Encodable {
        var extendByDays: Int
        var extendReasonCode: Int
        var requestIdentifier: String
    }

    struct ExtendResponse: Decodable {
        var effectiveDate: Int64?
        var success: Bool?
    }

    /// Extend a Subscription Renewal Date (`PUT /inApps/v1/subscriptions/extend/{id}`): the new
    /// expiry when Apple extended it, nil when it did not.
    public func extendRenewalDate(
        originalTransactionId: String,
        days: Int,
        reasonCode: Int,
        requestIdentifier: UUID,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError) -> Date? {
        let body = try Self.encode(
            ExtendRequest(extendByDays: days, extendReasonCode: reasonCode, requestIdentifier: requestIdentifier.uuidString.lowercased())
        )
        let reply = try await send(
            method: .PUT,
            path: "/inApps/v1/subscriptions/extend/\(Self.escape(originalTransactionId))",
            environment: environment,
            body: body
        )
        let answer = try Self.decode(ExtendResponse.self, reply)
        guard answer.success == true, let effective = answer.effectiveDate else { return nil }
        return Date(timeIntervalSince1970: Double(effective) / 1000)
    }

    struct MassExtendRequest: Encodable {
        var extendByDays: Int
        var extendReasonCode: Int
        var requestIdentifier: String
        var productId: String
        var storefrontCountryCodes: [String]?
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers of a product (`POST /inApps/v1/subscriptions/extend/mass`).
    public func massExtendRenewalDate(
        productId: String,
        days: Int,
        reasonCode: Int,
        requestIdentifier: UUID,
        storefronts: [String]?,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError) {
        let body = try Self.encode(
            MassExtendRequest(
                extendByDays: days,
                extendReasonCode: reasonCode,
                requestIdentifier: requestIdentifier.uuidString.lowercased(),
                productId: productId,
                storefrontCountryCodes: storefronts
            )
        )
        let reply = try await send(method: .POST, path: "/inApps/v1/subscriptions/extend/mass", environment: environment, body: body)
        guard (200..<300).contains(reply.status) else { throw Self.rejection(reply) }
    }

    /// Where a mass extension stands (`GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`).
    public struct MassExtensionStatus: Decodable, Sendable {
        public var requestIdentifier: String?
        public var complete: Bool?
        public var completeDate: Int64?
        public var succeededCount: Int64?
        public var failedCount: Int64?
    }

    public func massExtensionStatus(
        productId: String,
        requestIdentifier: String,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError) -> MassExtensionStatus {
        let reply = try await send(
            method: .GET,
            path: "/inApps/v1/subscriptions/extend/mass/\(Self.escape(productId))/\(Self.escape(requestIdentifier))",
            environment: environment,
            body: nil
        )
        return try Self.decode(MassExtensionStatus.self, reply)
    }

    private static func encode(_ value: some Encodable) throws(AppStoreAPIError) -> Data {
        do { return try JSONEncoder().encode(value) } catch { throw AppStoreAPIError(.invalidResponse, "the request could not be encoded") }
    }

    static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        return value.isFinite && abs(value) < 1e15 ? Int64(value) : 0
    }

    // MARK: - Plumbing

    private func getWithFallback(_ path: String) async throws(AppStoreAPIError) -> AppleHTTP.Reply {
        let production = try await send(method: .GET, path: path, environment: .production, body: nil)
        if production.status == 404, Self.errorCode(production) == Self.transactionIdNotFound {
            let sandbox = try await send(method: .GET, path: path, environment: .sandbox, body: nil)
            if sandbox.status == 404, Self.errorCode(sandbox) == Self.transactionIdNotFound {
                throw AppStoreAPIError(
                    .transactionNotFound,
                    "neither Production nor Sandbox knows this transaction",
                    appleCode: Self.transactionIdNotFound
                )
            }
            return sandbox
        }
        return production
    }

    private func send(
        method: HTTPMethod,
        path: String,
        environment: AppStoreEnvironment,
        body: Data?
    ) async throws(AppStoreAPIError) -> AppleHTTP.Reply {
        let base = environment == .production ? endpoints.production : endpoints.sandbox
        let credentials = self.credentials
        let now = self.now
        let reply = try await http.send {
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer \(try credentials.token(now: now()))")
            request.headers.add(name: "Accept", value: "application/json")
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: body))
            }
            return request
        }
        if reply.status == 401 {
            throw AppStoreAPIError(.unauthorized, "Apple refused the API key (401); check issuer id, key id and key")
        }
        return reply
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ reply: AppleHTTP.Reply) throws(AppStoreAPIError) -> T {
        guard (200..<300).contains(reply.status) else { throw rejection(reply) }
        do { return try JSONDecoder().decode(T.self, from: reply.body) } catch {
            throw AppStoreAPIError(.invalidResponse, "Apple's answer is not the documented JSON")
        }
    }

    private static func errorCode(_ reply: AppleHTTP.Reply) -> Int? {
        (try? JSONDecoder().decode(ErrorBody.self, from: reply.body))?.errorCode
    }

    private static func rejection(_ reply: AppleHTTP.Reply) -> AppStoreAPIError {
        let body = try? JSONDecoder().decode(ErrorBody.self, from: reply.body)
        return AppStoreAPIError(.rejected, "Apple answered \(reply.status): \(body?.errorMessage ?? "no message")", appleCode: body?.errorCode)
    }

    private static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}

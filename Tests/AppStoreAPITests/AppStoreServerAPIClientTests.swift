import AppStoreAPI
import AppleSignedData
import AppleStandIn
import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import StoreTesting
import Synchronization
import TestKit
import Testing

@Suite("App Store Server API client against a local stand-in for Apple")
struct AppStoreServerAPIClientTests {
    let key = P256.Signing.PrivateKey()
    let ca: TestCA
    let standIn: AppleStandIn

    init() throws {
        ca = try TestCA.generate()
        standIn = AppleStandIn(apiKey: key.publicKey, issuerId: "issuer-1", bundleId: "it.seaboo.app")
    }

    func client(
        port: Int,
        key: P256.Signing.PrivateKey? = nil,
        // A deadline no loaded machine reaches (a suite run took 90 s for these tests once): a retry
        // here comes from what the stand-in answered, never from the host's load.
        retry: RetryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5), timeout: .seconds(300))
    ) throws -> AppStoreServerAPIClient {
        AppStoreServerAPIClient(
            credentials: AppStoreAPICredentials(issuerId: "issuer-1", keyId: "KEY123", bundleId: "it.seaboo.app", privateKey: key ?? self.key),
            endpoints: .init(production: "http://127.0.0.1:\(port)/production", sandbox: "http://127.0.0.1:\(port)/sandbox"),
            httpClient: .shared,
            retry: retry,
            verifier: SignedDataVerifier(roots: ca.trustedRoots),
            expectations: try AppExpectations(bundleId: "it.seaboo.app", appAppleId: 1, environments: [.production, .sandbox])
        )
    }

    func signed(_ id: String, environment: AppStoreEnvironment) throws -> String {
        try ca.signTransaction(.testPurchase(bundleId: "it.seaboo.app", productId: "p", transactionId: id, environment: environment))
    }

    func withStandIn(_ body: @Sendable (Int) async throws -> Void) async throws {
        try await Application(router: standIn.router()).test(.live) { client in try await body(client.port!) }
    }

    @Test("Get Transaction Info asks Production first, falls back to Sandbox, and verifies what it gets")
    func productionThenSandbox() async throws {
        let sandboxJWS = try signed("2000000000000001", environment: .sandbox)
        let productionJWS = try signed("1000000000000002", environment: .production)
        standIn.state.withLock {
            $0.transactions["sandbox"]?["2000000000000001"] = sandboxJWS
            $0.transactions["production"]?["1000000000000002"] = productionJWS
        }
        try await withStandIn { port in
            let api = try client(port: port)
            let fromSandbox = try await api.transactionInfo("2000000000000001")
            #expect(fromSandbox.payload.environment == .sandbox)
            let fromProduction = try await api.transactionInfo("1000000000000002")
            #expect(fromProduction.payload.transactionId == "1000000000000002")
            let missing = await #expect(throws: AppStoreAPIError.self) { _ = try await api.transactionInfo("999") }
            #expect(missing?.code == .transactionNotFound)
        }
        let paths = Self.asked(standIn.requests.map(\.path))
        #expect(paths.prefix(2) == ["/production/inApps/v1/transactions/2000000000000001", "/sandbox/inApps/v1/transactions/2000000000000001"])
        #expect(paths[2] == "/production/inApps/v1/transactions/1000000000000002")
        #expect(paths.count == 5)
    }

    @Test("the stand-in checks the token's claims; a wrong key is refused as unauthorized")
    func tokenClaims() async throws {
        standIn.state.withLock { $0.transactions["production"]?["1"] = try? signed("1", environment: .production) }
        try await withStandIn { port in
            _ = try await client(port: port).transactionInfo("1")
            let stranger = try client(port: port, key: P256.Signing.PrivateKey())
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await stranger.transactionInfo("1") }
            #expect(error?.code == .unauthorized)
        }
        let first = try #require(standIn.requests.first)
        #expect(first.kid == "KEY123")
        #expect(first.claims["iss"] == "issuer-1")
        #expect(first.claims["bid"] == "it.seaboo.app")
        #expect(first.claims["aud"] == "appstoreconnect-v1")
    }

    @Test("a signed answer from an untrusted chain is refused like any other")
    func answersAreVerified() async throws {
        let forged = try TestCA.generate().signTransaction(
            .testPurchase(bundleId: "it.seaboo.app", productId: "p", transactionId: "7", environment: .production)
        )
        standIn.state.withLock { $0.transactions["production"]?["7"] = forged }
        try await withStandIn { port in
            let api = try client(port: port)
            let error = await #expect(throws: SignedDataError.self) { _ = try await api.transactionInfo("7") }
            #expect(error?.code == .untrustedRoot)
        }
    }

    @Test("5xx answers are retried, then surface as a retryable error")
    func serverErrorsRetried() async throws {
        standIn.state.withLock {
            $0.transactions["production"]?["5"] = try? signed("5", environment: .production)
            $0.forced["production"] = [.init(status: 500, body: ""), .init(status: 503, body: "")]
        }
        try await withStandIn { port in
            #expect(try await client(port: port).transactionInfo("5").payload.transactionId == "5")
            standIn.state.withLock { $0.forced["production"] = Array(repeating: .init(status: 502, body: ""), count: 5) }
            let api = try client(port: port)
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await api.transactionInfo("5") }
            #expect(error?.code == .unavailable)
            #expect(error?.retryable == true)
        }
        #expect(standIn.requests.count == 3 + 3)
    }

    @Test("429 honours Retry-After")
    func retryAfter() async throws {
        standIn.state.withLock {
            $0.transactions["production"]?["9"] = try? signed("9", environment: .production)
            $0.forced["production"] = [.init(status: 429, body: "", retryAfter: "1")]
        }
        try await withStandIn { port in
            let started = ContinuousClock.now
            _ = try await client(port: port).transactionInfo("9")
            #expect(ContinuousClock.now - started >= .milliseconds(950))
        }
    }

    @Test("timeouts are retried, then surface as a retryable timeout")
    func timeouts() async throws {
        standIn.state.withLock { $0.forced["production"] = Array(repeating: .init(status: 200, body: "{}", delay: .seconds(2)), count: 2) }
        try await withStandIn { port in
            let api = try client(port: port, retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5), timeout: .milliseconds(200)))
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await api.transactionInfo("1") }
            #expect(error?.code == .timeout)
            #expect(error?.retryable == true)
        }
    }

    /// The endpoints asked, in order: a request sent again right after itself (the client's retry of
    /// an answer that was slow or cut on a loaded machine) counts once. Retries have their own tests.
    static func asked(_ paths: [String]) -> [String] {
        paths.enumerated().filter { $0.offset == 0 || paths[$0.offset - 1] != $0.element }.map(\.element)
    }

    @Test("Get Transaction History follows every page by revision")
    func historyPagination() async throws {
        let pages = try [["11", "12"], ["13"], ["14", "15"]].map { try $0.map { try signed($0, environment: .production) } }
        standIn.state.withLock { $0.historyPages = pages }
        try await withStandIn { port in
            let all = try await client(port: port).transactionHistory("11")
            #expect(all.compactMap(\.payload.transactionId) == ["11", "12", "13", "14", "15"])
        }
        // Every page asked for by the revision the previous one gave (pages, not requests: on a loaded
        // machine a slow answer is asked for again, by the same revision).
        let history = standIn.requests.filter { $0.path.contains("history") }
        #expect(Set(history.map { $0.revision ?? "first" }) == ["first", "1", "2"], "\(history.map(\.revision))")
    }

    @Test("Request Test Notification and Send Consumption Information reach the chosen environment")
    func testNotificationAndConsumption() async throws {
        try await withStandIn { port in
            let api = try client(port: port)
            let token = try await api.requestTestNotification(environment: .sandbox)
            #expect(token == "sandbox-token")
            try await api.sendConsumptionInformation("3", body: Data(#"{"customerConsented": true}"#.utf8), environment: .production)
        }
        #expect(
            Self.asked(standIn.requests.map(\.path)) == ["/sandbox/inApps/v1/notifications/test", "/production/inApps/v2/transactions/consumption/3"]
        )
    }
}

@Suite("verifyReceipt client against a local stand-in for Apple")
struct VerifyReceiptClientTests {
    let standIn = AppleStandIn(apiKey: P256.Signing.PrivateKey().publicKey, issuerId: "i", bundleId: "it.seaboo.app")

    func client(_ port: Int) -> VerifyReceiptClient {
        VerifyReceiptClient(
            endpoints: .init(
                production: "http://127.0.0.1:\(port)/production/verifyReceipt",
                sandbox: "http://127.0.0.1:\(port)/sandbox/verifyReceipt"
            ),
            sharedSecret: "secret",
            httpClient: .shared,
            // As above: only the stand-in's answers, never the host's load, make a retry.
            retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5), timeout: .seconds(300))
        )
    }

    func run(_ body: @Sendable (Int) async throws -> Void) async throws {
        try await Application(router: standIn.router()).test(.live) { client in try await body(client.port!) }
    }

    @Test("21007 from Production falls back to Sandbox")
    func sandboxFallback() async throws {
        standIn.state.withLock { $0.receiptStatus = ["production": 21007, "sandbox": 0] }
        try await run { port in
            let response = try await client(port).verify(receiptData: "MIIT")
            #expect(response.environment == "Sandbox")
            #expect(response.receipt?.bundleId == "it.seaboo.app")
        }
        #expect(AppStoreServerAPIClientTests.asked(standIn.requests.map(\.path)) == ["/production/verifyReceipt", "/sandbox/verifyReceipt"])
    }

    @Test("21008 from Sandbox goes back to Production")
    func productionFromSandbox() async throws {
        standIn.state.withLock { $0.receiptStatus = ["production": 21007, "sandbox": 21008] }
        try await run { port in
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await client(port).verify(receiptData: "MIIT") }
            #expect(error?.appleCode == 21007)
        }
        #expect(
            AppStoreServerAPIClientTests.asked(standIn.requests.map(\.path)) == [
                "/production/verifyReceipt", "/sandbox/verifyReceipt", "/production/verifyReceipt",
            ]
        )
    }

    @Test(
        "statuses map to typed errors; temporary ones are retryable",
        arguments: [
            (21002, "receipt_invalid", false), (21004, "shared_secret_mismatch", false), (21005, "apple_unavailable", true),
            (21100, "apple_unavailable", true), (21199, "apple_unavailable", true), (21010, "receipt_invalid", false),
        ]
    )
    func statuses(status: Int, code: String, retryable: Bool) async throws {
        standIn.state.withLock { $0.receiptStatus["production"] = status }
        try await run { port in
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await client(port).verify(receiptData: "MIIT") }
            #expect(error?.code.rawValue == code)
            #expect(error?.retryable == retryable)
        }
    }

    @Test("HTTP 5xx from verifyReceipt is retried")
    func httpRetried() async throws {
        standIn.state.withLock { $0.forced["production"] = [.init(status: 503, body: "")] }
        try await run { port in
            let status = try await client(port).verify(receiptData: "MIIT").status
            #expect(status == 0)
        }
        #expect(standIn.requests.count == 2)
    }
}

extension AppStoreServerAPIClientTests {
    @Test("a refused connection is reported as refused, not as a reset or a timeout")
    func refusedConnection() async throws {
        // Bound and held, never listening: connections to it are refused, and no other test's server
        // can take the port meanwhile (a port bound and closed again was, once: "Apple answered 404").
        let socket = try RefusingPort()
        defer { socket.close() }
        let api = try client(port: socket.port, retry: RetryPolicy(maxAttempts: 1, baseDelay: .milliseconds(1), timeout: .seconds(5)))
        let error = await #expect(throws: AppStoreAPIError.self) { _ = try await api.transactionInfo("2000000000000001") }
        #expect(error?.reason.contains("connection refused") == true, "\(error?.reason ?? "")")
        #expect(error?.retryable == true)
    }
}

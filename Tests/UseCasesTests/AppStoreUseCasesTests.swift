import AppStoreAPI
import AppleSignedData
import AppleStandIn
import AsyncHTTPClient
import Crypto
import Domain
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import StoreTesting
import Synchronization
import TestKit
import Testing
import UseCases

/// The App Store's own use cases over Apple's services (a stand-in on loopback): restores, the
/// catch-up after a validation, consumption answers, on every backend.
@Suite("The App Store's use cases over Apple's services, on every backend")
struct AppStoreUseCasesTests {
    static let now = PurchaseFixture.now

    /// Runs `body` with an Apple stand-in on loopback and a tenant whose App Store Server API it is
    /// (the fixture's tenant, with its key; `consumption`: it answers consumption requests).
    static func withStandIn(
        consumption: Bool = false,
        _ body: @Sendable (AppleStandIn, TenantRuntime) async throws -> Void
    ) async throws {
        let apiKey = P256.Signing.PrivateKey()
        let standIn = AppleStandIn(apiKey: apiKey.publicKey, issuerId: "issuer-1", bundleId: PurchaseFixture.bundleId)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("berth-usecases-apple-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(apiKey.pemRepresentation.utf8).write(to: folder.appendingPathComponent("apple-key.p8"))
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await Application(router: standIn.router()).test(.live) { apple in
                let base = "http://127.0.0.1:\(try #require(apple.port))"
                var tenant = try await PurchaseFixture.runtime().tenant
                tenant.apple.trustedRootFiles = [PurchaseFixture.signing.folder.appendingPathComponent("root.pem").path]
                tenant.apple.serverAPI = ServerAPICredentials(
                    issuerId: "issuer-1",
                    keyId: "KEY123",
                    privateKeyFile: "apple-key.p8",
                    productionURL: base + "/production",
                    sandboxURL: base + "/sandbox"
                )
                if consumption {
                    tenant.apple.answerConsumptionRequests = true
                    tenant.apple.refundPreference = .auto
                }
                let runtime = try await TenantRuntime(
                    tenant: tenant,
                    baseDirectory: folder,
                    environment: [:],
                    clock: ManualClock(now),
                    httpClient: client,
                    logger: Logger(label: "use-cases-test")
                )
                #expect(runtime.appStore.serverAPI != nil, "the stand-in's key was not loaded")
                try await body(standIn, runtime)
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    static func pack(_ id: String, token: String? = nil) -> TransactionPayload {
        var transaction = PurchaseFixture.transaction("pack10", id: id)
        transaction.appAccountToken = token
        return transaction
    }

    static func balance(_ store: any Store, _ user: String) async throws -> Int64 {
        try await store.read { tx in
            try tx.credits.account(tenantId: "a", userId: user, creditType: "c", now: now, forUpdate: false).balance.balance
        }
    }

    @Test(
        "restore: the customer's history, read from a transaction the caller owns, applies what Berth lacks once; another user's transaction id proves nothing",
        arguments: StoreBackend.available
    )
    func restore(backend: StoreBackend) async throws {
        try await Self.withStandIn { standIn, runtime in
            try await backend.run { store in
                try await PurchaseFixture.sellPack10(store)
                let services = PurchaseFixture.Services(store)
                let ca = PurchaseFixture.signing.ca
                _ = try await services.pay(runtime, user: "ana", booking: nil, jws: ca.signTransaction(Self.pack("701")), product: "pack10")
                _ = try await services.pay(runtime, user: "bob", booking: nil, jws: ca.signTransaction(Self.pack("703")), product: "pack10")
                // 702 was paid, but the app never reached Berth.
                let history = try ["701", "702", "703"].map { try ca.signTransaction(Self.pack($0)) }
                standIn.state.withLock { $0.historyPages = [Array(history.prefix(2)), [history[2]]] }
                let restore = RestorePurchases(store: store, claims: services.verify.claims, logger: Logger(label: "use-cases-test"))

                let items = try await restore(runtime: runtime, userId: "ana", proof: .owned(transactionId: "701"))
                #expect(items.filter { $0.outcome == "restored" }.map(\.transactionId) == ["702"], "\(items.map { ($0.transactionId, $0.outcome) })")
                #expect(try await Self.balance(store, "ana") == 20)
                #expect(try await Self.balance(store, "bob") == 10, "bob's pack stays bob's")
                let again = try await restore(runtime: runtime, userId: "ana", proof: .owned(transactionId: "702"))
                #expect(again.filter { $0.outcome == "restored" }.isEmpty)
                #expect(try await Self.balance(store, "ana") == 20, "applied once")

                await #expect {
                    _ = try await restore(runtime: runtime, userId: "eve", proof: .owned(transactionId: "703"))
                } throws: { ($0 as? DomainError)?.code == .proofRequired }
                // A signed transaction someone else holds is not eve's proof; one bought with her token is.
                await #expect {
                    _ = try await restore(runtime: runtime, userId: "eve", proof: .jws(history[1]))
                } throws: { ($0 as? DomainError)?.code == .proofRequired }
                let evesOwn = try ca.signTransaction(Self.pack("704", token: AccountTokens.cordovaPlugin("eve")))
                #expect(try await restore(runtime: runtime, userId: "eve", proof: .jws(evesOwn)).count == 3)
            }
        }
    }

    @Test(
        "a validation catches up the customer's history once per throttle window, only for a caller who proved the user",
        arguments: StoreBackend.available
    )
    func catchUpAfterValidation(backend: StoreBackend) async throws {
        try await Self.withStandIn { standIn, runtime in
            try await backend.run { store in
                try await PurchaseFixture.sellPack10(store)
                let services = PurchaseFixture.Services(store)
                let ca = PurchaseFixture.signing.ca
                let history = try ["801", "802"].map { try ca.signTransaction(Self.pack($0)) }
                standIn.state.withLock { $0.historyPages = [history] }
                let catchUp = CatchUpAfterValidation(
                    restore: RestorePurchases(store: store, claims: services.verify.claims, logger: Logger(label: "use-cases-test")),
                    throttle: CatchUpThrottle(interval: 600),
                    clock: services.clock
                )
                func historyReads() -> Int { standIn.requests.count { $0.path.contains("/history/") } }

                // The app posted 801 for a user it did not prove (a server key naming someone): no catch-up.
                let first = try await services.pay(runtime, user: "ana", booking: nil, jws: history[0], product: "pack10")
                await catchUp(after: first, runtime: runtime, userId: "ana", callerProvesUser: false)
                #expect(historyReads() == 0)
                #expect(try await Self.balance(store, "ana") == 10)

                await catchUp(after: first, runtime: runtime, userId: "ana", callerProvesUser: true)
                #expect(historyReads() == 1)
                #expect(try await Self.balance(store, "ana") == 20, "802, which the app finished without posting, is applied")
                await catchUp(after: first, runtime: runtime, userId: "ana", callerProvesUser: true)
                #expect(historyReads() == 1, "once per user and window")
                services.clock.advance(601)
                await catchUp(after: first, runtime: runtime, userId: "ana", callerProvesUser: true)
                #expect(historyReads() == 2)
                #expect(try await Self.balance(store, "ana") == 20, "nothing twice")
            }
        }
    }

    @Test(
        "a consumption request is answered to Apple only with the customer's consent, once per request",
        arguments: StoreBackend.available
    )
    func consumptionAnswers(backend: StoreBackend) async throws {
        try await Self.withStandIn(consumption: true) { standIn, runtime in
            try await backend.run { store in
                try await PurchaseFixture.sellPack10(store)
                let services = PurchaseFixture.Services(store)
                let ca = PurchaseFixture.signing.ca
                let transaction = Self.pack("901")
                _ = try await services.pay(runtime, user: "ana", booking: nil, jws: ca.signTransaction(transaction), product: "pack10")
                func request() throws -> String {
                    try ca.signNotification(
                        type: .consumptionRequest,
                        bundleId: PurchaseFixture.bundleId,
                        transaction: transaction,
                        signedDate: Self.now
                    )
                }
                func sent() -> [AppleStandIn.Recorded] { standIn.requests.filter { $0.path.contains("/transactions/consumption/901") } }

                let unconsented = try await services.notifications(signedPayload: request(), runtime: runtime)
                #expect(unconsented.consumption == "no_consent", "\(unconsented)")
                #expect(sent().isEmpty, "no consent recorded: Apple is told nothing")

                _ = try await ConsumptionConsents(store: store, clock: services.clock).record(
                    runtime: runtime,
                    userId: "ana",
                    consented: true,
                    textVersion: "refund-terms-1",
                    actor: .user("ana")
                )
                let consented = try await services.notifications(signedPayload: request(), runtime: runtime)
                #expect(consented.consumption == "sent", "\(consented)")
                let body = try #require(sent().first?.body)
                #expect(body.contains("\"customerConsented\":true") || body.contains("\"customerConsented\": true"), "\(body)")
                #expect(sent().count == 1)
            }
        }
    }
}

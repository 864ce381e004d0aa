import AsyncHTTPClient
import Domain
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PlayStandIn
import SQLStore
import StoreTesting
import Testing
import UseCases

/// A tenant that sells credit packs on Google Play, its Play Developer API played by the stand-in on
/// loopback (the service account and push keys made once for the suite).
enum PlayFixture {
    static let package = "com.example.play"
    static let pack = "com.example.play.credits50"

    static let keys: Result<URL, any Error> = Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-usecases-play-\(UUID().uuidString)")
        _ = try PlayTestKit.initialize(directory)
        return directory
    }

    static func tenant() throws -> Tenant {
        let json = """
            {"id": "p", "name": "P", "currency": "USD",
             "apple": {"bundleId": "\(package)", "environments": ["Sandbox"]},
             "googlePlay": {"packageName": "\(package)", "serviceAccountFileEnv": "PLAY_SA", "apiBaseEnv": "PLAY_BASE",
                            "push": {"audience": "\(package)", "serviceAccountEmail": "play-push@berth-testkit.iam.gserviceaccount.com"}},
             "auth": {"algorithm": "HS256", "issuer": "https://p.example", "secretEnv": "P_SECRET"},
             "credits": {"types": ["credits"]},
             "products": [{"id": "\(pack)", "kind": "credits", "type": "Consumable", "title": "Fifty", "credits": 50, "priceMinor": 499}],
             "resources": []}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        try Catalog(tenants: [tenant]).validate()
        return tenant
    }

    /// The stand-in on a port of its own, and the tenant's runtime pointed at it.
    static func withPlay(_ body: @Sendable (PlayTestKit, PlayStandIn, TenantRuntime) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-usecases-play-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for file in ["service-account.json", "push-signing-key.pem"] {
            try FileManager.default.copyItem(at: try keys.get().appendingPathComponent(file), to: directory.appendingPathComponent(file))
        }
        let kit = try PlayTestKit.initialize(directory)
        let standIn = PlayStandIn(kit: kit)
        try await Application(router: standIn.router()).test(.live) { play in
            let runtime = try await TenantRuntime(
                tenant: try tenant(),
                baseDirectory: directory,
                environment: [
                    "PLAY_SA": directory.appendingPathComponent("service-account.json").path,
                    "PLAY_BASE": "http://127.0.0.1:\(try #require(play.port))",
                ],
                clock: ManualClock(StoreBackend.now),
                httpClient: .shared,
                logger: Logger(label: "use-cases-test")
            )
            #expect(runtime.play != nil, "the tenant's Play runtime was not built")
            try await body(kit, standIn, runtime)
        }
    }

    /// Sends a purchase token as the app would (`purchaseToken`, the user proven by the caller).
    static func send(_ token: String, user: String, runtime: TenantRuntime, verify: VerifyPurchase) async throws -> VerifyPurchase.Result {
        try await verify(
            .init(
                runtime: runtime,
                userId: user,
                productId: pack,
                proofFields: ProofFields(["purchaseToken": token]),
                target: nil,
                callerProvesUser: true
            )
        )
    }

    static func verifier(_ store: any Store, clock: ManualClock) -> VerifyPurchase {
        let logger = Logger(label: "use-cases-test")
        return VerifyPurchase(store: store, prover: PurchaseProver(logger: logger, clock: clock), kinds: .all, clock: clock, logger: logger)
    }

    /// The tenant and its catalog's credit pack, stored as `berth serve` syncs and seeds them.
    static func sellPack(_ store: any Store, _ runtime: TenantRuntime) async throws {
        let now = StoreBackend.now
        let seeds = runtime.tenant.products.compactMap { CreditProduct($0, tenant: runtime.tenant, now: now) }
        _ = try await store.write { tx in
            try tx.keys.syncTenants([(id: runtime.id, name: runtime.tenant.name)], now: now)
            return try tx.credits.seed(seeds)
        }
    }
}

@Suite("Google Play through the use cases, on every backend")
struct PlayUseCasesTests {
    @Test(
        "a credit pack bought on Android: credited once to its buyer, a repeat answered as one, another user's sending refused as a replay, and the consumption owed to Google written with the credits",
        arguments: StoreBackend.available
    )
    func creditPack(backend: StoreBackend) async throws {
        try await PlayFixture.withPlay { kit, _, runtime in
            try await backend.run { store in
                try await PlayFixture.sellPack(store, runtime)
                let clock = ManualClock(StoreBackend.now)
                let verify = PlayFixture.verifier(store, clock: clock)
                let token = try kit.purchase(package: PlayFixture.package, productId: PlayFixture.pack, subscription: false, now: clock.now()).token
                func send(_ user: String) async throws -> VerifyPurchase.Result {
                    try await PlayFixture.send(token, user: user, runtime: runtime, verify: verify)
                }
                let bought = try await send("mai")
                #expect(PurchaseFixture.outcome(bought.outcome) == "applied")
                let purchase = try #require(bought.outcome.purchase)
                #expect(purchase.store == .googlePlay && purchase.environment == .sandbox && purchase.transactionId == token)
                let again = try await send("mai")
                #expect(PurchaseFixture.outcome(again.outcome) == "repeated")
                let replay = try await send("tom")
                #expect(PurchaseFixture.outcome(replay.outcome) == "replay")

                let balances = CreditQueries(store: store, clock: clock)
                #expect(try await balances.balances(runtime, userId: "mai").first?.balance == 50)
                #expect(try await balances.balances(runtime, userId: "tom").first?.balance ?? 0 == 0)
                let owed = try await store.read { try $0.play.acknowledgements(tenantId: "p", purchaseToken: token) }
                #expect(owed.map(\.action) == [.consume] && owed.first?.status == .pending)
            }
        }
    }

    @Test(
        "the consumption owed to Google is sent once across instances: Google fails twice, the next instance waits out the backoff, and a done consumption is not sent again",
        arguments: StoreBackend.available
    )
    func consumptionAcrossInstances(backend: StoreBackend) async throws {
        try await PlayFixture.withPlay { kit, standIn, runtime in
            try await backend.run { store in
                try await PlayFixture.sellPack(store, runtime)
                let clock = ManualClock(StoreBackend.now)
                let logger = Logger(label: "use-cases-test")
                let token = try kit.purchase(package: PlayFixture.package, productId: PlayFixture.pack, subscription: false, now: clock.now()).token
                let bought = try await PlayFixture.send(token, user: "mai", runtime: runtime, verify: PlayFixture.verifier(store, clock: clock))
                #expect(PurchaseFixture.outcome(bought.outcome) == "applied")
                let tenants = TenantRegistry([runtime])
                func instance(_ name: String) -> PlayJobs {
                    PlayJobs(
                        store: store,
                        tenants: tenants,
                        receive: ReceivePlayNotification(store: store, kinds: .all, clock: clock, logger: logger),
                        clock: clock,
                        logger: logger,
                        owner: name
                    )
                }
                standIn.fail("consume", count: 2)
                #expect(await instance("one").acknowledgeDue() == 1)
                let two = instance("two")
                #expect(await two.acknowledgeDue() == 0, "not due before its backoff")
                clock.advance(3)
                #expect(await two.acknowledgeDue() == 1)
                clock.advance(5)
                #expect(await two.acknowledgeDue() == 1)
                clock.advance(3600)
                #expect(await two.acknowledgeDue() == 0)
                let record = try #require(kit.record(token))
                #expect(record.consumed && record.consumeCalls == 1, "\(record)")
                let done = try #require(try await store.read { try $0.play.acknowledgements(tenantId: "p", purchaseToken: token) }.first)
                #expect(done.status == .done && done.attempts == 3)
            }
        }
    }
}

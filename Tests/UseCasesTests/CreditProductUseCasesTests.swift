import AppleSignedData
import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import TestKit
import Testing
import UseCases

/// Credit packs an operator sells, bought through the App Store, read back as an app reads them;
/// and the proofs a tenant does not take.
@Suite("Credit packs and refused proofs through the use cases, on every backend")
struct CreditProductUseCasesTests {
    @Test(
        "an operator's new pack is bought through the App Store: its credits in the balance and a purchase line in the history",
        arguments: StoreBackend.available
    )
    func packBoughtAndRead(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let pack = try await CreateCreditProduct(store: store, clock: services.clock)(
                runtime,
                productId: "pack25",
                fields: CreditProductFields(creditType: "c", credits: 25, title: "Twenty-five", priceMinor: .some(199)),
                actor: .admin(keyId: 1)
            )
            #expect(pack.credits == 25 && pack.creditType == "c")
            let duplicate = await SeasonFixture.refusal {
                _ = try await CreateCreditProduct(store: store, clock: services.clock)(
                    runtime,
                    productId: "pack25",
                    fields: CreditProductFields(creditType: "c", credits: 5, title: "Five"),
                    actor: .admin(keyId: 1)
                )
            }
            #expect(duplicate != nil, "a second pack with the same id is refused")
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("pack25", id: "2000000000000401"))
            let bought = try await services.pay(runtime, user: "mai", booking: nil, jws: jws, product: "pack25")
            #expect(PurchaseFixture.outcome(bought.outcome) == "applied")
            let queries = CreditQueries(store: store, clock: services.clock)
            let balances = try await queries.balances(runtime, userId: "mai")
            #expect(balances.first { $0.creditType == "c" }?.balance == 25)
            let history = try await queries.history(runtime, userId: "mai", filter: LedgerFilter(), page: Page())
            #expect(history.items.map(\.type) == [.purchase] && history.items.first?.amount == 25)
        }
    }

    @Test("a pack's new credit count applies to later purchases; one bought before keeps what it gave", arguments: StoreBackend.available)
    func packChanged(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            _ = try await CreateCreditProduct(store: store, clock: services.clock)(
                runtime,
                productId: "pack25",
                fields: CreditProductFields(creditType: "c", credits: 25, title: "Twenty-five"),
                actor: .admin(keyId: 1)
            )
            let first = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("pack25", id: "2000000000000402"))
            _ = try await services.pay(runtime, user: "mai", booking: nil, jws: first, product: "pack25")
            let changed = try await UpdateCreditProduct(store: store, clock: services.clock)(
                runtime,
                productId: "pack25",
                fields: CreditProductFields(credits: 30),
                actor: .admin(keyId: 1)
            )
            #expect(changed.credits == 30)
            let second = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("pack25", id: "2000000000000403"))
            _ = try await services.pay(runtime, user: "mai", booking: nil, jws: second, product: "pack25")
            let balances = try await CreditQueries(store: store, clock: services.clock).balances(runtime, userId: "mai")
            #expect(balances.first { $0.creditType == "c" }?.balance == 55)
            let missing = await SeasonFixture.refusal {
                _ = try await UpdateCreditProduct(store: store, clock: services.clock)(
                    runtime,
                    productId: "ghost",
                    fields: CreditProductFields(credits: 1),
                    actor: .admin(keyId: 1)
                )
            }
            #expect(missing != nil, "an unknown pack is not changed")
        }
    }

    @Test("a Production transaction for an app that takes Sandbox only is refused, and nothing is recorded", arguments: StoreBackend.available)
    func productionRefused(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let booking = try await services.book(runtime, user: "ana", day: 15)
            let production = TransactionPayload.testPurchase(
                bundleId: PurchaseFixture.bundleId,
                productId: "rental.day",
                transactionId: "2000000000000404",
                environment: .production,
                purchaseDate: PurchaseFixture.now
            )
            let jws = try PurchaseFixture.signing.ca.signTransaction(production)
            let refused = await SeasonFixture.refusal { _ = try await services.pay(runtime, user: "ana", booking: booking.id, jws: jws) }
            #expect(refused != nil, "Production is refused where the catalog lists Sandbox only")
            #expect(try await services.booking(booking.id)?.status == .pendingPayment)
            let purchases = try await store.read { try $0.purchases.purchases(tenantId: "a", page: Page()) }
            #expect(purchases.total == 0)
        }
    }

    @Test("a transaction of another app (bundle id) does not pay this app's booking", arguments: StoreBackend.available)
    func otherApp(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let booking = try await services.book(runtime, user: "ana", day: 17)
            let foreign = TransactionPayload.testPurchase(
                bundleId: "com.example.other",
                productId: "rental.day",
                transactionId: "2000000000000405",
                purchaseDate: PurchaseFixture.now
            )
            let jws = try PurchaseFixture.signing.ca.signTransaction(foreign)
            let refused = await SeasonFixture.refusal { _ = try await services.pay(runtime, user: "ana", booking: booking.id, jws: jws) }
            #expect(refused != nil)
            #expect(try await services.booking(booking.id)?.status == .pendingPayment)
        }
    }

    @Test("restoring needs the App Store Server API: an app without its key is told so", arguments: StoreBackend.available)
    func restoreNeedsServerAPI(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let restore = RestorePurchases(store: store, claims: services.verify.claims, logger: Logger(label: "use-cases-test"))
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("pack10", id: "2000000000000406"))
            let refused = await SeasonFixture.refusal { _ = try await restore(runtime: runtime, userId: "ana", proof: .jws(jws)) }
            #expect(refused == .appleNotConfigured)
        }
    }
}

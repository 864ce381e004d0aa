import AppleSignedData
import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import Synchronization
import TestKit
import Testing
import UseCases

/// What the cordova plugin's validator is answered from (``ValidateForPlugin``): the proof applied,
/// then what the user owns, on every backend.
/// The transactions whose history a validation caught up.
final class CaughtUp: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ transaction: String) { list.withLock { $0.append(transaction) } }
    var transactions: [String] { list.withLock { $0 } }
}

@Suite("The cordova plugin's validation through its use case, on every backend")
struct PluginUseCasesTests {
    static func validator(_ services: PurchaseFixture.Services, caughtUp: CaughtUp) -> ValidateForPlugin {
        let logger = Logger(label: "use-cases-test")
        return ValidateForPlugin(
            verifyPurchase: services.verify,
            claimReceipt: ClaimReceipt(
                store: services.store,
                prover: PurchaseProver(logger: logger, clock: services.clock),
                claims: services.verify.claims,
                logger: logger
            ),
            userEntitlements: UserEntitlements(store: services.store, clock: services.clock),
            catchUp: { result, _, _, _ in
                caughtUp.add(result.outcome.purchase?.transactionId ?? "-")
            }
        )
    }

    @Test("a StoreKit 2 subscription: owned with its expiry; the customer's history is caught up once for it", arguments: StoreBackend.available)
    func subscription(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let caughtUp = CaughtUp()
            let expires = PurchaseFixture.now.addingTimeInterval(30 * 86_400)
            let transaction = TransactionPayload.testPurchase(
                bundleId: PurchaseFixture.bundleId,
                productId: "premium.monthly",
                transactionId: "2000000000000501",
                type: .autoRenewableSubscription,
                purchaseDate: PurchaseFixture.now,
                expiresDate: expires
            )
            let jws = try PurchaseFixture.signing.ca.signTransaction(transaction)
            let result = try await Self.validator(services, caughtUp: caughtUp)(
                .init(
                    runtime: runtime,
                    userId: "ana",
                    proof: .storeKit2(jws: jws, productId: "premium.monthly"),
                    bookingId: nil,
                    callerProvesUser: true
                )
            )
            #expect(result.named.map { PurchaseFixture.outcome($0.outcome) } == "applied")
            #expect(result.owned.subscriptions.map(\.originalTransactionId) == ["2000000000000501"])
            #expect(result.owned.subscriptions.first?.expiresAt == expires)
            #expect(caughtUp.transactions == ["2000000000000501"])
        }
    }

    @Test("a booking named by the plugin is paid; validated again it is a repeat and stays paid once", arguments: StoreBackend.available)
    func booking(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let caughtUp = CaughtUp()
            let booking = try await services.book(runtime, user: "ana", day: 19)
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("rental.day", id: "2000000000000502"))
            let validate = Self.validator(services, caughtUp: caughtUp)
            let command = ValidateForPlugin.Command(
                runtime: runtime,
                userId: "ana",
                proof: .storeKit2(jws: jws, productId: "rental.day"),
                bookingId: booking.id,
                callerProvesUser: true
            )
            let first = try await validate(command)
            #expect(first.named.map { PurchaseFixture.outcome($0.outcome) } == "applied")
            #expect(first.owned.purchases.map(\.transactionId) == ["2000000000000502"])
            let again = try await validate(command)
            #expect(again.named.map { PurchaseFixture.outcome($0.outcome) } == "repeated")
            #expect(try await services.booking(booking.id)?.status == .confirmed)
            let purchases = try await store.read { try $0.purchases.purchases(tenantId: "a", page: Page()) }
            #expect(purchases.total == 1)
        }
    }
}

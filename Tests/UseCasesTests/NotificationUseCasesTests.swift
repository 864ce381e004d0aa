import AppleSignedData
import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import TestKit
import Testing
import UseCases

/// What Apple's notifications may and may not do, and a lifetime unlock from purchase to refund,
/// through the use cases on every backend.
@Suite("Apple's notifications and unlocks through the use cases, on every backend")
struct NotificationUseCasesTests {
    @Test("a lifetime unlock grants its entitlement with no end; Apple's refund revokes it", arguments: StoreBackend.available)
    func unlockAndRefund(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            var transaction = TransactionPayload.testPurchase(
                bundleId: PurchaseFixture.bundleId,
                productId: "pro.lifetime",
                transactionId: "2000000000000601",
                type: .nonConsumable,
                purchaseDate: PurchaseFixture.now
            )
            let bought = try await services.pay(
                runtime,
                user: "ana",
                booking: nil,
                jws: try PurchaseFixture.signing.ca.signTransaction(transaction),
                product: "pro.lifetime"
            )
            #expect(PurchaseFixture.outcome(bought.outcome) == "applied")
            let entitlements = UserEntitlements(store: store, clock: services.clock)
            let held = try await entitlements(runtime: runtime, userId: "ana").entitlements.first { $0.entitlement == "pro" }
            #expect(held?.active == true && held?.expiresAt == nil, "a lifetime unlock has no end")
            services.clock.advance(365 * 86_400)
            #expect(try await entitlements(runtime: runtime, userId: "ana").entitlements.first { $0.entitlement == "pro" }?.active == true)
            let refund = try PurchaseFixture.refund(of: &transaction, at: services.clock.now())
            _ = try await services.notifications(signedPayload: refund, runtime: runtime)
            let after = try await entitlements(runtime: runtime, userId: "ana").entitlements.first { $0.entitlement == "pro" }
            #expect(after?.active != true, "a refunded unlock grants nothing")
        }
    }

    @Test(
        "a notification of a transaction Berth never saw is recorded, changes nobody's state, and is recognised when sent again",
        arguments: StoreBackend.available
    )
    func unknownTransaction(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            var transaction = PurchaseFixture.transaction("pack10", id: "2000000000000602")
            let refund = try PurchaseFixture.refund(of: &transaction, at: PurchaseFixture.now)
            let first = try await services.notifications(signedPayload: refund, runtime: runtime)
            #expect(!first.duplicate)
            let again = try await services.notifications(signedPayload: refund, runtime: runtime)
            #expect(again.duplicate)
            let notifications = try await store.read { try $0.notifications.notifications(tenantId: "a", page: Page()) }
            #expect(notifications.total == 1, "one notification, recorded once")
            let purchases = try await store.read { try $0.purchases.purchases(tenantId: "a", page: Page()) }
            #expect(purchases.total == 0, "a refund of nothing Berth applied creates nothing")
        }
    }

    @Test(
        "a notification for another app, or signed by a CA the tenant does not trust, is refused and not recorded",
        arguments: StoreBackend.available
    )
    func refusedNotifications(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        let stranger = try TestCA.generate(.init(now: PurchaseFixture.now.addingTimeInterval(-86_400)))
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let otherApp = try PurchaseFixture.signing.ca.signNotification(
                type: .refund,
                bundleId: "com.example.other",
                transaction: TransactionPayload.testPurchase(
                    bundleId: "com.example.other",
                    productId: "pack10",
                    transactionId: "2000000000000603",
                    purchaseDate: PurchaseFixture.now
                ),
                signedDate: PurchaseFixture.now
            )
            let wrongApp = await SeasonFixture.refusal { _ = try await services.notifications(signedPayload: otherApp, runtime: runtime) }
            #expect(wrongApp != nil, "another app's notification is refused")
            let untrusted = try stranger.signNotification(
                type: .refund,
                bundleId: PurchaseFixture.bundleId,
                transaction: PurchaseFixture.transaction("pack10", id: "2000000000000604"),
                signedDate: PurchaseFixture.now
            )
            let forged = await SeasonFixture.refusal { _ = try await services.notifications(signedPayload: untrusted, runtime: runtime) }
            #expect(forged != nil, "a notification signed by another CA is refused")
            let notifications = try await store.read { try $0.notifications.notifications(tenantId: "a", page: Page()) }
            #expect(notifications.total == 0)
        }
    }

    @Test(
        "a credit pack refunded after part of it was spent: its credits are taken back, what was spent becomes debt",
        arguments: StoreBackend.available
    )
    func refundAfterSpending(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            try await PurchaseFixture.sellPack10(store)
            var transaction = PurchaseFixture.transaction("pack10", id: "2000000000000605")
            _ = try await services.pay(
                runtime,
                user: "ana",
                booking: nil,
                jws: try PurchaseFixture.signing.ca.signTransaction(transaction),
                product: "pack10"
            )
            let held = try await ReserveCredits(store: store, clock: services.clock)(
                runtime,
                userId: "ana",
                amount: 6,
                creditType: nil,
                reference: nil,
                profileId: nil
            )
            _ = try await CommitReservation(store: store, clock: services.clock)(
                runtime,
                userId: "ana",
                reservationId: held.reservation.id,
                actor: .user("ana")
            )
            services.clock.advance(60)
            let refund = try PurchaseFixture.refund(of: &transaction, at: PurchaseFixture.now.addingTimeInterval(60), signedAt: services.clock.now())
            _ = try await services.notifications(signedPayload: refund, runtime: runtime)
            let summary = try await CreditQueries(store: store, clock: services.clock).balances(runtime, userId: "ana").first { $0.creditType == "c" }
            #expect(summary?.available == 0, "nothing of a refunded pack can be spent: \(String(describing: summary))")
            #expect(summary.map { $0.balance - $0.debt } == -6, "the 6 spent are owed: \(String(describing: summary))")
        }
    }
}

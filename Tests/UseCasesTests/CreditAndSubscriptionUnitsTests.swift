import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

@testable import UseCases

/// Credit packs and subscriptions through the shipped units of work (``Claims/claim``),
/// racing on every backend: the signup bonus and the subscription's owner are decided in the plan
/// and saved with it, so the store's locks and unique keys must keep them once.
@Suite("Credit and subscription claims on every backend")
struct CreditAndSubscriptionUnitsTests {
    static let now = StoreBackend.now

    static func tenant() throws -> Tenant {
        let json = """
            {"id": "a", "name": "A", "currency": "EUR", "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "credits": {"types": ["c"], "signupBonus": {"creditType": "c", "amount": 3}},
             "products": [{"id": "premium.monthly", "kind": "subscription", "type": "Auto-Renewable Subscription", "title": "Premium",
                           "entitlement": "premium", "tier": "standard", "cycle": "month"}],
             "resources": []}
            """
        return try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
    }

    static func request(_ tenant: Tenant, user: String, product: String, transaction: String) -> PurchaseRequest {
        PurchaseRequest(
            tenant: tenant,
            policy: PurchasePolicy(),
            emitsEvents: true,
            userId: user,
            productId: product,
            transactionId: transaction,
            named: nil
        )
    }

    static func outcomeName(_ outcome: PurchaseOutcome?) -> String {
        switch outcome {
        case .applied?: "applied"
        case .replay?: "replay"
        case .refused(let code, _)?: code.rawValue
        default: "other"
        }
    }

    @Test(
        "credit packs: 8 users racing for one transaction: one pack, seven replays, and every user's signup bonus exactly once",
        arguments: StoreBackend.available
    )
    func creditRace(backend: StoreBackend) async throws {
        let tenant = try Self.tenant()
        try await backend.run { store in
            try await store.write { tx in
                try tx.credits.insert(
                    CreditProduct(
                        tenantId: "a",
                        productId: "pack10",
                        creditType: "c",
                        credits: 10,
                        title: "Ten",
                        currency: "EUR",
                        createdAt: Self.now,
                        updatedAt: Self.now
                    )
                )
            }
            let outcomes = await withTaskGroup(of: String.self) { group in
                for n in 0..<8 {
                    group.addTask {
                        let proven = ProvenTransaction(
                            transactionId: "t1",
                            originalTransactionId: "t1",
                            productId: "pack10",
                            environment: .sandbox,
                            purchasedAt: Self.now,
                            revoked: false,
                            appAccountToken: nil,
                            proofHash: "h1"
                        )
                        let claim = PurchaseClaim(proven, tenantId: "a", userId: "u\(n)", target: .credits(type: "c"), now: Self.now)
                        let result = try? await store.write { tx in
                            try Claims.claim(
                                claim,
                                proven: proven,
                                request: Self.request(tenant, user: "u\(n)", product: "pack10", transaction: "t1"),
                                kind: CreditsKind(),
                                tx: tx,
                                now: Self.now
                            )
                        }
                        return Self.outcomeName(result?.outcome)
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "applied" }.count == 1 && outcomes.filter { $0 == "replay" }.count == 7, "\(outcomes)")
            let balances = try await store.read { tx in
                try (0..<8).map {
                    try tx.credits.account(tenantId: "a", userId: "u\($0)", creditType: "c", now: Self.now, forUpdate: false).balance.balance
                }
            }
            #expect(balances.sorted() == [3, 3, 3, 3, 3, 3, 3, 13], "the bonus for everyone, the pack once")
            // The winner's retry repeats and grants no second bonus.
            let winner = try #require((0..<8).first { balances[$0] == 13 })
            let proven = ProvenTransaction(
                transactionId: "t1",
                originalTransactionId: "t1",
                productId: "pack10",
                environment: .sandbox,
                purchasedAt: Self.now,
                revoked: false,
                appAccountToken: nil,
                proofHash: "h1"
            )
            let again = try await store.write { tx in
                try Claims.claim(
                    PurchaseClaim(proven, tenantId: "a", userId: "u\(winner)", target: .credits(type: "c"), now: Self.now),
                    proven: proven,
                    request: Self.request(tenant, user: "u\(winner)", product: "pack10", transaction: "t1"),
                    kind: CreditsKind(),
                    tx: tx,
                    now: Self.now
                )
            }
            guard case .repeated = again.outcome, case .credits(let summary) = again.state else {
                Issue.record("a repeat: \(again.outcome)")
                return
            }
            #expect(summary.balance == 13)
        }
    }

    @Test(
        "the signup bonus is read in a credit claim's load, never written there: a read-only unit of work loads it, it stays due until a saved change grants it, eight first calls of one user grant it once, and a second grant fails whole",
        arguments: StoreBackend.available
    )
    func bonusLoadedNotWritten(backend: StoreBackend) async throws {
        let tenant = try Self.tenant()
        try await backend.run { store in
            try await PurchaseFixture.sellPack10(store)
            let proven = ProvenTransaction(
                transactionId: "t9",
                originalTransactionId: "t9",
                productId: "pack10",
                environment: .sandbox,
                purchasedAt: Self.now,
                revoked: false,
                appAccountToken: nil,
                proofHash: "h9"
            )
            let request = Self.request(tenant, user: "solo", product: "pack10", transaction: "t9")
            // A read-only unit of work refuses writes: the load would fail here if it wrote the bonus.
            let bonus = try await store.read { tx in
                var claim = PurchaseClaim(proven, tenantId: "a", userId: "solo", target: .credits(type: "c"), now: Self.now)
                return try CreditsKind().load(&claim, proven: proven, request: request, tx: tx, now: Self.now).bonus
            }
            #expect(bonus?.amount == 3)
            #expect(try await !store.read { try $0.credits.hasBonus(tenantId: "a", userId: "solo") }, "loading recorded nothing")
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        _ = try? await store.write { tx in
                            try tx.grantSignupBonusIfDue(tenant: tenant, userId: "solo", emitsEvents: false, now: Self.now)
                        }
                    }
                }
            }
            func balance() async throws -> Int64 {
                try await store.read { tx in
                    try tx.credits.account(tenantId: "a", userId: "solo", creditType: "c", now: Self.now, forUpdate: false).balance.balance
                }
            }
            #expect(try await balance() == 3, "eight first calls: the bonus once")
            #expect(try await store.read { try $0.credits.hasBonus(tenantId: "a", userId: "solo") })
            // A change that grants the bonus again (a caller that skipped the load) writes nothing.
            let due = try #require(bonus)
            await #expect(throws: SignupBonusRecordedTwice.self) {
                try await store.write { tx in try tx.save(SignupBonusRules.change(due, now: Self.now), now: Self.now) }
            }
            #expect(try await balance() == 3)
        }
    }

    static func period(_ user: String) -> (PurchaseClaim, ProvenTransaction) {
        let expires = now.addingTimeInterval(30 * 86_400)
        let facts = SubscriptionFacts(
            originalTransactionId: "s1",
            environment: .sandbox,
            signedAt: now,
            transaction: .init(transactionId: "s1", productId: "premium.monthly", purchasedAt: now, expiresAt: expires),
            renewal: .init(autoRenew: true),
            source: "test"
        )
        let proven = ProvenTransaction(
            transactionId: "s1",
            originalTransactionId: "s1",
            productId: "premium.monthly",
            environment: .sandbox,
            purchasedAt: now,
            revoked: false,
            appAccountToken: nil,
            proofHash: "hs",
            subscription: facts
        )
        return (PurchaseClaim(proven, tenantId: "a", userId: user, target: .subscription(originalTransactionId: "s1"), now: now), proven)
    }

    @Test(
        "subscriptions: 6 users racing for one subscription's first period: one owns and uses it, the others are refused and recorded",
        arguments: StoreBackend.available
    )
    func subscriptionRace(backend: StoreBackend) async throws {
        let tenant = try Self.tenant()
        try await backend.run { store in
            let outcomes = await withTaskGroup(of: String.self) { group in
                for n in 0..<6 {
                    group.addTask {
                        let (claim, proven) = Self.period("u\(n)")
                        let result = try? await store.write { tx in
                            try Claims.claim(
                                claim,
                                proven: proven,
                                request: Self.request(tenant, user: "u\(n)", product: "premium.monthly", transaction: "s1"),
                                kind: SubscriptionKind(),
                                tx: tx,
                                now: Self.now
                            )
                        }
                        return Self.outcomeName(result?.outcome)
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "applied" }.count == 1, "\(outcomes)")
            #expect(outcomes.filter { $0 == ErrorCode.linkedToOtherAccount.rawValue }.count == 5, "\(outcomes)")
            let (record, cheats) = try await store.read { tx in
                (
                    try tx.subscriptions.subscription(tenantId: "a", originalTransactionId: "s1", forUpdate: false),
                    try tx.subscriptions.cheats(tenantId: "a", page: Page()).total
                )
            }
            let owner = try #require(record?.userId)
            #expect(cheats == 5)
            let membership = try await store.read { try $0.subscriptions.membership(tenantId: "a", userId: owner) }
            #expect(membership?.originalTransactionId == "s1" && membership?.tier == "standard")
            // The owner's second claim of the same period refreshes and answers it in use.
            let (claim, proven) = Self.period(owner)
            let again = try await store.write { tx in
                try Claims.claim(
                    claim,
                    proven: proven,
                    request: Self.request(tenant, user: owner, product: "premium.monthly", transaction: "s1"),
                    kind: SubscriptionKind(),
                    tx: tx,
                    now: Self.now
                )
            }
            guard case .repeated = again.outcome, case .subscription(let subscription, let inUse) = again.state else {
                Issue.record("a repeat answering the subscription: \(again.outcome)")
                return
            }
            #expect(subscription.userId == owner && inUse)
        }
    }
}

import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

/// The subscription ports of the store contract: records round-trip and update in place, one owner
/// under racing claims, one membership per account and per Apple subscription, and the cheat,
/// unlink and receipt rows. Runs against every backend of `StoreBackend.available`.
extension StoreConformance {
    static func subscription(_ id: String, tenant: String = "a", owner: String? = nil, purchased: Double = 0) -> Subscription {
        Subscription(
            tenantId: tenant,
            originalTransactionId: id,
            environment: .sandbox,
            productId: "monthly",
            entitlement: "premium",
            tier: "standard",
            cycle: "month",
            latestTransactionId: id,
            purchasedAt: now.addingTimeInterval(purchased),
            expiresAt: now.addingTimeInterval(purchased + 30 * 86_400),
            originalPurchasedAt: now,
            autoRenew: true,
            autoRenewProductId: "monthly",
            inBillingRetry: true,
            gracePeriodExpiresAt: now.addingTimeInterval(86_400),
            expirationIntent: 2,
            priceIncreaseStatus: 1,
            revokedAt: nil,
            upgraded: false,
            ended: false,
            userId: owner,
            signedAt: now,
            createdAt: now,
            updatedAt: now
        )
    }

    @Test("subscriptions round-trip every field, update in place, and list per owner, newest first", arguments: StoreBackend.available)
    func subscriptionRecords(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let first = Self.subscription("s1", owner: "u", purchased: 0)
            try await store.write { tx in
                try tx.subscriptions.save(first)
                try tx.subscriptions.save(Self.subscription("s2", owner: "u", purchased: 100))
                try tx.subscriptions.save(Self.subscription("s3", owner: "v"))
                try tx.subscriptions.save(Self.subscription("s1", tenant: "b", owner: "u"))
            }
            let loaded = try await store.read { try $0.subscriptions.subscription(tenantId: "a", originalTransactionId: "s1", forUpdate: false) }
            #expect(loaded == first)
            var changed = first
            changed.revokedAt = Self.now.addingTimeInterval(5)
            changed.autoRenew = nil
            changed.ended = true
            changed.userId = nil
            changed.eligibleWinBackOfferIds = ["winback.50", "winback \"quoted\", with commas"]
            changed.familyShared = true
            let saved = changed
            try await store.write { try $0.subscriptions.save(saved) }
            #expect(try await store.read { try $0.subscriptions.subscription(tenantId: "a", originalTransactionId: "s1", forUpdate: false) } == saved)
            var owned2 = saved
            owned2.tenantId = "b"
            owned2.originalTransactionId = "s9"
            owned2.userId = "w"
            let sharedOwned = owned2
            try await store.write { try $0.subscriptions.save(sharedOwned) }
            let sources = try await store.readStatement { try $0.userState.entitlementSources(tenantId: "b", userId: "w", waitingTokens: []) }
            #expect(sources.owned == [sharedOwned], "the one-statement read carries the offers and the sharing too")
            let owned = try await store.read { try $0.subscriptions.owned(tenantId: "a", userId: "u", page: Page(limit: 1)) }
            #expect(owned.total == 1 && owned.items.map(\.originalTransactionId) == ["s2"], "s1 has no owner any more")
            let pastTheEnd = try await store.read { try $0.subscriptions.owned(tenantId: "a", userId: "u", page: Page(limit: 1, offset: 5)) }
            #expect(pastTheEnd.items.isEmpty && pastTheEnd.total == 1, "a page past the end still counts the owner's subscriptions")
            let all = try await store.read { try $0.subscriptions.subscriptions(tenantId: "a", userId: nil, page: Page()) }
            #expect(all.total == 3)
        }
    }

    @Test("10 accounts racing to claim one unowned subscription: one owns it, nine cheat attempts are recorded", arguments: StoreBackend.available)
    func racingClaims(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try await store.write { try $0.subscriptions.save(Self.subscription("s")) }
            let winners = await withTaskGroup(of: Bool.self) { group in
                for n in 0..<10 {
                    group.addTask {
                        (try? await store.write { tx -> Bool in
                            var s = try #require(try tx.subscriptions.subscription(tenantId: "a", originalTransactionId: "s", forUpdate: true))
                            if let owner = s.userId, owner != "user\(n)" {
                                try tx.subscriptions.insert(
                                    SubscriptionCheat(
                                        id: RecordID.next(),
                                        tenantId: "a",
                                        userId: "user\(n)",
                                        originalTransactionId: "s",
                                        ownerUserId: owner,
                                        source: "race",
                                        at: Self.now
                                    )
                                )
                                return false
                            }
                            s.userId = "user\(n)"
                            try tx.subscriptions.save(s)
                            return true
                        }) ?? false
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(winners == 1)
            let cheats = try await store.read { try $0.subscriptions.cheats(tenantId: "a", page: Page()) }
            #expect(cheats.total == 9)
            let owner = try await store.read {
                try $0.subscriptions.subscription(tenantId: "a", originalTransactionId: "s", forUpdate: false)?.userId
            }
            #expect(cheats.items.allSatisfy { $0.ownerUserId == owner && $0.userId != owner })
        }
    }

    @Test("one membership per account, one account per Apple subscription; unlink archives and kept receipts", arguments: StoreBackend.available)
    func memberships(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let apple = Membership(
                tenantId: "a",
                userId: "u",
                originalTransactionId: "s",
                payMethod: "apple",
                tier: "standard",
                cycle: "month",
                expiresAt: Self.now,
                autoRenew: true,
                updatedAt: Self.now
            )
            try await store.write { try $0.subscriptions.save(apple) }
            #expect(try await store.read { try $0.subscriptions.membership(tenantId: "a", originalTransactionId: "s") } == apple)
            var other = apple
            other.userId = "v"
            let second = other
            await #expect(throws: (any Error).self, "a second account cannot use the same Apple subscription") {
                try await store.write { try $0.subscriptions.save(second) }
            }
            var paidElsewhere = apple
            paidElsewhere.originalTransactionId = nil
            paidElsewhere.payMethod = "alipay"
            let elsewhere = paidElsewhere
            try await store.write { try $0.subscriptions.save(elsewhere) }
            #expect(
                try await store.read { try $0.subscriptions.membership(tenantId: "a", userId: "u") } == elsewhere,
                "one row per account, replaced"
            )
            #expect(try await store.read { try $0.subscriptions.membership(tenantId: "a", originalTransactionId: "s") } == nil)
            try await store.write { try $0.subscriptions.deleteMembership(tenantId: "a", userId: "u") }
            #expect(try await store.read { try $0.subscriptions.membership(tenantId: "a", userId: "u") } == nil)

            for n in 0..<3 {
                try await store.write {
                    try $0.subscriptions.insert(
                        UnlinkArchive(
                            id: RecordID.next(),
                            tenantId: "a",
                            userId: "u",
                            originalTransactionId: "s\(n)",
                            actor: "user:u",
                            membershipSnapshot: n == 0 ? nil : "{\"n\":\(n)}",
                            at: Self.now.addingTimeInterval(Double(n))
                        )
                    )
                }
            }
            let unlinks = try await store.read { try $0.subscriptions.unlinks(tenantId: "a", page: Page()) }
            #expect(unlinks.items.map(\.originalTransactionId) == ["s2", "s1", "s0"])
            #expect(unlinks.items.last?.membershipSnapshot == nil)
            #expect(try await store.read { try $0.subscriptions.unlinks(tenantId: "b", page: Page()) }.total == 0)

            try await store.write {
                try $0.subscriptions.saveReceipt(tenantId: "a", originalTransactionId: "s", environment: .sandbox, receipt: "old", at: Self.now)
            }
            try await store.write {
                try $0.subscriptions.saveReceipt(tenantId: "a", originalTransactionId: "s", environment: .sandbox, receipt: "new", at: Self.now)
            }
            #expect(try await store.read { try $0.subscriptions.receipt(tenantId: "a", originalTransactionId: "s") } == "new")
            #expect(try await store.read { try $0.subscriptions.receipt(tenantId: "b", originalTransactionId: "s") } == nil)
        }
    }
}

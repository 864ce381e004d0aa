import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing
import UseCases

/// Google Play's tables on every backend: what Berth owes Google for each purchase token, once;
/// leases that keep two instances from calling Google for the same row; the alert summary; sweep
/// marks; and a subscription's store.
@Suite("PlayConformance")
struct PlayConformance {
    typealias Backend = StoreConformance.StoreBackend
    static let now = StoreConformance.now

    static func owed(
        _ token: String,
        tenant: String = "a",
        action: PlayAcknowledgement.Action = .consume,
        due: Date = now,
        purchased: Date = now
    ) -> PlayAcknowledgement {
        PlayAcknowledgement(
            id: RecordID.next(),
            tenantId: tenant,
            packageName: "com.example.app",
            googleProductId: "credits.pack",
            purchaseToken: token,
            action: action,
            purchaseId: RecordID.next(),
            nextAttemptAt: due,
            purchasedAt: purchased,
            createdAt: now
        )
    }

    @Test("an acknowledgement is owed once per token and action; rows of other tenants stay apart", arguments: Backend.available)
    func owedOnce(backend: Backend) async throws {
        try await backend.scope { store in
            #expect(try await store.write { try $0.play.enqueue(Self.owed("t1")) })
            #expect(try await store.write { try $0.play.enqueue(Self.owed("t1")) } == false)
            #expect(try await store.write { try $0.play.enqueue(Self.owed("t1", action: .acknowledgeProduct)) })
            #expect(try await store.write { try $0.play.enqueue(Self.owed("t1", tenant: "b")) })
            let rows = try await store.read { try $0.play.acknowledgements(tenantId: "a", purchaseToken: "t1") }
            #expect(Set(rows.map(\.action)) == [.consume, .acknowledgeProduct] && rows.count == 2)
            #expect(
                rows.allSatisfy {
                    $0.status == .pending && $0.attempts == 0 && $0.packageName == "com.example.app" && $0.googleProductId == "credits.pack"
                }
            )
            #expect(try await store.read { try $0.play.acknowledgements(tenantId: "b", purchaseToken: "t1") }.count == 1)
        }
    }

    @Test(
        "due rows are leased to one owner until the lease ends; an attempt releases the lease and schedules the next; done rows are never due again",
        arguments: Backend.available
    )
    func leases(backend: Backend) async throws {
        try await backend.scope { store in
            let later = Self.now.addingTimeInterval(30)
            _ = try await store.write { try $0.play.enqueue(Self.owed("due")) }
            _ = try await store.write { try $0.play.enqueue(Self.owed("not-yet", due: later)) }
            let claimed = try await store.write {
                try $0.play.claimDue(now: Self.now, limit: 10, owner: "A", leaseUntil: Self.now.addingTimeInterval(60))
            }
            #expect(claimed.map(\.purchaseToken) == ["due"])
            // Another instance at the same moment finds nothing (A holds the lease; the other is not due).
            #expect(
                try await store.write { try $0.play.claimDue(now: Self.now, limit: 10, owner: "B", leaseUntil: Self.now.addingTimeInterval(60)) }
                    .isEmpty
            )
            // A crashed: once its lease ends, B takes the row (and the other one, due by then).
            let taken = try await store.write {
                try $0.play.claimDue(now: Self.now.addingTimeInterval(61), limit: 10, owner: "B", leaseUntil: Self.now.addingTimeInterval(121))
            }
            #expect(Set(taken.map(\.purchaseToken)) == ["due", "not-yet"])
            // B's attempt fails: pending, one attempt, due again later, lease released.
            let row = try #require(taken.first { $0.purchaseToken == "due" })
            try await store.write {
                try $0.play.record(
                    row,
                    status: .pending,
                    error: "google play 503",
                    nextAttemptAt: Self.now.addingTimeInterval(70),
                    now: Self.now.addingTimeInterval(61)
                )
            }
            var read = try #require(try await store.read { try $0.play.acknowledgements(tenantId: "a", purchaseToken: "due") }.first)
            #expect(
                read.status == .pending && read.attempts == 1 && read.lastError == "google play 503"
                    && read.nextAttemptAt == Self.now.addingTimeInterval(70)
            )
            #expect(
                try await store.write {
                    try $0.play.claimDue(now: Self.now.addingTimeInterval(69), limit: 10, owner: "C", leaseUntil: Self.now.addingTimeInterval(200))
                }
                .map(\.purchaseToken).contains("due") == false
            )
            let again = try await store.write {
                try $0.play.claimDue(now: Self.now.addingTimeInterval(70), limit: 10, owner: "C", leaseUntil: Self.now.addingTimeInterval(200))
            }
            let state = try await store.write {
                try $0.play.claimDue(now: Self.now.addingTimeInterval(1000), limit: 10, owner: "Z", leaseUntil: Self.now.addingTimeInterval(2000))
            }.map(\.purchaseToken)
            try #require(again.map(\.purchaseToken) == ["due"], "\(state)")
            try await store.write {
                try $0.play.record(
                    again[0],
                    status: .done,
                    error: nil,
                    nextAttemptAt: Self.now.addingTimeInterval(70),
                    now: Self.now.addingTimeInterval(71)
                )
            }
            read = try #require(try await store.read { try $0.play.acknowledgements(tenantId: "a", purchaseToken: "due") }.first)
            #expect(read.status == .done && read.attempts == 2 && read.doneAt == Self.now.addingTimeInterval(71))
            // A late answer of an earlier attempt changes nothing once it is done.
            try await store.write {
                try $0.play.record(row, status: .pending, error: "late", nextAttemptAt: Self.now, now: Self.now.addingTimeInterval(72))
            }
            #expect(try await store.read { try $0.play.acknowledgements(tenantId: "a", purchaseToken: "due") }.first?.status == .done)
            #expect(
                try await store.write {
                    try $0.play.claimDue(
                        now: Self.now.addingTimeInterval(10_000),
                        limit: 10,
                        owner: "D",
                        leaseUntil: Self.now.addingTimeInterval(20_000)
                    )
                }
                .map(\.purchaseToken) == ["not-yet"]
            )
        }
    }

    @Test("instances claiming at once never get the same row", arguments: Backend.available)
    func concurrentClaims(backend: Backend) async throws {
        try await backend.scope { store in
            for index in 0..<40 { _ = try await store.write { try $0.play.enqueue(Self.owed("token-\(index)")) } }
            let batches = try await withThrowingTaskGroup(of: [String].self) { group in
                for owner in 0..<4 {
                    group.addTask {
                        var mine: [String] = []
                        for _ in 0..<5 {
                            mine += try await store.write {
                                try $0.play.claimDue(now: Self.now, limit: 3, owner: "owner-\(owner)", leaseUntil: Self.now.addingTimeInterval(60))
                            }
                            .map(\.purchaseToken)
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
            let all = batches.flatMap { $0 }
            #expect(all.count == Set(all).count, "a row was leased twice: \(all.sorted())")
            #expect(all.count == 40)
        }
    }

    @Test("the alert summary counts pending rows per tenant, those purchased before the alert age, and the oldest", arguments: Backend.available)
    func summary(backend: Backend) async throws {
        try await backend.scope { store in
            _ = try await store.write { try $0.play.enqueue(Self.owed("old", purchased: Self.now.addingTimeInterval(-30 * 3600))) }
            _ = try await store.write { try $0.play.enqueue(Self.owed("new", purchased: Self.now.addingTimeInterval(-60))) }
            let done = Self.owed("done", purchased: Self.now.addingTimeInterval(-40 * 3600))
            _ = try await store.write { try $0.play.enqueue(done) }
            try await store.write { try $0.play.record(done, status: .done, error: nil, nextAttemptAt: Self.now, now: Self.now) }
            _ = try await store.write { try $0.play.enqueue(Self.owed("b", tenant: "b")) }
            let summary = try await store.read { try $0.play.pendingSummary(alertBefore: Self.now.addingTimeInterval(-24 * 3600)) }
            #expect(summary.count == 2)
            let a = try #require(summary.first { $0.tenantId == "a" })
            #expect(a.pending == 2 && a.overdue == 1 && a.oldest == Self.now.addingTimeInterval(-30 * 3600))
            let b = try #require(summary.first { $0.tenantId == "b" })
            #expect(b.pending == 1 && b.overdue == 0)
        }
    }

    @Test("sweep marks are kept per tenant and package; a subscription keeps its store", arguments: Backend.available)
    func sweepsAndStores(backend: Backend) async throws {
        try await backend.scope { store in
            #expect(try await store.read { try $0.play.sweep(tenantId: "a", packageName: "com.example.app") } == nil)
            try await store.write { try $0.play.setSweep(tenantId: "a", packageName: "com.example.app", voidedSince: Self.now, sweptAt: Self.now) }
            try await store.write {
                try $0.play.setSweep(
                    tenantId: "a",
                    packageName: "com.example.app",
                    voidedSince: Self.now.addingTimeInterval(5),
                    sweptAt: Self.now.addingTimeInterval(9)
                )
            }
            let mark = try #require(try await store.read { try $0.play.sweep(tenantId: "a", packageName: "com.example.app") })
            #expect(mark.voidedSince == Self.now.addingTimeInterval(5) && mark.sweptAt == Self.now.addingTimeInterval(9))
            #expect(try await store.read { try $0.play.sweep(tenantId: "b", packageName: "com.example.app") } == nil)

            var play = StoreConformance.subscription("play-token", owner: "u1")
            play.store = .googlePlay
            let apple = StoreConformance.subscription("1000", owner: "u1")
            let saved = play
            try await store.write {
                try $0.subscriptions.save(saved)
                try $0.subscriptions.save(apple)
            }
            #expect(
                try await store.read { try $0.subscriptions.subscription(tenantId: "a", originalTransactionId: "play-token", forUpdate: false) }?
                    .store == .googlePlay
            )
            #expect(
                try await store.read { try $0.subscriptions.subscription(tenantId: "a", originalTransactionId: "1000", forUpdate: false) }?.store
                    == .appStore
            )
            let sources = try await store.readStatement { try $0.userState.entitlementSources(tenantId: "a", userId: "u1", waitingTokens: []) }
            #expect(Set(sources.owned.map(\.store)) == [.googlePlay, .appStore])
        }
    }
}

extension PlayConformance {
    static let tenant: Result<Tenant, any Error> = Result {
        let catalog = try Catalog.decode(
            Data(
                """
                {"tenants": [{"id": "a", "name": "A", "currency": "EUR", "apple": {"bundleId": "com.example.app", "environments": ["Sandbox"]},
                  "auth": {"algorithm": "HS256", "issuer": "https://auth.example.test", "secretEnv": "UNUSED_JWT_SECRET"}, "resources": [],
                  "products": [{"id": "monthly", "kind": "subscription", "type": "Auto-Renewable Subscription", "title": "Monthly", "entitlement": "premium"}]}]}
                """.utf8
            )
        )
        return try #require(catalog.tenants.first)
    }

    static func facts(_ token: String, replaces: String?, at date: Date) -> SubscriptionFacts {
        var facts = SubscriptionFacts(
            originalTransactionId: token,
            environment: .sandbox,
            signedAt: date,
            transaction: .init(
                transactionId: "GPA.\(token)",
                productId: "monthly",
                purchasedAt: date,
                expiresAt: date.addingTimeInterval(30 * 86_400)
            ),
            renewal: .init(autoRenew: true),
            source: "google_play",
            store: .googlePlay
        )
        facts.replaces = replaces
        return facts
    }

    @Test(
        "linkedPurchaseToken through the shipped SubscriptionWrites: the replaced subscription ends, its owner and membership move to the new token",
        arguments: Backend.available
    )
    func replacedSubscription(backend: Backend) async throws {
        let tenant = try Self.tenant.get()
        try await backend.scope { store in
            let bought = try await store.write { tx in
                try SubscriptionWrites.apply(
                    tx,
                    facts: Self.facts("old", replaces: nil, at: Self.now),
                    tenant: tenant,
                    userId: "ana",
                    source: "test",
                    actor: .user("ana"),
                    emitsEvents: true,
                    now: Self.now
                )
            }
            guard case .applied = bought else {
                Issue.record("not applied: \(bought)")
                return
            }
            #expect(try await store.read { try $0.subscriptions.membership(tenantId: "a", userId: "ana") }?.originalTransactionId == "old")

            let later = Self.now.addingTimeInterval(3600)
            _ = try await store.write { tx in
                try SubscriptionWrites.apply(
                    tx,
                    facts: Self.facts("new", replaces: "old", at: later),
                    tenant: tenant,
                    userId: nil,
                    source: "google_play:4",
                    actor: .provider("google_play"),
                    emitsEvents: true,
                    now: later
                )
            }
            let old = try #require(
                try await store.read { try $0.subscriptions.subscription(tenantId: "a", originalTransactionId: "old", forUpdate: false) }
            )
            let new = try #require(
                try await store.read { try $0.subscriptions.subscription(tenantId: "a", originalTransactionId: "new", forUpdate: false) }
            )
            #expect(old.upgraded && old.state(at: later) == .upgraded && old.autoRenew == false)
            #expect(new.userId == "ana" && new.state(at: later) == .active)
            #expect(try await store.read { try $0.subscriptions.membership(tenantId: "a", userId: "ana") }?.originalTransactionId == "new")
            let owned = try await store.read { try $0.subscriptions.owned(tenantId: "a", userId: "ana", page: Page()) }
            #expect(Set(owned.items.map(\.originalTransactionId)) == ["old", "new"])

            // The same facts again (Google's push and the app's call both carry them): nothing more happens.
            let audited = try await store.read { try $0.audit.audit(tenantId: "a", page: Page()) }.total
            _ = try await store.write { tx in
                try SubscriptionWrites.apply(
                    tx,
                    facts: Self.facts("new", replaces: "old", at: later),
                    tenant: tenant,
                    userId: "ana",
                    source: "verify_purchase",
                    actor: .user("ana"),
                    emitsEvents: true,
                    now: later
                )
            }
            #expect(try await store.read { try $0.audit.audit(tenantId: "a", page: Page()) }.total == audited)
        }
    }
}

extension PlayConformance {
    @Test(
        "a pending one-time purchase's claim: remembered once per token, kept by its first sender (V4: the same user's later sending replaces what it is for, another user's changes nothing), apart per tenant, forgotten once applied",
        arguments: Backend.available
    )
    func pendingClaims(backend: Backend) async throws {
        try await backend.scope { store in
            @Sendable func claim(_ user: String, tenant: String = "a", booking: Int64? = nil) -> PlayPendingClaim {
                PlayPendingClaim(
                    tenantId: tenant,
                    purchaseToken: "tok",
                    userId: user,
                    productId: "credits.pack",
                    bookingId: booking,
                    packageName: "com.example.app",
                    createdAt: Self.now
                )
            }
            #expect(try await store.write { try $0.play.rememberPending(claim("ana")) } == "ana")
            #expect(try await store.write { try $0.play.rememberPending(claim("bo", booking: 42)) } == "ana", "the first sender keeps it")
            #expect(try await store.read { try $0.play.pendingClaim(tenantId: "a", purchaseToken: "tok") } == claim("ana"))
            #expect(try await store.write { try $0.play.rememberPending(claim("ana", booking: 42)) } == "ana")
            #expect(try await store.write { try $0.play.rememberPending(claim("cy", tenant: "b")) } == "cy")
            let read = try await store.read { try $0.play.pendingClaim(tenantId: "a", purchaseToken: "tok") }
            #expect(read == claim("ana", booking: 42), "the same user's later sending replaces what it is for")
            #expect(try await store.read { try $0.play.pendingClaim(tenantId: "b", purchaseToken: "tok") }?.userId == "cy")
            try await store.write { try $0.play.forgetPending(tenantId: "a", purchaseToken: "tok") }
            #expect(try await store.read { try $0.play.pendingClaim(tenantId: "a", purchaseToken: "tok") } == nil)
            #expect(try await store.read { try $0.play.pendingClaim(tenantId: "b", purchaseToken: "tok") } != nil)
        }
    }
}

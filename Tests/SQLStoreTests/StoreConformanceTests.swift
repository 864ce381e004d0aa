import AsyncHTTPClient
import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import Testing
import UseCases

/// The store contract every backend must keep, with the invariants that a single SQLite writer used
/// to hide: exactly once under concurrent claims, no overbooking under racing admissions, hold
/// expiry, notification dedupe, one outbox owner at a time, paging and tenant isolation. The same
/// suite runs against each backend in `StoreBackend.available` (SQLite today; PostgreSQL joins it
/// with the PostgreSQL backend).
@Suite("StoreConformance")
struct StoreConformance {
    static let migrations = StoreBackend.migrations
    static let now = StoreBackend.now

    /// The backends every suite runs on (``StoreTesting/StoreBackend``).
    typealias StoreBackend = StoreTesting.StoreBackend

    /// Runs `body` on a fresh store of `backend` and closes it afterwards, whatever happens.
    func withStore(_ backend: StoreBackend, _ body: (any Store) async throws -> Void) async throws {
        try await backend.scope(body)
    }

    static let rental = Resource(id: "boat", kind: .rental, name: "Boat", pricePerDayMinor: 5000, units: 2)
    static let experience = Resource(
        id: "tour",
        kind: .experience,
        name: "Tour",
        experienceType: "sunset",
        pricePerSeatMinor: 1000,
        seatsPerSlot: 3,
        slotTimes: ["10:00"],
        durationMinutes: 60
    )

    static func quote(_ resource: Resource, start: Date, hours: Double = 2, seats: Int = 1) -> BookingQuote {
        BookingQuote(
            resource: resource,
            start: start,
            end: start.addingTimeInterval(hours * 3600),
            seats: seats,
            priceMinor: 5000,
            currency: "EUR",
            requiredProductId: "p"
        )
    }

    /// A booking admission: the shipped unit of work (``CreateBooking/admit(_:quote:limits:viaKey:tx:now:)``).
    static func admit(
        _ store: any Store,
        tenant: String = "a",
        user: String,
        quote: BookingQuote,
        now: Date = now,
        hold: TimeInterval = 900
    ) async throws -> Booking {
        let draft = NewBooking(tenantId: tenant, userId: user, quote: quote, holdExpiresAt: now.addingTimeInterval(hold), now: now)
        return try await store.write { tx in
            try CreateBooking.admit(draft, quote: quote, limits: HoldLimits(perUser: 10), viaKey: false, tx: tx, now: now)
        }
    }

    /// A tenant whose bookings the App Store pays (product `p`), for the shipped purchase unit of work.
    static func bookingTenant(_ id: String) throws -> Tenant {
        let json = """
            {"id": "\(id)", "name": "\(id)", "currency": "EUR",
             "apple": {"bundleId": "com.example.\(id)", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://\(id).example", "secretEnv": "A_SECRET"},
             "products": [{"id": "p", "kind": "booking", "type": "Consumable", "title": "A booking"}],
             "resources": []}
            """
        return try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
    }

    /// A purchase claim of a booking: the shipped unit of work (``Claims/claim(_:proven:request:kind:tx:now:remembering:)``
    /// with ``BookingKind``), as verify-purchase runs it after proving the transaction.
    static func claim(_ store: any Store, booking: Booking, user: String, transactionId: String, now: Date = now) async throws -> PurchaseOutcome {
        let proven = ProvenTransaction(
            transactionId: transactionId,
            originalTransactionId: transactionId,
            productId: "p",
            environment: .sandbox,
            purchasedAt: now,
            revoked: false,
            appAccountToken: nil,
            proofHash: "h-\(user)"
        )
        let claim = PurchaseClaim(proven, tenantId: booking.tenantId, userId: user, target: .booking(id: booking.id), now: now)
        let request = PurchaseRequest(
            tenant: try bookingTenant(booking.tenantId),
            policy: PurchasePolicy(),
            emitsEvents: true,
            userId: user,
            productId: "p",
            transactionId: transactionId,
            named: .booking(id: booking.id)
        )
        return try await store.write { tx in
            try Claims.claim(claim, proven: proven, request: request, kind: BookingKind(), tx: tx, now: now).outcome
        }
    }

    @Test(
        "exactly once: 50 concurrent claims of one transaction by different users make one purchase and 49 replays",
        arguments: StoreBackend.available
    )
    func exactlyOnce(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let start = Self.now.addingTimeInterval(86_400)
            var bookings: [Booking] = []
            for index in 0..<50 {
                bookings.append(
                    try await Self.admit(
                        store,
                        user: "u\(index)",
                        quote: Self.quote(Resource(id: "r\(index)", kind: .rental, name: "R", pricePerDayMinor: 1), start: start)
                    )
                )
            }
            let outcomes = try await withThrowingTaskGroup(of: PurchaseOutcome.self) { group in
                for (index, booking) in bookings.enumerated() {
                    group.addTask { try await Self.claim(store, booking: booking, user: "u\(index)", transactionId: "2000000000000042") }
                }
                var all: [PurchaseOutcome] = []
                for try await outcome in group { all.append(outcome) }
                return all
            }
            let applied = outcomes.filter { if case .applied = $0 { true } else { false } }
            let replays = outcomes.filter { if case .replay = $0 { true } else { false } }
            #expect(applied.count == 1)
            #expect(replays.count == 49)
            let (purchases, replayRows) = try await store.read {
                (try $0.purchases.purchases(tenantId: "a", page: Page()).total, try $0.purchases.replays(tenantId: "a", page: Page()).total)
            }
            #expect(purchases == 1)
            #expect(replayRows == 49)
            let confirmed = try await store.read {
                try $0.bookings.bookings(tenantId: "a", filter: BookingFilter(status: .confirmed), page: Page()).total
            }
            #expect(confirmed == 1)
            // The winner's retry is a repeat and writes nothing.
            guard case .applied(let winner) = applied[0], let index = bookings.firstIndex(where: { $0.id == winner.bookingId }) else { return }
            #expect(try await Self.claim(store, booking: bookings[index], user: "u\(index)", transactionId: "2000000000000042") == .repeated(winner))
            #expect(try await store.read { try $0.purchases.purchases(tenantId: "a", page: Page()).total } == 1)
        }
    }

    @Test("the last seat of a slot goes to one of 12 racing users", arguments: StoreBackend.available)
    func lastSeat(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let slot = Self.now.addingTimeInterval(2 * 86_400)
            _ = try await Self.admit(store, user: "first", quote: Self.quote(Self.experience, start: slot, hours: 1, seats: 2))
            let results = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        (try? await Self.admit(store, user: "racer\(index)", quote: Self.quote(Self.experience, start: slot, hours: 1))) != nil
                    }
                }
                var wins = 0
                for await won in group where won { wins += 1 }
                return wins
            }
            #expect(results == 1)
            let occupancy = try await store.write {
                try $0.bookings.admit(
                    tenantId: "a",
                    resourceId: "tour",
                    start: slot,
                    end: slot.addingTimeInterval(3600),
                    excluding: nil,
                    now: Self.now
                )
            }
            #expect(occupancy == Occupancy(bookings: 2, seats: 3))
        }
    }

    @Test(
        "overlapping rentals race for a boat with two units: two win, and bookings that do not overlap are not counted",
        arguments: StoreBackend.available
    )
    func overlappingRentals(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let start = Self.now.addingTimeInterval(3 * 86_400)
            let wins = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<16 {
                    // Each overlaps all the others: starts spread over one hour, two hours long.
                    let quote = Self.quote(Self.rental, start: start.addingTimeInterval(Double(index) * 225))
                    group.addTask { (try? await Self.admit(store, user: "u\(index)", quote: quote)) != nil }
                }
                var wins = 0
                for await won in group where won { wins += 1 }
                return wins
            }
            #expect(wins == 2)
            // The next day is free.
            _ = try await Self.admit(store, user: "later", quote: Self.quote(Self.rental, start: start.addingTimeInterval(86_400)))
            // Another tenant's boat of the same id is a different boat.
            _ = try await Self.admit(store, tenant: "b", user: "u0", quote: Self.quote(Self.rental, start: start))
        }
    }

    @Test("a hold keeps its slot until it expires; then the slot is free again and the booking counts no more", arguments: StoreBackend.available)
    func holdExpiry(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let single = Resource(id: "dinghy", kind: .rental, name: "Dinghy", pricePerDayMinor: 100, units: 1)
            let start = Self.now.addingTimeInterval(86_400)
            let held = try await Self.admit(store, user: "slow", quote: Self.quote(single, start: start), hold: 600)
            await #expect(throws: DomainError.self) { try await Self.admit(store, user: "fast", quote: Self.quote(single, start: start)) }
            let later = Self.now.addingTimeInterval(601)
            let taker = try await Self.admit(store, user: "fast", quote: Self.quote(single, start: start), now: later)
            // The expired booking, paid late, cannot take the slot back.
            let occupancy = try await store.write {
                try $0.bookings.admit(
                    tenantId: "a",
                    resourceId: "dinghy",
                    start: held.start,
                    end: held.end,
                    excluding: held.id,
                    now: later
                )
            }
            #expect(occupancy == Occupancy(bookings: 1, seats: 1))
            #expect(!Capacity.fits(single, seats: 1, occupancy: occupancy))
            // The taker cancelled: the slot is free for the expired booking again, and the taker's own hold is not counted against itself.
            var cancelled = taker
            cancelled.status = .cancelled
            let cancelledBooking = cancelled
            try await store.write { try $0.bookings.update(cancelledBooking, now: later) }
            let free = try await store.write {
                try $0.bookings.admit(
                    tenantId: "a",
                    resourceId: "dinghy",
                    start: held.start,
                    end: held.end,
                    excluding: held.id,
                    now: later
                )
            }
            #expect(free == .none)
            #expect(try await store.read { try $0.bookings.activeHolds(tenantId: "a", userId: "slow", now: later, upTo: 10) } == 0)
            // Holds per resource and slot window: only unpaid bookings still within their hold and overlapping the window count, up to the limit asked.
            let day9 = start.addingTimeInterval(9 * 86_400), day10 = start.addingTimeInterval(10 * 86_400)
            _ = try await Self.admit(store, user: "third", quote: Self.quote(Self.rental, start: day9), now: later)
            _ = try await Self.admit(store, user: "fourth", quote: Self.quote(Self.rental, start: day10), now: later)
            let bothDays = (start: day9, end: day10.addingTimeInterval(86_400))
            func holds(tenant: String = "a", _ start: Date, _ end: Date, at now: Date = later, upTo limit: Int = 10) async throws -> Int {
                try await store.read {
                    try $0.bookings.activeHolds(tenantId: tenant, resourceId: "boat", start: start, end: end, now: now, upTo: limit)
                }
            }
            #expect(try await holds(bothDays.start, bothDays.end) == 2)
            #expect(try await holds(bothDays.start, bothDays.end, upTo: 1) == 1)
            #expect(
                try await holds(day9.addingTimeInterval(3600), day9.addingTimeInterval(5400)) == 1,
                "a window overlapping one hold counts that one"
            )
            #expect(
                try await holds(day9.addingTimeInterval(2 * 3600), day9.addingTimeInterval(4 * 3600)) == 0,
                "a hold ending where the window starts does not block it"
            )
            #expect(try await holds(tenant: "b", bothDays.start, bothDays.end) == 0)
            #expect(try await holds(bothDays.start, bothDays.end, at: later.addingTimeInterval(901)) == 0, "expired holds do not count")
        }
    }

    @Test(
        "the unpaid holds of a slot are counted per slot as bookings come, get paid, get cancelled and expire; a slot held by many counts them all",
        arguments: StoreBackend.available
    )
    func holdsPerSlotFollowTheBookings(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let fleet = Resource(id: "fleet", kind: .rental, name: "Fleet", pricePerDayMinor: 100, units: 1_000)
            let start = Self.now.addingTimeInterval(2 * 86_400)
            let quote = Self.quote(fleet, start: start)
            func holds(at now: Date, upTo limit: Int = 1_000) async throws -> Int {
                try await store.read {
                    try $0.bookings.activeHolds(tenantId: "a", resourceId: "fleet", start: quote.start, end: quote.end, now: now, upTo: limit)
                }
            }
            var held: [Booking] = []
            // 90: under the per-resource cap of the admissions (100 by default).
            for index in 0..<90 {
                held.append(try await Self.admit(store, user: "u\(index)", quote: quote))
            }
            #expect(try await holds(at: Self.now) == 90)
            #expect(try await holds(at: Self.now, upTo: 50) == 50, "counted up to the limit asked")
            // Paid: no longer an unpaid hold, still occupying its slot.
            var paid = held[0]
            paid.status = .confirmed
            let paidBooking = paid
            try await store.write { try $0.bookings.update(paidBooking, now: Self.now) }
            // Cancelled: neither.
            var cancelled = held[1]
            cancelled.status = .cancelled
            let cancelledBooking = cancelled
            try await store.write { try $0.bookings.update(cancelledBooking, now: Self.now) }
            #expect(try await holds(at: Self.now) == 88)
            // Expired, not yet released by an admission: not counted either.
            let later = Self.now.addingTimeInterval(901)
            #expect(try await holds(at: later) == 0)
            // The next admission releases them: one hold (its own), and the paid booking still occupies the slot.
            _ = try await Self.admit(store, user: "late", quote: quote, now: later)
            #expect(try await holds(at: later) == 1)
            let occupancy = try await store.write {
                try $0.bookings.admit(tenantId: "a", resourceId: "fleet", start: quote.start, end: quote.end, excluding: nil, now: later)
            }
            #expect(occupancy == Occupancy(bookings: 2, seats: 2))
            // A released hold given a new one (a late payment's retry window) is counted again.
            var renewed = held[2]
            renewed.holdExpiresAt = later.addingTimeInterval(600)
            let renewedBooking = renewed
            try await store.write { try $0.bookings.update(renewedBooking, now: later) }
            #expect(try await holds(at: later) == 2)
        }
    }

    @Test(
        "a part payment's units and its extended hold are stored: the slot stays held past the first hold, and is free once that too expires",
        arguments: StoreBackend.available
    )
    func partPaymentHold(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let single = Resource(id: "dinghy", kind: .rental, name: "Dinghy", pricePerDayMinor: 100, units: 1)
            let start = Self.now.addingTimeInterval(86_400)
            var held = try await Self.admit(store, user: "slow", quote: Self.quote(single, start: start), hold: 600)
            #expect(held.paidQuantity == 0)
            held.requiredQuantity = 3
            held.paidQuantity = 1
            held.holdExpiresAt = Self.now.addingTimeInterval(1200)
            let partlyPaid = held
            try await store.write { try $0.bookings.update(partlyPaid, now: Self.now.addingTimeInterval(300)) }
            let stored = try await store.read { try $0.bookings.booking(id: partlyPaid.id, tenantId: "a", forUpdate: false) }
            #expect(stored?.paidQuantity == 1 && stored?.holdExpiresAt == partlyPaid.holdExpiresAt)
            // Past the first hold (600 s) the slot is still held; past the extended one it is free.
            await #expect(throws: DomainError.self) {
                try await Self.admit(store, user: "fast", quote: Self.quote(single, start: start), now: Self.now.addingTimeInterval(900))
            }
            _ = try await Self.admit(store, user: "fast", quote: Self.quote(single, start: start), now: Self.now.addingTimeInterval(1201))
        }
    }

    @Test(
        "account tokens: the first user a token is recorded with keeps it; an unclaimed transaction keeps its token and proof and waits for that token until a purchase applies it or an unapplied payment keeps it",
        arguments: StoreBackend.available
    )
    func accountTokensAndWaiting(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try await store.write { try $0.purchases.rememberTokens(["AAA-token", "aaa-token", "bbb"], userId: "u1", tenantId: "a", at: Self.now) }
            try await store.write { try $0.purchases.rememberTokens(["bbb", "ccc"], userId: "u2", tenantId: "a", at: Self.now) }
            #expect(try await store.read { try $0.purchases.user(token: "AAA-TOKEN", tenantId: "a") } == "u1")
            #expect(try await store.read { try $0.purchases.user(token: "bbb", tenantId: "a") } == "u1", "the first user keeps a token")
            #expect(try await store.read { try $0.purchases.user(token: "ccc", tenantId: "a") } == "u2")
            #expect(try await store.read { try $0.purchases.user(token: "aaa-token", tenantId: "b") } == nil, "tokens are per tenant")

            func proven(_ id: String, token: String) -> ProvenTransaction {
                ProvenTransaction(
                    transactionId: id,
                    originalTransactionId: id,
                    productId: "p",
                    environment: .sandbox,
                    purchasedAt: Self.now,
                    revoked: false,
                    appAccountToken: token,
                    proofHash: "h\(id)",
                    kind: .jws,
                    priceMilliunits: 990,
                    currency: "USD",
                    quantity: 1
                )
            }
            func keep(_ id: String, token: String, proof: Bool = true) async throws {
                // Received in the order kept (one second apart): waiting transactions come oldest first.
                let received = Self.now.addingTimeInterval(TimeInterval(Int(id) ?? 0))
                let unclaimed = UnclaimedTransaction(
                    environment: .sandbox,
                    transactionId: id,
                    productId: "p",
                    purchasedAt: Self.now,
                    receivedAt: received,
                    claimedByPurchaseId: nil,
                    originalTransactionId: id,
                    appAccountToken: token,
                    proven: proof ? proven(id, token: token) : nil
                )
                try await store.write { try $0.purchases.keepUnclaimed(unclaimed, tenantId: "a", store: .appStore, notificationUUID: "n-\(id)") }
            }
            try await keep("8001", token: "AAA-TOKEN")
            try await keep("8002", token: "aaa-token", proof: false)  // kept before tokens were: nothing to claim it with
            try await keep("8003", token: "ccc")
            try await keep("8004", token: "aaa-token")
            func waiting(_ tokens: [String], tenant: String = "a") async throws -> [String] {
                try await store.read { try $0.purchases.waitingTransactions(tenantId: tenant, tokens: tokens) }.map(\.transactionId)
            }
            let found = try await waiting(["aaa-token"])
            #expect(found == ["8001", "8004"], "\(found)")
            let combined = try await store.readStatement {
                try $0.userState.entitlementSources(tenantId: "a", userId: "u1", waitingTokens: ["aaa-token"])
            }
            #expect(
                combined.waiting == [proven("8001", token: "AAA-TOKEN"), proven("8004", token: "aaa-token")],
                "the one-statement read finds the same, whole"
            )
            #expect(
                try await store.read { try $0.purchases.waitingTransactions(tenantId: "a", tokens: ["aaa-token"]) }.first
                    == proven("8001", token: "AAA-TOKEN"),
                "the proof is read back whole"
            )
            #expect(try await waiting(["aaa-token"], tenant: "b").isEmpty)
            #expect(try await waiting([]).isEmpty)

            // 8001 applied by a purchase, 8004 kept as an unapplied payment: neither waits any more.
            let purchase = Purchase(
                id: RecordID.next(),
                tenantId: "a",
                userId: "u1",
                target: .credits(type: "credits"),
                store: .appStore,
                environment: .sandbox,
                transactionId: "8001",
                originalTransactionId: "8001",
                productId: "p",
                status: .applied,
                outcomeCode: nil,
                purchasedAt: Self.now,
                createdAt: Self.now
            )
            try await store.write { try $0.purchases.insert(purchase, proofHash: "h8001") }
            let kept = UnappliedPayment(
                id: RecordID.next(),
                tenantId: "a",
                store: .appStore,
                userId: "u1",
                bookingId: nil,
                reasonCode: .missingField,
                reason: "send bookingId",
                proven: proven("8004", token: "aaa-token"),
                firstSeenAt: Self.now,
                lastSeenAt: Self.now
            )
            _ = try await store.write { try $0.purchases.keepUnapplied(kept) }
            #expect(try await waiting(["aaa-token", "ccc"]) == ["8003"])
            #expect(
                try await store.readStatement {
                    try $0.userState.entitlementSources(tenantId: "a", userId: "u1", waitingTokens: ["aaa-token", "ccc"])
                }
                .waiting.map(\.transactionId) == ["8003"]
            )
        }
    }

    @Test(
        "a user's entitlement sources in one statement are what the repositories read one by one: every field, in their order, per tenant and user",
        arguments: StoreBackend.available
    )
    func entitlementSourcesInOneStatement(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            @Sendable func grant(
                _ id: Int64,
                _ entitlement: String,
                user: String = "u",
                tenant: String = "a",
                purchased: Double,
                until: Double?
            ) -> EntitlementGrant {
                EntitlementGrant(
                    id: id,
                    tenantId: tenant,
                    userId: user,
                    entitlement: entitlement,
                    source: .unlock,
                    reference: "r\(id)",
                    productId: id == 3 ? nil : "p\(id)",
                    purchasedAt: Self.now.addingTimeInterval(purchased),
                    from: Self.now.addingTimeInterval(purchased),
                    until: until.map { Self.now.addingTimeInterval($0) },
                    durationDays: until == nil ? nil : 7,
                    state: id == 2 ? .ended : .active,
                    endedReason: id == 2 ? "refund" : nil,
                    environment: id == 3 ? nil : .sandbox
                )
            }
            var lapsed = Self.subscription("s1", owner: "u", purchased: 0)
            lapsed.autoRenew = nil
            lapsed.expiresAt = nil
            lapsed.revokedAt = Self.now.addingTimeInterval(1)
            lapsed.ended = true
            let lapsedSubscription = lapsed
            let membership = Membership(
                tenantId: "a",
                userId: "u",
                originalTransactionId: "s2",
                payMethod: "apple",
                tier: "gold",
                cycle: "year",
                expiresAt: nil,
                autoRenew: false,
                updatedAt: Self.now
            )
            try await store.write { tx in
                try tx.subscriptions.save(lapsedSubscription)
                try tx.subscriptions.save(Self.subscription("s2", owner: "u", purchased: 100))
                try tx.subscriptions.save(Self.subscription("s3", owner: "v"))
                try tx.subscriptions.save(Self.subscription("s4", tenant: "b", owner: "u"))
                try tx.subscriptions.save(membership)
                for g in [
                    grant(1, "pro", purchased: 50, until: 1_000), grant(2, "ai", purchased: 10, until: nil),
                    grant(3, "pro", purchased: 5, until: nil),
                    grant(4, "pro", user: "v", purchased: 0, until: nil), grant(5, "pro", tenant: "b", purchased: 0, until: nil),
                ] {
                    try tx.grants.save(g, now: Self.now)
                }
            }
            let combined = try await store.readStatement {
                try $0.userState.entitlementSources(tenantId: "a", userId: "u", waitingTokens: ["nobody"])
            }
            let separate = try await store.read { tx in
                (
                    try tx.subscriptions.owned(tenantId: "a", userId: "u", page: Page(limit: Page.maximumLimit)).items,
                    try tx.subscriptions.membership(tenantId: "a", userId: "u"), try tx.grants.grants(tenantId: "a", userId: "u")
                )
            }
            #expect(combined.owned.map(\.originalTransactionId) == ["s2", "s1"], "newest first")
            #expect(combined.owned == separate.0, "every field, NULLs and booleans included")
            #expect(combined.membership == membership && combined.membership == separate.1)
            #expect(combined.grants.map(\.id) == [2, 3, 1], "by entitlement, then purchase")
            #expect(combined.grants == separate.2)
            #expect(combined.waiting.isEmpty)
            let nobody = try await store.readStatement { try $0.userState.entitlementSources(tenantId: "a", userId: "w", waitingTokens: []) }
            #expect(nobody.owned.isEmpty && nobody.membership == nil && nobody.grants.isEmpty && nobody.waiting.isEmpty)
        }
    }

    @Test(
        "a single-statement read runs one statement: on PostgreSQL a second one, a write or a lock fails the read",
        arguments: StoreBackend.available
    )
    func singleStatementReads(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try await store.write { try $0.subscriptions.save(Self.subscription("s1", owner: "u")) }
            let one = try await store.readStatement { try $0.subscriptions.membership(tenantId: "a", userId: "u") }
            #expect(one == nil)
            guard backend.name != "SQLite" else { return }  // SQLite's read is a transaction already: nothing to save
            await #expect(throws: StoreError.self) {
                try await store.readStatement { tx in
                    _ = try tx.subscriptions.membership(tenantId: "a", userId: "u")
                    return try tx.subscriptions.membership(tenantId: "a", userId: "v")
                }
            }
            await #expect(throws: StoreError.self) {
                try await store.readStatement { tx in try tx.subscriptions.deleteMembership(tenantId: "a", userId: "u") }
            }
            await #expect(throws: StoreError.self) {
                try await store.readStatement { tx in try tx.grants.grants(tenantId: "a", userId: "u", entitlement: "pro", forUpdate: true) }
            }
        }
    }

    @Test(
        "an unapplied payment is kept once per transaction (a retry counts an attempt), read back whole, decided once, and lists as applied once a claim applied it",
        arguments: StoreBackend.available
    )
    func unappliedPayments(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let proven = ProvenTransaction(
                transactionId: "7001",
                originalTransactionId: "7000",
                productId: "p",
                environment: .sandbox,
                purchasedAt: Self.now,
                revoked: false,
                appAccountToken: "b0a0c7d2-1111-4222-8333-444455556666",
                proofHash: "h1",
                kind: .jws,
                priceMilliunits: 45_000,
                currency: "EUR",
                quantity: 2
            )
            func keep(_ user: String, at offset: TimeInterval) async throws -> UnappliedPayment {
                let at = Self.now.addingTimeInterval(offset)
                let payment = UnappliedPayment(
                    id: RecordID.next(),
                    tenantId: "a",
                    store: .appStore,
                    userId: user,
                    bookingId: 12,
                    reasonCode: .bookingNotFound,
                    reason: "no booking 12",
                    proven: proven,
                    firstSeenAt: at,
                    lastSeenAt: at
                )
                return try await store.write { try $0.purchases.keepUnapplied(payment) }
            }
            let first = try await keep("u1", at: 0)
            #expect(first.attempts == 1 && first.status == .open && first.proven == proven && first.bookingId == 12)
            let second = try await keep("u2", at: 60)
            #expect(second.id == first.id && second.attempts == 2 && second.userId == "u2" && second.firstSeenAt == Self.now)
            #expect(try await store.read { try $0.purchases.unappliedPayments(tenantId: "a", status: .open, page: Page()).total } == 1)
            #expect(try await store.read { try $0.purchases.unappliedPayments(tenantId: "b", status: nil, page: Page()).total } == 0)

            var decided = second
            decided.status = .refundRequested
            decided.resolvedAt = Self.now.addingTimeInterval(120)
            decided.resolvedBy = "admin:1"
            decided.note = "refund"
            let refund = decided
            try await store.write { try $0.purchases.update(refund) }
            // Decided: a retry no longer changes it.
            let third = try await keep("u3", at: 180)
            #expect(third.status == .refundRequested && third.attempts == 2 && third.userId == "u2" && third.note == "refund")
            #expect(try await store.read { try $0.purchases.unappliedPayments(tenantId: "a", status: .refundRequested, page: Page()).total } == 1)

            // Another transaction, applied afterwards by a claim: it reads as applied with that purchase.
            var later = proven
            later.transactionId = "7002"
            let laterProven = later
            let open = UnappliedPayment(
                id: RecordID.next(),
                tenantId: "a",
                store: .appStore,
                userId: "u1",
                bookingId: nil,
                reasonCode: .missingField,
                reason: "send bookingId",
                proven: laterProven,
                firstSeenAt: Self.now,
                lastSeenAt: Self.now
            )
            _ = try await store.write { try $0.purchases.keepUnapplied(open) }
            let purchase = Purchase(
                id: RecordID.next(),
                tenantId: "a",
                userId: "u1",
                target: .credits(type: "credits"),
                store: .appStore,
                environment: .sandbox,
                transactionId: "7002",
                originalTransactionId: "7000",
                productId: "p",
                status: .applied,
                outcomeCode: nil,
                purchasedAt: Self.now,
                createdAt: Self.now
            )
            try await store.write { try $0.purchases.insert(purchase, proofHash: "h2") }
            let applied = try await store.read { try $0.purchases.unappliedPayments(tenantId: "a", status: .applied, page: Page()) }
            #expect(applied.total == 1 && applied.items.first?.claimedByPurchaseId == purchase.id && applied.items.first?.currentStatus == .applied)
            #expect(applied.items.first?.status == .open, "the recorded decision is untouched: no operator decided")
            #expect(try await store.read { try $0.purchases.unappliedPayments(tenantId: "a", status: .open, page: Page()).total } == 0)
        }
    }

    @Test("a notification uuid is stored once per tenant; its outcome is found again", arguments: StoreBackend.available)
    func notificationDedupe(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let notification = IncomingNotification(
                tenantId: "a",
                uuid: "n-1",
                type: .refund,
                subtype: nil,
                environment: .sandbox,
                signedAt: Self.now,
                transactionId: "1",
                payloadHash: "h"
            )
            try await store.write { tx in
                #expect(try tx.notifications.outcome(tenantId: "a", uuid: "n-1") == nil)
                try tx.notifications.insert(notification, outcome: "booking_refunded", receivedAt: Self.now)
            }
            #expect(try await store.read { try $0.notifications.outcome(tenantId: "a", uuid: "n-1") } == "booking_refunded")
            await #expect(throws: (any Error).self) {
                try await store.write { try $0.notifications.insert(notification, outcome: "again", receivedAt: Self.now) }
            }
            var other = notification
            other.tenantId = "b"
            let otherTenant = other
            try await store.write { try $0.notifications.insert(otherTenant, outcome: "recorded", receivedAt: Self.now) }
            #expect(try await store.read { try $0.notifications.outcome(tenantId: "b", uuid: "n-1") } == "recorded")
            #expect(try await store.read { try $0.notifications.notifications(tenantId: "a", page: Page()).total } == 1)
        }
    }

    @Test("revoked and unclaimed transactions are remembered once and forgotten on reversal", arguments: StoreBackend.available)
    func revokedAndUnclaimed(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let notification = IncomingNotification(
                tenantId: "a",
                uuid: "n-2",
                type: .refund,
                subtype: nil,
                environment: .sandbox,
                signedAt: Self.now,
                transactionId: "77",
                payloadHash: "h"
            )
            try await store.write { tx in
                try tx.purchases.rememberRevoked(
                    tenantId: "a",
                    store: .appStore,
                    environment: .sandbox,
                    transactionId: "77",
                    notification: notification,
                    at: Self.now
                )
                try tx.purchases.rememberRevoked(
                    tenantId: "a",
                    store: .appStore,
                    environment: .sandbox,
                    transactionId: "77",
                    notification: notification,
                    at: Self.now
                )
            }
            #expect(try await store.read { try $0.purchases.isRevoked(tenantId: "a", store: .appStore, environment: .sandbox, transactionId: "77") })
            #expect(
                try await store.read { try $0.purchases.isRevoked(tenantId: "b", store: .appStore, environment: .sandbox, transactionId: "77") }
                    == false
            )
            try await store.write { try $0.purchases.forgetRevoked(tenantId: "a", store: .appStore, environment: .sandbox, transactionId: "77") }
            #expect(
                try await store.read { try $0.purchases.isRevoked(tenantId: "a", store: .appStore, environment: .sandbox, transactionId: "77") }
                    == false
            )

            let unclaimed = UnclaimedTransaction(
                environment: .sandbox,
                transactionId: "88",
                productId: "p",
                purchasedAt: Self.now,
                receivedAt: Self.now,
                claimedByPurchaseId: nil
            )
            try await store.write { tx in
                try tx.purchases.keepUnclaimed(unclaimed, tenantId: "a", store: .appStore, notificationUUID: "n-3")
                try tx.purchases.keepUnclaimed(unclaimed, tenantId: "a", store: .appStore, notificationUUID: "n-4")
            }
            let listed = try await store.read { try $0.purchases.unclaimed(tenantId: "a", page: Page()) }
            #expect(listed.total == 1 && listed.items.first?.transactionId == "88" && listed.items.first?.claimedByPurchaseId == nil)
        }
    }

    /// One claim of due outbox messages (a helper: Swift 6.3 mixed up several inline closures of this shape in one test).
    static func claimDue(_ store: any Store, now: Date, owner: String, leaseUntil: Date) async throws -> [OutboxMessage] {
        try await store.write { try $0.outbox.claimDue(now: now, limit: 10, owner: owner, leaseUntil: leaseUntil) }
    }

    @Test(
        "the outbox hands a message to one deliverer at a time, retries it after a failure, and keeps a subject's order",
        arguments: StoreBackend.available
    )
    func outbox(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let events = [
                WebhookEvent(type: .bookingConfirmed, data: ["bookingId": "5", "status": "confirmed"], subject: "booking:5"),
                WebhookEvent(type: .bookingRefunded, data: ["bookingId": "5", "status": "refunded"], subject: "booking:5"),
                WebhookEvent(type: .replayDetected, data: ["reason": "x"]),
            ]
            try await store.write { try $0.outbox.enqueue(events, tenantId: "a", now: Self.now) }
            let lease = Self.now.addingTimeInterval(60)
            let first = try await Self.claimDue(store, now: Self.now, owner: "one", leaseUntil: lease)
            #expect(first.count == 3)
            #expect(first.filter { $0.subject == "booking:5" }.map(\.sequence) == [1, 2])
            #expect(try await Self.claimDue(store, now: Self.now, owner: "two", leaseUntil: lease).isEmpty, "leased to one")

            // Deliverer one dies; after its lease, two takes every message over.
            let later = lease.addingTimeInterval(1)
            let takenOver = try await Self.claimDue(store, now: later, owner: "two", leaseUntil: later.addingTimeInterval(60))
            #expect(takenOver.count == 3)
            let confirmed = try #require(takenOver.first { $0.sequence == 1 })
            let refunded = try #require(takenOver.first { $0.sequence == 2 })
            let replay = try #require(takenOver.first { $0.subject == nil })
            // The first event of the subject fails: the second is given back and waits behind it.
            try await store.write { tx in
                try tx.outbox.recordAttempt(
                    confirmed,
                    statusCode: 500,
                    error: "http_status",
                    delivered: false,
                    nextAttemptAt: later.addingTimeInterval(30),
                    now: later
                )
                try tx.outbox.release(refunded)
                try tx.outbox.recordAttempt(replay, statusCode: 200, error: nil, delivered: true, nextAttemptAt: nil, now: later)
            }
            #expect(
                try await Self.claimDue(store, now: later.addingTimeInterval(1), owner: "two", leaseUntil: later.addingTimeInterval(90)).isEmpty,
                "the second event must wait for the first's retry; the delivered one is done"
            )
            let retry = try await Self.claimDue(store, now: later.addingTimeInterval(31), owner: "two", leaseUntil: later.addingTimeInterval(90))
            #expect(retry.map(\.sequence) == [1, 2])
            #expect(retry.first?.attempts == 1)
            let payload = try #require(retry.first?.payload)
            #expect(payload.contains(#""sequence":1"#) && payload.contains(#""tenant":"a""#) && payload.contains(#""type":"booking.confirmed""#))
            #expect(try await store.read { try $0.outbox.deliveries(tenantId: "a", page: Page()).total } == 2)
            #expect(try await store.read { try $0.outbox.deliveries(tenantId: "b", page: Page()).total } == 0)
        }
    }

    /// One tenant's claim (a helper, like `claimDue`).
    static func claimDue(_ store: any Store, tenantId: String, now: Date) async throws -> [OutboxMessage] {
        try await store.write {
            try $0.outbox.claimDue(tenantId: tenantId, now: now, limit: 10, owner: "loop-\(tenantId)", leaseUntil: now.addingTimeInterval(60))
        }
    }

    @Test(
        "claims per tenant see only that tenant; a message given up on is a dead letter (not claimed, not queued, listed) until re-sent",
        arguments: StoreBackend.available
    )
    func deadLetters(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try await store.write { tx in
                try tx.outbox.enqueue([WebhookEvent(type: .replayDetected, data: ["reason": "a"])], tenantId: "a", now: Self.now)
                try tx.outbox.enqueue([WebhookEvent(type: .replayDetected, data: ["reason": "b"])], tenantId: "b", now: Self.now)
            }
            let mine = try await Self.claimDue(store, tenantId: "a", now: Self.now)
            #expect(mine.map(\.tenantId) == ["a"])
            let message = try #require(mine.first)
            try await store.write { tx in
                try tx.outbox.recordAttempt(message, statusCode: nil, error: "timeout", delivered: false, nextAttemptAt: nil, now: Self.now)
            }
            let later = Self.now.addingTimeInterval(86_400)
            #expect(try await Self.claimDue(store, tenantId: "a", now: later).isEmpty, "a dead letter is not claimed")
            #expect(try await store.read { try $0.outbox.pendingCount() } == 1, "only b's message is queued")
            let dead = try await store.read { try $0.outbox.deadLetters(tenantId: "a", page: Page()) }
            #expect(dead.total == 1 && dead.items.first?.attempts == 1 && dead.items.first?.outboxId == message.id)
            #expect(try await store.read { try $0.outbox.deadLetters(tenantId: "b", page: Page()).total } == 0)
            let delivery = try #require(dead.items.first?.lastDeliveryId)
            #expect(try await store.write { try $0.outbox.resend(deliveryId: delivery, tenantId: "a", now: later) })
            let revived = try await Self.claimDue(store, tenantId: "a", now: later)
            #expect(revived.map(\.id) == [message.id] && revived.first?.attempts == 0)
            #expect(try await store.read { try $0.outbox.deadLetters(tenantId: "a", page: Page()).total } == 0)
        }
    }

    @Test("a unit of work alone (nobody else writing) that throws writes nothing; the next one alone commits", arguments: StoreBackend.available)
    func failingUnitAlone(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            struct Refused: Error {}
            for index in 0..<3 {
                await #expect(throws: Refused.self) {
                    try await store.write { tx in
                        try tx.audit.append(
                            AuditRecord(
                                tenantId: "a",
                                actor: .system,
                                action: .apiKeyCreated,
                                bookingId: nil,
                                purchaseId: nil,
                                detail: ["n": "refused \(index)"],
                                at: Self.now
                            )
                        )
                        throw Refused()
                    }
                }
                try await store.write { tx in
                    try tx.audit.append(
                        AuditRecord(
                            tenantId: "a",
                            actor: .system,
                            action: .apiKeyCreated,
                            bookingId: nil,
                            purchaseId: nil,
                            detail: ["n": "kept \(index)"],
                            at: Self.now
                        )
                    )
                }
            }
            let entries = try await store.read { try $0.audit.audit(tenantId: "a", page: Page(limit: 100)) }
            #expect(entries.total == 3)
            #expect(entries.items.allSatisfy { $0.detail?.contains("kept") == true && $0.detail?.contains("refused") == false })
        }
    }

    @Test("among 40 concurrent units of work, the ones that throw write nothing and the others all commit", arguments: StoreBackend.available)
    func failingUnitsAlone(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            struct Refused: Error {}
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        do {
                            try await store.write { tx in
                                try tx.audit.append(
                                    AuditRecord(
                                        tenantId: "a",
                                        actor: .system,
                                        action: .apiKeyCreated,
                                        bookingId: nil,
                                        purchaseId: nil,
                                        detail: ["n": String(index)],
                                        at: Self.now
                                    )
                                )
                                if index % 2 == 1 { throw Refused() }
                            }
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                var committed = 0
                for await ok in group where ok { committed += 1 }
                return committed
            }
            #expect(outcomes == 20)
            let entries = try await store.read { try $0.audit.audit(tenantId: "a", page: Page(limit: 100)) }
            #expect(entries.total == 20)
            #expect(entries.items.allSatisfy { entry in (Int(entry.detail?.filter(\.isNumber) ?? "") ?? 1) % 2 == 0 })
        }
    }

    @Test("listings page newest first with a total, and see only their tenant", arguments: StoreBackend.available)
    func pagingAndIsolation(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let start = Self.now.addingTimeInterval(5 * 86_400)
            var created: [Booking] = []
            for index in 0..<7 {
                created.append(
                    try await Self.admit(
                        store,
                        user: "u\(index)",
                        quote: Self.quote(Resource(id: "x\(index)", kind: .rental, name: "X", pricePerDayMinor: 1), start: start),
                        now: Self.now.addingTimeInterval(Double(index))
                    )
                )
            }
            _ = try await Self.admit(store, tenant: "b", user: "u0", quote: Self.quote(Self.rental, start: start))
            let page = try await store.read { try $0.bookings.bookings(tenantId: "a", filter: BookingFilter(), page: Page(limit: 3, offset: 3)) }
            #expect(page.total == 7)
            #expect(page.items.map(\.id) == created.reversed()[3..<6].map(\.id))
            #expect(
                try await store.read { try $0.bookings.bookings(tenantId: "a", filter: BookingFilter(userId: "u2"), page: Page()) }.items.map(\.id)
                    == [created[2].id]
            )
            // Another tenant cannot read or claim a's booking by id.
            let firstId = created[0].id
            #expect(try await store.read { try $0.bookings.booking(id: firstId, tenantId: "b", forUpdate: false) } == nil)
            let audit = try await store.read { try $0.audit.audit(tenantId: "b", page: Page()) }
            #expect(audit.total == 1 && audit.items.allSatisfy { $0.tenantId == "b" })
        }
    }

    @Test(
        "operators' reads: purchases by filter and their export oldest first, one booking's audit, the webhook queue's depth, applied migrations",
        arguments: StoreBackend.available
    )
    func operatorsReads(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let start = Self.now.addingTimeInterval(5 * 86_400)
            var bookings: [Booking] = []
            for index in 0..<3 {
                let resource = Resource(id: "r\(index)", kind: .rental, name: "R", pricePerDayMinor: 1)
                let booking = try await Self.admit(store, user: index == 2 ? "bo" : "al", quote: Self.quote(resource, start: start))
                bookings.append(booking)
                _ = try await Self.claim(
                    store,
                    booking: booking,
                    user: booking.userId,
                    transactionId: "20000000000001\(index)",
                    now: Self.now.addingTimeInterval(Double(index) * 60)
                )
            }
            _ = try await Self.admit(store, tenant: "b", user: "al", quote: Self.quote(Self.rental, start: start))
            let byUser = try await store.read { try $0.purchases.purchases(tenantId: "a", filter: PurchaseFilter(userId: "al"), page: Page()) }
            #expect(byUser.total == 2)
            #expect(byUser.items.map(\.transactionId) == ["200000000000011", "200000000000010"], "newest first")
            let window = PurchaseFilter(environment: .sandbox, from: Self.now.addingTimeInterval(30), to: Self.now.addingTimeInterval(150))
            #expect(
                try await store.read { try $0.purchases.purchases(tenantId: "a", filter: window, page: Page()) }.items.map(\.userId)
                    == ["al", "bo"].reversed()
            )
            #expect(
                try await store.read { try $0.purchases.purchases(tenantId: "a", filter: PurchaseFilter(status: .refunded), page: Page()) }.total == 0
            )
            #expect(
                try await store.read { try $0.purchases.purchases(tenantId: "a", filter: PurchaseFilter(environment: .production), page: Page()) }
                    .total == 0
            )
            let export = try await store.read { try $0.purchases.exportPurchases(tenantId: "a", filter: PurchaseFilter(), limit: 2) }
            #expect(export.map(\.transactionId) == ["200000000000010", "200000000000011"], "oldest first, up to the limit")
            #expect(try await store.read { try $0.purchases.exportPurchases(tenantId: "b", filter: PurchaseFilter(), limit: 10) }.isEmpty)

            let firstId = bookings[0].id
            let trail = try await store.read { try $0.audit.audit(tenantId: "a", bookingId: firstId, page: Page()) }
            #expect(trail.total >= 2 && trail.items.allSatisfy { $0.bookingId == firstId }, "created and paid, this booking's only")
            #expect(try await store.read { try $0.audit.audit(tenantId: "b", bookingId: firstId, page: Page()) }.total == 0)

            let pending = try await store.read { try $0.outbox.pendingCount() }
            #expect(pending == 3, "one booking.confirmed event per paid booking waits for delivery")
            let applied = try await store.read { try $0.schema.appliedMigrations() }
            #expect(applied.contains("001") || applied.contains { $0.hasPrefix("001") }, "\(applied)")
        }
    }
}

/// Moves racing for the last seat (issue "Run the season").
extension StoreConformance {
    /// A tenant selling the conformance suite's `tour` (3 seats at 10:00 UTC) with product `p`.
    static func seasonRuntime() async throws -> TenantRuntime {
        let json = """
            {"id": "a", "name": "a", "currency": "EUR",
             "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "products": [{"id": "p", "kind": "booking", "type": "Consumable", "title": "A tour"}],
             "resources": [{"id": "tour", "kind": "experience", "name": "Tour", "experienceType": "sunset", "pricePerSeatMinor": 1000,
                            "seatsPerSlot": 3, "slotTimes": ["10:00"], "durationMinutes": 60}],
             "bookingRules": {"rentalPriceBands": [], "experienceProducts": {"sunset": "p"}}}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        return try await TenantRuntime(
            tenant: tenant,
            baseDirectory: FileManager.default.temporaryDirectory,
            environment: ["A_SECRET": String(repeating: "s", count: 32)],
            httpClient: .shared,
            logger: Logger(label: "conformance")
        )
    }

    struct FixedClock: BerthClock {
        let instant: Date
        func now() -> Date { instant }
    }

    @Test(
        "two customers moving into the last seat at once: one wins, the other gets slot_taken; the seats never go past the slot's, the loser keeps its old place",
        arguments: StoreBackend.available
    )
    func movesRaceForTheLastSeat(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let runtime = try await Self.seasonRuntime()
            let resource = try #require(runtime.tenant.resource(id: "tour"))
            // Whole UTC days ahead, at the 10:00 slot.
            let midnight = Date(timeIntervalSince1970: (Self.now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
            let dayOne = midnight.addingTimeInterval(3 * 86_400 + 10 * 3600), dayTwo = dayOne.addingTimeInterval(86_400)
            func quote(_ slot: Date, seats: Int) throws -> BookingQuote {
                try runtime.tenant.quote(BookingRequest(resourceId: "tour", slot: slot, seats: seats), now: Self.now)
            }
            _ = try await Self.admit(store, user: "crowd", quote: try quote(dayTwo, seats: 2))
            let first = try await Self.admit(store, user: "ann", quote: try quote(dayOne, seats: 1))
            let second = try await Self.admit(store, user: "bea", quote: try quote(dayOne, seats: 1))
            let move = MoveBooking(store: store, clock: FixedClock(instant: Self.now))
            let outcomes = await withTaskGroup(of: Result<Booking, any Error>.self) { group in
                for (booking, user) in [(first, "ann"), (second, "bea")] {
                    group.addTask {
                        do {
                            return .success(
                                try await move(
                                    .init(runtime: runtime, bookingId: booking.id, userId: user, actor: .user(user), slot: .instant(dayTwo))
                                ).booking
                            )
                        } catch { return .failure(error) }
                    }
                }
                var all: [Result<Booking, any Error>] = []
                for await outcome in group { all.append(outcome) }
                return all
            }
            let wins = outcomes.compactMap { try? $0.get() }
            let codes = outcomes.compactMap { outcome -> String? in
                guard case .failure(let error) = outcome else { return nil }
                return (error as? DomainError)?.code.rawValue ?? "\(error)"
            }
            #expect(wins.count == 1 && wins.first?.start == dayTwo, "\(outcomes)")
            #expect(codes == ["slot_taken"], "\(codes)")
            func seats(_ slot: Date) async throws -> Int {
                let occupancy = try await store.write { tx in
                    try tx.bookings.admit(
                        tenantId: "a",
                        resourceId: resource.id,
                        start: slot,
                        end: slot.addingTimeInterval(3600),
                        excluding: nil,
                        now: Self.now
                    )
                }
                return occupancy.seats
            }
            #expect(try await seats(dayTwo) == 3, "the slot is full, never over")
            #expect(try await seats(dayOne) == 1, "the loser kept its seat on day one, the winner gave its back")
            let stored = try await store.read { tx in
                [
                    try tx.bookings.booking(id: first.id, tenantId: "a", forUpdate: false),
                    try tx.bookings.booking(id: second.id, tenantId: "a", forUpdate: false),
                ]
            }
            #expect(stored.compactMap { $0?.start }.sorted() == [dayOne, dayTwo])
        }
    }
}

/// A dearer move waits for its difference (issue "Run the season"), on every backend.
extension StoreConformance {
    @Test(
        "a paid booking's move to a dearer day holds the new day with a booking of the difference; once that is paid the booking moves there with both purchases, the hold is gone and the old day is free",
        arguments: StoreBackend.available
    )
    func dearerMoveWaitsForTheDifference(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let midnight = Date(timeIntervalSince1970: (Self.now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
            let dayOne = midnight.addingTimeInterval(3 * 86_400), dayTwo = dayOne.addingTimeInterval(86_400)
            let secondDay = ISO8601DateFormatter().string(from: dayTwo).prefix(10)
            let json = """
                {"id": "a", "name": "a", "currency": "EUR",
                 "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
                 "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
                 "products": [{"id": "p", "kind": "booking", "type": "Consumable", "title": "A day"}],
                 "resources": [{"id": "boat", "kind": "rental", "name": "Boat", "pricePerDayMinor": 5000,
                                "prices": [{"from": "\(secondDay)", "to": "\(secondDay)", "pricePerDayMinor": 6000}]}],
                 "bookingRules": {"rentalPriceBands": [{"maxPriceMinor": 100000, "productId": "p"}], "experienceProducts": {}}}
                """
            let runtime = try await TenantRuntime(
                tenant: try JSONDecoder().decode(Tenant.self, from: Data(json.utf8)),
                baseDirectory: FileManager.default.temporaryDirectory,
                environment: ["A_SECRET": String(repeating: "s", count: 32)],
                httpClient: .shared,
                logger: Logger(label: "conformance")
            )
            let quote = try runtime.tenant.quote(BookingRequest(resourceId: "boat", start: dayOne, end: dayTwo), now: Self.now)
            let booking = try await Self.admit(store, user: "ann", quote: quote)
            guard case .applied = try await Self.claim(store, booking: booking, user: "ann", transactionId: "2000000000061001") else {
                Issue.record("the booking was not paid")
                return
            }
            let move = MoveBooking(store: store, clock: FixedClock(instant: Self.now))
            let moved = try await move(
                .init(
                    runtime: runtime,
                    bookingId: booking.id,
                    userId: "ann",
                    actor: .user("ann"),
                    start: .instant(dayTwo),
                    end: .instant(dayTwo.addingTimeInterval(86_400))
                )
            )
            let hold = try #require(moved.difference)
            #expect(moved.booking.start == dayOne && hold.priceMinor == 1000 && hold.changeOf == booking.id && hold.start == dayTwo)
            guard case .applied = try await Self.claim(store, booking: hold, user: "ann", transactionId: "2000000000061002") else {
                Issue.record("the difference was not paid")
                return
            }
            let (after, gone, purchases) = try await store.read { tx in
                (
                    try tx.bookings.booking(id: booking.id, tenantId: "a", forUpdate: false),
                    try tx.bookings.booking(id: hold.id, tenantId: "a", forUpdate: false),
                    try tx.purchases.purchases(tenantId: "a", page: Page()).items
                )
            }
            #expect(after?.start == dayTwo && after?.priceMinor == 6000 && after?.status == .confirmed, "\(String(describing: after))")
            #expect(gone == nil, "the hold is gone")
            #expect(purchases.map(\.bookingId) == [booking.id, booking.id], "both purchases are the booking's")
            func held(_ day: Date) async throws -> Int {
                let occupancy = try await store.write { tx in
                    try tx.bookings.admit(
                        tenantId: "a",
                        resourceId: "boat",
                        start: day,
                        end: day.addingTimeInterval(86_400),
                        excluding: nil,
                        now: Self.now
                    )
                }
                return occupancy.bookings
            }
            #expect(try await held(dayOne) == 0, "the old day is free")
            #expect(try await held(dayTwo) == 1, "the new day is held once (the hold's share given back)")
        }
    }
}

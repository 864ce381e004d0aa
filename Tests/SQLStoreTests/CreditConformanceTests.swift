import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing
import UseCases

/// The credit ports of the store contract: no overspending under racing reservations, the bonus
/// once, FIFO lots and their uses, refunds with debt, products, and a randomized sequence after
/// which the ledger and the balances agree. Runs against every backend of `StoreBackend.available`.
extension StoreConformance {
    /// One unit of work over an account, as the use cases run it: load (locked), decide, save.
    @discardableResult
    static func change(
        _ store: any Store,
        tenant: String = "a",
        user: String,
        type: String = "c",
        now: Date = now,
        _ decide: @escaping @Sendable (CreditAccount, any StoreSession) throws -> CreditChange?
    ) async throws -> CreditChange? {
        try await store.write { tx in
            let account = try tx.credits.account(tenantId: tenant, userId: user, creditType: type, now: now, forUpdate: true)
            guard let change = try decide(account, tx) else { return nil }
            try tx.save(change, now: now)
            return change
        }
    }

    static func grant(_ store: any Store, tenant: String = "a", user: String, amount: Int64, now: Date = now) async throws {
        try await change(store, tenant: tenant, user: user, now: now) { account, _ in
            CreditRules.grant(account, amount: amount, type: .adjustment, actor: .system, negativeAllowed: false, now: now)
        }
    }

    /// A credit purchase: the shipped unit of work (``Claims/claim(_:proven:request:kind:tx:now:remembering:)`` with
    /// ``CreditsKind``) for a pack of `amount` credits of type `c` (the stored product is set to it first).
    static func buy(
        _ store: any Store,
        user: String = "u",
        amount: Int64,
        transactionId: String,
        negativeAllowed: Bool = false,
        now: Date = now
    ) async throws -> Purchase {
        let json = """
            {"id": "a", "name": "A", "currency": "EUR", "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "credits": {"types": ["c"], "allowNegativeBalance": \(negativeAllowed)}, "products": [], "resources": []}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        let proven = ProvenTransaction(
            transactionId: transactionId,
            originalTransactionId: transactionId,
            productId: "pack",
            environment: .sandbox,
            purchasedAt: now,
            revoked: false,
            appAccountToken: nil,
            proofHash: "h"
        )
        let claim = PurchaseClaim(proven, tenantId: "a", userId: user, target: .credits(type: "c"), now: now)
        let request = PurchaseRequest(
            tenant: tenant,
            policy: PurchasePolicy(),
            emitsEvents: true,
            userId: user,
            productId: "pack",
            transactionId: transactionId,
            named: nil
        )
        let result = try await store.write { tx in
            let product = CreditProduct(
                tenantId: "a",
                productId: "pack",
                creditType: "c",
                credits: amount,
                title: "Pack",
                currency: "EUR",
                createdAt: now,
                updatedAt: now
            )
            if try tx.credits.product(tenantId: "a", productId: "pack") == nil {
                try tx.credits.insert(product)
            } else {
                try tx.credits.update(product)
            }
            return try Claims.claim(claim, proven: proven, request: request, kind: CreditsKind(), tx: tx, now: now)
        }
        guard case .applied(let purchase) = result.outcome else { throw StoreError("the purchase was not applied: \(result.outcome)") }
        return purchase
    }

    static func totals(_ store: any Store, tenant: String = "a") async throws -> [LedgerTotals] {
        try await store.read { try $0.credits.totals(tenantId: tenant, after: nil, limit: 10_000) }
    }

    @Test("20 concurrent reservations of 1 against a balance of 5 hold exactly 5", arguments: StoreBackend.available)
    func racingReservations(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try await Self.grant(store, user: "u", amount: 5)
            let held = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        (try? await Self.change(store, user: "u") { account, _ in
                            try CreditRules.reserve(account, amount: 1, reference: nil, profileId: nil, duration: 600, now: Self.now)
                        }) != nil
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(held == 5)
            let account = try await store.read {
                try $0.credits.account(tenantId: "a", userId: "u", creditType: "c", now: Self.now, forUpdate: false)
            }
            #expect(account.held == 5)
            #expect(account.available == 0)
            // Expired holds count no more.
            let later = try await store.read {
                try $0.credits.account(tenantId: "a", userId: "u", creditType: "c", now: Self.now.addingTimeInterval(601), forUpdate: false)
            }
            #expect(later.held == 0)

            // The summaries (one statement, held credits in a subquery) and the one-statement balance read agree with the account.
            try await Self.grant(store, user: "u", amount: 3, now: Self.now)
            try await store.write { tx in
                let other = try tx.credits.account(tenantId: "a", userId: "u", creditType: "d", now: Self.now, forUpdate: true)
                try tx.save(
                    CreditRules.grant(other, amount: 2, type: .adjustment, actor: .system, negativeAllowed: false, now: Self.now),
                    now: Self.now
                )
            }
            let expected = [
                CreditSummary(creditType: "c", balance: 8, held: 5, debt: 0), CreditSummary(creditType: "d", balance: 2, held: 0, debt: 0),
            ]
            #expect(try await store.read { try $0.credits.summaries(tenantId: "a", userId: "u", now: Self.now) } == expected)
            let sources = try await store.readStatement {
                try $0.userState.creditSources(tenantId: "a", userId: "u", now: Self.now, waitingTokens: ["t"])
            }
            #expect(sources.summaries == expected && !sources.bonusGranted && sources.waiting.isEmpty)
            let expired = try await store.readStatement {
                try $0.userState.creditSources(tenantId: "a", userId: "u", now: Self.now.addingTimeInterval(601), waitingTokens: [])
            }
            #expect(expired.summaries.map(\.held) == [0, 0], "expired holds count no more")
            #expect(
                try await store.readStatement { try $0.userState.creditSources(tenantId: "b", userId: "u", now: Self.now, waitingTokens: []) }
                    .summaries.isEmpty
            )
        }
    }

    @Test("the signup bonus is claimed once per user and tenant, whoever races for it", arguments: StoreBackend.available)
    func bonusOnce(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let claimed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<10 { group.addTask { try await store.write { try $0.credits.recordBonus(tenantId: "a", userId: "u", now: Self.now) } } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(claimed == 1)
            #expect(try await store.read { try $0.credits.hasBonus(tenantId: "a", userId: "u") })
            #expect(
                try await store.readStatement { try $0.userState.creditSources(tenantId: "a", userId: "u", now: Self.now, waitingTokens: []) }
                    .bonusGranted
            )
            #expect(
                try await !store.readStatement { try $0.userState.creditSources(tenantId: "a", userId: "v", now: Self.now, waitingTokens: []) }
                    .bonusGranted
            )
            #expect(try await !store.read { try $0.credits.hasBonus(tenantId: "b", userId: "u") })
            #expect(try await store.write { try $0.credits.recordBonus(tenantId: "b", userId: "u", now: Self.now) })
        }
    }

    @Test(
        "usage takes the oldest lot first and records its profile; a refund of a spent pack takes its rest and records a debt",
        arguments: StoreBackend.available
    )
    func fifoAndRefund(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let first = try await Self.buy(store, user: "u", amount: 3, transactionId: "t1", now: Self.now)
            let second = try await Self.buy(store, user: "u", amount: 3, transactionId: "t2", now: Self.now.addingTimeInterval(1))
            let reserved = try #require(
                try await Self.change(store, user: "u") { account, _ in
                    try CreditRules.reserve(account, amount: 4, reference: "r", profileId: "mom", duration: 600, now: Self.now)
                }?.newReservation
            )
            try await Self.change(store, user: "u") { account, tx in
                let stored = try #require(try tx.credits.reservation(id: reserved.id, tenantId: "a", forUpdate: true))
                return try CreditRules.commit(stored, account: account, actor: .user("u"), now: Self.now)
            }
            let page = try await store.read { try $0.credits.lots(tenantId: "a", userId: "u", creditType: "c", page: Page()) }
            let lots = page.items
            #expect(page.total == 2)
            let laterPage = try await store.read { try $0.credits.lots(tenantId: "a", userId: "u", creditType: "c", page: Page(limit: 1, offset: 1)) }
            #expect(laterPage.total == 2 && laterPage.items.map(\.lot.id) == [lots[1].lot.id], "pages of lots, oldest first")
            // The check walks accounts in batches: every account once, in order, whatever the batch size.
            let all = try await Self.totals(store)
            var walked: [String] = []
            var after: (userId: String, creditType: String)?
            while true {
                let cursor = after
                let batch = try await store.read { try $0.credits.totals(tenantId: "a", after: cursor, limit: 1) }
                guard let last = batch.last else { break }
                walked += batch.map { "\($0.userId)/\($0.creditType)" }
                after = (last.userId, last.creditType)
            }
            #expect(walked == all.map { "\($0.userId)/\($0.creditType)" } && !walked.isEmpty)
            #expect(lots.map(\.lot.remaining) == [0, 2])
            #expect(lots.map(\.lot.purchaseId) == [first.id, second.id])
            #expect(lots[0].uses.map(\.profileId) == ["mom"])
            #expect(lots[0].lot.consumedAt != nil)
            #expect(try await store.read { try $0.credits.reservation(reference: "r", tenantId: "a", userId: "u") }?.status == .committed)

            // Apple refunds the first pack, already spent: the balance (2) goes, 1 remains owed.
            try await Self.change(store, user: "u") { account, tx in
                let grant = try #require(try tx.credits.grant(purchaseId: first.id, tenantId: "a"))
                #expect(grant.lot?.purchaseId == first.id)
                return CreditRules.refund(
                    account,
                    amount: 3,
                    purchaseEntry: grant.entry,
                    purchaseLot: grant.lot,
                    reason: "REFUND",
                    negativeAllowed: false,
                    now: Self.now
                )
            }
            let account = try await store.read {
                try $0.credits.account(tenantId: "a", userId: "u", creditType: "c", now: Self.now, forUpdate: false)
            }
            #expect(account.balance.balance == 0)
            #expect(account.balance.debt == 1)
            let purchases = try await store.read { try $0.credits.entries(tenantId: "a", filter: LedgerFilter(type: .purchase), page: Page()) }
            #expect(purchases.items.first { $0.purchaseId == first.id }?.status == .refunded)
            #expect(try await Self.totals(store).allSatisfy { $0.problems(negativeAllowed: false).isEmpty })
            let stats = try await store.read { try $0.credits.stats(tenantId: "a", from: nil, to: nil) }
            #expect(stats == [CreditProductStats(productId: "pack", purchases: 2, creditsGranted: 6, refunds: 1, creditsRefunded: 3)])
        }
    }

    @Test("products: the catalog seeds what is missing and leaves operators' edits; ids are unique per tenant", arguments: StoreBackend.available)
    func products(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let pack = CreditProduct(
                tenantId: "a",
                productId: "p1",
                creditType: "c",
                credits: 10,
                title: "Ten",
                currency: "EUR",
                createdAt: Self.now,
                updatedAt: Self.now
            )
            #expect(try await store.write { try $0.credits.seed([pack]) } == 1)
            var editing = pack
            editing.credits = 12
            editing.active = false
            let edited = editing
            try await store.write { try $0.credits.update(edited) }
            var second = pack
            second.productId = "p2"
            let other = second
            #expect(try await store.write { try $0.credits.seed([pack, other]) } == 1)
            #expect(try await store.read { try $0.credits.product(tenantId: "a", productId: "p1") } == edited)
            await #expect(throws: (any Error).self) { try await store.write { try $0.credits.insert(pack) } }
            var copy = pack
            copy.tenantId = "b"
            let forB = copy
            try await store.write { try $0.credits.insert(forB) }
            #expect(try await store.read { try $0.credits.products(tenantId: "a") }.map(\.productId) == ["p1", "p2"])
        }
    }

    @Test(
        "a reference holds one live reservation; ledger listings page newest first, filter, and export oldest first",
        arguments: StoreBackend.available
    )
    func referencesAndListings(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try await Self.grant(store, user: "u", amount: 5)
            try await Self.grant(store, user: "v", amount: 1)
            try await Self.change(store, user: "u") { account, _ in
                try CreditRules.reserve(account, amount: 1, reference: "gen", profileId: nil, duration: 60, now: Self.now)
            }
            await #expect(throws: (any Error).self) {
                try await Self.change(store, user: "u") { account, _ in
                    try CreditRules.reserve(account, amount: 1, reference: "gen", profileId: nil, duration: 60, now: Self.now)
                }
            }
            for index in 1...3 { try await Self.grant(store, user: "u", amount: Int64(index), now: Self.now.addingTimeInterval(Double(index))) }
            let page = try await store.read {
                try $0.credits.entries(tenantId: "a", filter: LedgerFilter(userId: "u"), page: Page(limit: 2, offset: 0))
            }
            #expect(page.total == 4)
            #expect(page.items.map(\.amount) == [3, 2])
            let exported = try await store.read { try $0.credits.export(tenantId: "a", filter: LedgerFilter(userId: "u"), limit: 10) }
            #expect(exported.map(\.amount) == [5, 1, 2, 3])
            #expect(exported.map(\.sequence) == [1, 2, 3, 4])
            #expect(try await store.read { try $0.credits.entries(tenantId: "b", filter: LedgerFilter(), page: Page()) }.total == 0)
        }
    }

    @Test(
        "randomized purchases, reservations, commits, releases, expiries, refunds, reversals and adjustments leave the ledger and the balances in agreement",
        arguments: StoreBackend.available
    )
    func randomizedLedger(backend: StoreBackend) async throws {
        for (seed, negativeAllowed) in [(UInt64(1), false), (2, false), (3, true), (4, true)] {
            try await withStore(backend) { store in
                try await Self.randomRun(store, seed: seed, steps: 150, negativeAllowed: negativeAllowed)
            }
        }
    }

    /// One randomized run against a model of the balance (what should be there) and the debt.
    static func randomRun(_ store: any Store, seed: UInt64, steps: Int, negativeAllowed: Bool) async throws {
        var random = SeededGenerator(seed: seed)
        var clock = now
        var purchases: [(purchase: Purchase, refunded: Bool)] = []
        var held: [CreditReservation] = []
        var model: (balance: Int64, debt: Int64) = (0, 0)
        for step in 0..<steps {
            clock = clock.addingTimeInterval(Double(Int.random(in: 1...90, using: &random)))
            let at = clock
            switch Int.random(in: 0..<7, using: &random) {
            case 0:  // a purchase
                let amount = Int64.random(in: 1...20, using: &random)
                let purchase = try await buy(store, amount: amount, transactionId: "t\(seed)-\(step)", negativeAllowed: negativeAllowed, now: at)
                purchases.append((purchase, false))
                let settle = negativeAllowed ? 0 : min(model.debt, amount)
                model = (model.balance + amount - settle, model.debt - settle)
            case 1, 2:  // a reservation (refused when short)
                let amount = Int64.random(in: 1...6, using: &random)
                let reservation = try? await change(store, user: "u", now: at) { account, _ in
                    try CreditRules.reserve(account, amount: amount, reference: nil, profileId: "p\(step % 3)", duration: 300, now: at)
                }?.newReservation
                if let reservation { held.append(reservation) }
            case 3, 4:  // commit or release one (it may have expired)
                guard !held.isEmpty else { continue }
                let reservation = held.remove(at: Int.random(in: 0..<held.count, using: &random))
                let commit = Bool.random(using: &random)
                let settled = try? await change(store, user: "u", now: at) { account, tx in
                    let stored = try tx.credits.reservation(id: reservation.id, tenantId: "a", forUpdate: true)!
                    return commit
                        ? try CreditRules.commit(stored, account: account, actor: .user("u"), now: at)
                        : try CreditRules.release(stored, account: account, now: at)
                }
                if commit, settled != nil { model.balance -= reservation.amount }
                #expect((settled != nil) == (reservation.expiresAt > at), "a held reservation settles until it expires")
            case 5:  // Apple refunds a purchase
                guard let index = purchases.indices.filter({ !purchases[$0].refunded }).randomElement(using: &random) else { continue }
                let purchase = purchases[index].purchase
                let change = try await change(store, user: "u", now: at) { account, tx in
                    let grant = try tx.credits.grant(purchaseId: purchase.id, tenantId: "a")
                    return CreditRules.refund(
                        account,
                        amount: purchase.credits!,
                        purchaseEntry: grant?.entry,
                        purchaseLot: grant?.lot,
                        reason: "REFUND",
                        negativeAllowed: negativeAllowed,
                        now: at
                    )
                }
                purchases[index].refunded = true
                model = (model.balance + change!.amount, model.debt + change!.entries.reduce(0) { $0 + $1.debtChange })
                if !negativeAllowed { #expect(change!.account.balance.balance >= 0) }
            default:  // a reversal, or an operator's adjustment
                if let index = purchases.indices.filter({ purchases[$0].refunded }).randomElement(using: &random), Bool.random(using: &random) {
                    let purchase = purchases[index].purchase
                    try await change(store, user: "u", now: at) { account, tx in
                        CreditRules.reverseRefund(
                            account,
                            amount: purchase.credits!,
                            purchaseEntry: try tx.credits.grant(purchaseId: purchase.id, tenantId: "a")?.entry,
                            negativeAllowed: negativeAllowed,
                            now: at
                        )
                    }
                    purchases[index].refunded = false
                    let settle = negativeAllowed ? 0 : min(model.debt, purchase.credits!)
                    model = (model.balance + purchase.credits! - settle, model.debt - settle)
                } else {
                    let amount = Int64.random(in: -3...5, using: &random)
                    guard amount != 0 else { continue }
                    let applied = try? await change(store, user: "u", now: at) { account, _ in
                        try CreditRules.adjust(account, amount: amount, actor: .system, reason: "fix", negativeAllowed: negativeAllowed, now: at)
                    }
                    if let applied { model = (model.balance + applied.amount, model.debt + applied.entries.reduce(0) { $0 + $1.debtChange }) }
                }
            }
            let totals = try await totals(store)
            #expect(totals.allSatisfy { $0.problems(negativeAllowed: negativeAllowed).isEmpty }, "seed \(seed) step \(step): \(totals)")
            #expect(totals.first.map { ($0.balance, $0.debt) } ?? (0, 0) == model, "seed \(seed) step \(step)")
        }
    }
}

/// A small deterministic generator (SplitMix64), so that a failing randomized run can be replayed by its seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

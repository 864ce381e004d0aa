import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

/// The overview's money on every backend: a month of purchases across the App Store (a renewal
/// included), Google Play and the card rail, one refunded, one without a price.
extension StoreConformance {
    @Test(
        "overview money: every priced purchase counted at its price per store, the refunded one in refunds on the day of its refund, the unpriced one counted apart, never silently dropped",
        arguments: StoreBackend.available
    )
    func overviewMoneyOfAMonth(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let day: TimeInterval = 86_400
            let start = Self.now.addingTimeInterval(-30 * day)
            var refunded = Self.sale("m-2", user: "bob", price: 135_000, at: start.addingTimeInterval(4 * day))
            refunded.refund(at: start.addingTimeInterval(16 * day))
            var unpriced = Self.sale("m-5", user: "eve", at: start.addingTimeInterval(12 * day))
            unpriced.priceMilliunits = nil
            unpriced.currency = nil
            let sales = [
                Self.sale("m-1", user: "ann", price: 80_000, at: start.addingTimeInterval(1 * day)),
                refunded,
                Self.sale("m-3", user: "cai", store: .googlePlay, price: 4_990, at: start.addingTimeInterval(7 * day)),
                Self.sale("m-4", user: "dia", store: .card, price: 90_000, at: start.addingTimeInterval(9 * day)),
                // a renewal: its own row, its own price
                Self.sale("m-6", user: "ann", price: 4_990, at: start.addingTimeInterval(20 * day), original: "m-1"),
                unpriced,
                Self.sale("m-7", user: "old", price: 1_000_000, at: start.addingTimeInterval(-2 * day)),  // before the period
            ]
            try await store.write { tx in for sale in sales { try tx.purchases.insert(sale, proofHash: "h-\(sale.transactionId)") } }
            var tenant = try Self.bookingTenant("a")
            tenant.timeZone = "Europe/Rome"
            let facts = try await store.read { tx in
                try tx.operatorViews.overview(
                    tenantId: "a",
                    from: start,
                    to: Self.now,
                    now: Self.now,
                    heldUntil: Self.now.addingTimeInterval(8 * day),
                    playOverdueBefore: Self.now
                )
            }
            let overview = Overview.make(facts, tenant: tenant, from: start, to: Self.now, interval: .day, now: Self.now)
            #expect(
                overview.moneyIn.map { [$0.currency: $0.milliunits] } == [["EUR": 80_000 + 135_000 + 4_990 + 90_000 + 4_990]],
                "\(overview.moneyIn)"
            )
            #expect(overview.refunds.map { [$0.currency: $0.milliunits] } == [["EUR": 135_000]])
            #expect(overview.withoutAmount == ["app_store": 1], "\(overview.withoutAmount)")
            let byStore = Dictionary(grouping: overview.buckets.flatMap(\.moneyIn), by: \.store).mapValues { $0.reduce(0) { $0 + $1.milliunits } }
            #expect(byStore == ["app_store": 80_000 + 135_000 + 4_990, "google_play": 4_990, "stripe": 90_000], "\(byStore)")
            #expect(overview.buckets.flatMap(\.moneyIn).reduce(0) { $0 + $1.count } == 5, "five priced purchases, the renewal among them")
            // The refund is counted on the day the money went back, not on the day it was paid.
            let refundDays = overview.buckets.filter { !$0.refunds.isEmpty }.map(\.label)
            let rome = try #require(TimeZone(identifier: "Europe/Rome"))
            #expect(refundDays == [String(ZonedTime.format(start.addingTimeInterval(16 * day), in: rome).prefix(10))], "\(refundDays)")
            let stored = try await store.read { tx in
                try tx.purchases.purchase(store: .appStore, environment: .sandbox, transactionId: "m-2", forUpdate: false)
            }
            #expect(
                stored?.refundedAt.map { abs($0.timeIntervalSince(start.addingTimeInterval(16 * day))) < 0.002 } == true,
                "the refund's time is kept"
            )
        }
    }
}

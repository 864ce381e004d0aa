import AppleSignedData
import Domain
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import PlayStandIn
import TestKit
import Testing

/// The overview's money against the sums of a month scripted through Berth's real doors: App Store
/// purchases with Apple's signed prices, a renewal Apple announces by notification, a Google Play
/// subscription and its renewal (Google's recurring price), a purchase Apple signed without a price,
/// and a refund on a later day.
extension GooglePlayTests {
    @Test(
        "a month of money: every purchase at its signed price (Apple's renewal and Google's renewal each a row of their own), the unpriced one counted apart, the refund counted on the day it happened"
    )
    func monthOfMoney() async throws {
        try await Self.withPlay { rig in
            let harness = rig.harness
            let day: TimeInterval = 86_400
            let t0 = harness.clock.now()
            let admin = try await harness.apiKey("braindumpster-test", .admin)
            func at(_ offset: Double) -> Date { t0.addingTimeInterval(offset * day) }
            func notify(_ type: AppleSignedData.NotificationType, _ transaction: TransactionPayload) async throws -> [String: Any] {
                let payload = try harness.ca.signNotification(
                    type: type,
                    bundleId: Self.brain,
                    transaction: transaction,
                    signedDate: harness.clock.now()
                )
                let reply = try await rig.client.call(.post, "/api/apple/notifications/braindumpster-test", auth: nil, json: ["signedPayload": payload])
                #expect(reply.status == .ok, "\(reply.json)")
                return reply.json
            }
            func period(_ id: String, original: String, start: Date, price: Int64?) -> TransactionPayload {
                var t = TransactionPayload.testPurchase(
                    bundleId: Self.brain,
                    productId: Self.yearly,
                    transactionId: id,
                    originalTransactionId: original,
                    type: .autoRenewableSubscription,
                    price: price,
                    currency: price == nil ? nil : "EUR",
                    purchaseDate: start,
                    signedDate: harness.clock.now(),
                    expiresDate: start.addingTimeInterval(365 * day)
                )
                t.signedDate = AppleTimestamp(harness.clock.now())
                return t
            }

            // Day 1: ana buys the yearly plan on iPhone, €39.99 as Apple signs it.
            harness.clock.advance(1 * day)
            let first = period("2000000300000001", original: "2000000300000001", start: at(1), price: 39_990)
            let bought = try await rig.client.call(
                .post,
                "/api/verify-purchase",
                auth: rig.brainKey,
                user: "ana",
                json: ["productId": Self.yearly, "jwsRepresentation": try harness.ca.signTransaction(first)]
            )
            #expect(bought.status == .ok, "\(bought.json)")

            // Day 3: bo buys it on Android; Google's plan costs €29.99 per period.
            harness.clock.advance(2 * day)
            let token = try rig.kit.purchase(
                package: Self.brain,
                productId: Self.yearly,
                subscription: true,
                basePlanId: "yearly",
                accountId: "bo",
                periodDays: 365,
                priceMicros: 29_990_000,
                currency: "EUR",
                now: harness.clock.now()
            ).token
            #expect(try await rig.verify(rig.brainKey, user: "bo", product: Self.yearly, token: token).status == .ok)

            // Day 12: Google renews bo's plan (its own order, its own amount).
            harness.clock.advance(9 * day)
            let renewed = try await rig.push(
                "braindumpster-test",
                try rig.kit.notify(package: Self.brain, token: token, type: "SUBSCRIPTION_RENEWED", now: harness.clock.now())
            )
            #expect(renewed.status == .ok, "\(renewed.json)")

            // Day 15: cy's purchase is signed without a price (as StoreKit 1 receipts and some test transactions are).
            harness.clock.advance(3 * day)
            let unpriced = period("2000000300000009", original: "2000000300000009", start: at(15), price: nil)
            #expect(
                try await rig.client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: rig.brainKey,
                    user: "cy",
                    json: ["productId": Self.yearly, "jwsRepresentation": try harness.ca.signTransaction(unpriced)]
                ).status == .ok
            )

            // Day 20: Apple renews ana's plan and says so only by notification (the app never sends it).
            harness.clock.advance(5 * day)
            let renewal = period("2000000300000002", original: "2000000300000001", start: at(20), price: 41_990)
            let told = try await notify(.didRenew, renewal)
            #expect(told["outcome"] as? String == "subscription_active", "\(told)")

            // Day 25: Apple refunds ana's first period.
            harness.clock.advance(5 * day)
            var refunded = first
            refunded.revocationDate = AppleTimestamp(harness.clock.now())
            refunded.revocationReason = RevocationReason(rawValue: 0)
            _ = try await notify(.refund, refunded)

            harness.clock.advance(2 * day)
            let overview = try await rig.client.call(
                .get,
                "/api/admin/overview?interval=day&from=\(iso(t0))&to=\(iso(harness.clock.now()))",
                auth: admin
            )
            #expect(overview.status == .ok, "\(overview.json)")
            let moneyIn = try #require(overview.json["moneyIn"] as? [[String: Any]])
            #expect(moneyIn.count == 1 && moneyIn.first?["currency"] as? String == "EUR")
            #expect(moneyIn.first?["amountMilliunits"] as? Int == 39_990 + 29_990 + 29_990 + 41_990, "\(moneyIn)")
            let refunds = try #require(overview.json["refunds"] as? [[String: Any]])
            #expect(refunds.first?["amountMilliunits"] as? Int == 39_990 && refunds.count == 1, "\(refunds)")
            #expect(overview.json["purchasesWithoutAmount"] as? [String: Int] == ["app_store": 1], "\(overview.json["purchasesWithoutAmount"] ?? "")")

            let buckets = try #require(overview.json["buckets"] as? [[String: Any]])
            func lines(_ key: String, onDay offset: Double) -> [[String: Any]] {
                let label = String(iso(at(offset)).prefix(10))
                return buckets.first { $0["label"] as? String == label }?[key] as? [[String: Any]] ?? []
            }
            func total(_ lines: [[String: Any]], store: String) -> Int {
                lines.filter { $0["store"] as? String == store }.reduce(0) { $0 + ($1["amountMilliunits"] as? Int ?? 0) }
            }
            #expect(total(lines("moneyIn", onDay: 1), store: "app_store") == 39_990)
            #expect(total(lines("moneyIn", onDay: 3), store: "google_play") == 29_990, "Google's first period at its recurring price")
            #expect(total(lines("moneyIn", onDay: 12), store: "google_play") == 29_990, "Google's renewal: a row with its amount")
            #expect(total(lines("moneyIn", onDay: 20), store: "app_store") == 41_990, "Apple's renewal: a row with the price Apple signed")
            #expect(lines("refunds", onDay: 1).isEmpty, "a refund is not counted on the purchase day")
            #expect(total(lines("refunds", onDay: 25), store: "app_store") == 39_990, "the refund on the day it happened")
            let priced = buckets.flatMap { $0["moneyIn"] as? [[String: Any]] ?? [] }.reduce(0) { $0 + ($1["count"] as? Int ?? 0) }
            #expect(priced == 4)
        }
    }
}

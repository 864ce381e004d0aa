import AppleSignedData
import Domain
import Foundation
import GooglePlayAPI
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import PlayStandIn
import StripeStandIn
import Synchronization
import TestKit
import Testing

/// The overview's money against the sums of a month scripted through Berth's real doors: App Store
/// purchases with Apple's signed prices, a renewal Apple announces by notification, a Google Play
/// subscription and its renewal (Google's recurring price), two boat rentals paid by card (Stripe's
/// stand-in), a purchase Apple signed without a price, a store refund and a partial card refund on
/// later days. One app sells all of it: braindumpster-test, given seaboo-test's boats and card rail.
extension GooglePlayTests {
    @Test("Google's recurringPrice in milliunits: units and nanos add up; absurd nanos, units or a missing currency are no price, never a trap")
    func recurringPriceMilliunits() {
        typealias Money = SubscriptionPurchaseV2.Money
        #expect(Money(currencyCode: "EUR", units: "29", nanos: 990_000_000).milliunits == 29_990)
        #expect(Money(currencyCode: "JPY", units: "500", nanos: nil).milliunits == 500_000)
        #expect(Money(currencyCode: "EUR", units: "1", nanos: Int.min).milliunits == nil)
        #expect(Money(currencyCode: "EUR", units: "1", nanos: 1_000_000_000).milliunits == nil)
        #expect(Money(currencyCode: "EUR", units: String(Int64.max), nanos: 0).milliunits == nil)
        #expect(Money(currencyCode: "EUR", units: "twelve", nanos: 0).milliunits == nil)
        #expect(Money(currencyCode: nil, units: "1", nanos: 0).milliunits == nil)
    }

    @Test(
        "a month of money: App Store purchases at Apple's price, Apple's and Google's renewals each a row with its amount, card payments, the unpriced purchase counted apart, a store refund and a partial card refund on the days they happened"
    )
    func monthOfMoney() async throws {
        let clock = TestClock()
        let stripe = StripeStandIn(webhookSecrets: [CardPaymentTests.secret], now: { clock.now() })
        try await Application(router: stripe.router()).test(.live) { stripeServer in
            try await Self.monthOfMoney(stripe: stripe, port: try #require(stripeServer.port), clock: clock)
        }
    }

    static func monthOfMoney(stripe: StripeStandIn, port: Int, clock: TestClock) async throws {
        // braindumpster-test also rents seaboo-test's boats, in euros, paid through the App Store or by card.
        let boats: @Sendable (inout Catalog) -> Void = { catalog in
            guard let sea = catalog.tenant(id: "seaboo-test"), let index = catalog.tenants.firstIndex(where: { $0.id == "braindumpster-test" })
            else { return }
            catalog.tenants[index].currency = "EUR"
            catalog.tenants[index].resources = sea.resources
            catalog.tenants[index].bookingRules = sea.bookingRules
            catalog.tenants[index].stripe = sea.stripe
            catalog.tenants[index].products += sea.products
        }
        let environment = [
            "SEABOO_TEST_STRIPE_SECRET_KEY": "sk_test_berth_standin", "SEABOO_TEST_STRIPE_WEBHOOK_SECRET": CardPaymentTests.secret,
            "SEABOO_TEST_STRIPE_API_BASE": "http://127.0.0.1:\(port)",
        ]
        try await Self.withPlay(customize: boats, environment: environment, clock: clock) { rig in
            let harness = rig.harness
            let server = try await harness.apiKey("braindumpster-test", .server)
            let berthPort = try #require(rig.client.port)
            stripe.state.withLock { $0.webhookURL = "http://127.0.0.1:\(berthPort)/api/stripe/webhooks/braindumpster-test" }
            /// A day's rental of the 5 m gozzo (€80), paid by card in Stripe's sheet; its booking id.
            func rentPaidByCard(_ user: String, day: Int) async throws -> Int64 {
                let start = Harness.day(day, from: harness.clock.now())
                let made = try await rig.client.call(
                    .post,
                    "/api/bookings",
                    auth: server,
                    user: user,
                    json: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(10 * 3600)))]
                )
                let id = try #require(made.booking?["id"].int64, "\(made.json)")
                let sheet = try await rig.client.call(.post, "/api/bookings/\(id)/card-payment", auth: server, user: user)
                _ = try await stripe.succeed(try #require(sheet.json["paymentIntentId"].string, "\(sheet.json)"))
                let paid = try await rig.client.call(.get, "/api/bookings/\(id)", auth: server, user: user)
                #expect(paid.booking?["status"].string == "confirmed", "\(paid.json)")
                return id
            }
            let day: TimeInterval = 86_400
            let t0 = harness.clock.now()
            let admin = try await harness.apiKey("braindumpster-test", .admin)
            func at(_ offset: Double) -> Date { t0.addingTimeInterval(offset * day) }
            func notify(_ type: AppleSignedData.NotificationType, _ transaction: TransactionPayload) async throws -> JSON {
                let payload = try harness.ca.signNotification(
                    type: type,
                    bundleId: Self.brain,
                    transaction: transaction,
                    signedDate: harness.clock.now()
                )
                let reply = try await rig.client.call(
                    .post,
                    "/api/apple/notifications/braindumpster-test",
                    auth: nil,
                    json: ["signedPayload": .string(payload)]
                )
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
                json: ["productId": .string(Self.yearly), "jwsRepresentation": try .string(harness.ca.signTransaction(first))]
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

            // Days 5 and 6: dan and eva rent the gozzo and pay by card (€80 each).
            harness.clock.advance(2 * day)
            _ = try await rentPaidByCard("dan", day: 9)
            harness.clock.advance(1 * day)
            let evas = try await rentPaidByCard("eva", day: 10)

            // Day 12: Google renews bo's plan (its own order, its own amount).
            harness.clock.advance(6 * day)
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
                    json: ["productId": .string(Self.yearly), "jwsRepresentation": try .string(harness.ca.signTransaction(unpriced))]
                ).status == .ok
            )

            // Day 20: Apple renews ana's plan and says so only by notification (the app never sends it).
            harness.clock.advance(5 * day)
            let renewal = period("2000000300000002", original: "2000000300000001", start: at(20), price: 41_990)
            let told = try await notify(.didRenew, renewal)
            #expect(told["outcome"].string == "subscription_active", "\(told)")

            // Day 25: Apple refunds ana's first period.
            harness.clock.advance(5 * day)
            var refunded = first
            refunded.revocationDate = AppleTimestamp(harness.clock.now())
            refunded.revocationReason = RevocationReason(rawValue: 0)
            _ = try await notify(.refund, refunded)

            // Day 26: eva's fuel was not used; the operator gives €15 back on her card.
            harness.clock.advance(1 * day)
            let part = try await rig.client.call(
                .post,
                "/api/admin/bookings/\(evas)/refund",
                auth: admin,
                json: ["reason": "fuel not used", "amountMinor": 1500]
            )
            #expect(part.status == .ok, "\(part.json)")

            harness.clock.advance(1 * day)
            let overview = try await rig.client.call(
                .get,
                "/api/admin/overview?interval=day&from=\(iso(t0))&to=\(iso(harness.clock.now()))",
                auth: admin
            )
            #expect(overview.status == .ok, "\(overview.json)")
            let moneyIn = try #require(overview.json["moneyIn"].array)
            #expect(moneyIn.count == 1 && moneyIn.first?["currency"].string == "EUR")
            #expect(moneyIn.first?["amountMilliunits"].int == 39_990 + 29_990 + 80_000 + 80_000 + 29_990 + 41_990, "\(moneyIn)")
            let refunds = try #require(overview.json["refunds"].array)
            #expect(refunds.first?["amountMilliunits"].int == 39_990 + 15_000 && refunds.count == 1, "\(refunds)")
            #expect(overview.json["purchasesWithoutAmount"] == ["app_store": 1], "\(overview.json["purchasesWithoutAmount"])")

            let buckets = try #require(overview.json["buckets"].array)
            func lines(_ key: String, onDay offset: Double) -> [JSON] {
                let label = String(iso(at(offset)).prefix(10))
                return buckets.first { $0["label"].string == label }?[key].array ?? []
            }
            func total(_ lines: [JSON], store: String) -> Int {
                lines.filter { $0["store"].string == store }.reduce(0) { $0 + ($1["amountMilliunits"].int ?? 0) }
            }
            #expect(total(lines("moneyIn", onDay: 1), store: "app_store") == 39_990)
            #expect(total(lines("moneyIn", onDay: 3), store: "google_play") == 29_990, "Google's first period at its recurring price")
            #expect(total(lines("moneyIn", onDay: 12), store: "google_play") == 29_990, "Google's renewal: a row with its amount")
            #expect(total(lines("moneyIn", onDay: 20), store: "app_store") == 41_990, "Apple's renewal: a row with the price Apple signed")
            #expect(lines("refunds", onDay: 1).isEmpty, "a refund is not counted on the purchase day")
            #expect(total(lines("refunds", onDay: 25), store: "app_store") == 39_990, "the refund on the day it happened")
            #expect(total(lines("moneyIn", onDay: 5), store: "stripe") == 80_000 && total(lines("moneyIn", onDay: 6), store: "stripe") == 80_000)
            #expect(total(lines("refunds", onDay: 26), store: "stripe") == 15_000, "a partial card refund at its part, on its day")
            let priced = buckets.flatMap { $0["moneyIn"].array ?? [] }.reduce(0) { $0 + ($1["count"].int ?? 0) }
            #expect(priced == 6)
            let bookings = buckets.reduce(0) { $0 + ($1["bookingsMade"].int ?? 0) }
            #expect(bookings == 2 && buckets.allSatisfy { $0["bookingsUnpaid"].int == 0 }, "two bookings made, both paid")
        }
    }
}

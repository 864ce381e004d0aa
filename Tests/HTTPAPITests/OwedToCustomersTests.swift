import AppleSignedData
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StripeStandIn
import TestKit
import Testing

@testable import HTTPAPI

/// Money owed to customers (the operator's day): a paid booking that will not take place is owed
/// until the rail that took the money gives it back, and the overview says so first.
@Suite("Money owed to customers")
struct OwedToCustomersTests {
    static func owed(_ client: any TestClientProtocol, _ harness: Harness, status: String = "open") async throws -> [JSON] {
        let reply = try await client.call(.get, "/api/admin/owed?status=\(status)", auth: harness.adminKey)
        #expect(reply.status == .ok, "\(reply.json)")
        return reply.json["items"].array ?? []
    }

    static func needsAction(_ client: any TestClientProtocol, _ harness: Harness) async throws -> JSON {
        try await client.call(.get, "/api/admin/overview", auth: harness.adminKey).json
    }

    @Test(
        "an App Store booking cancelled after payment is owed (the store's path, never a card form) until the operator records the customer was told; a part-paid hold that lapsed is owed; a card booking cancelled is owed until refunded"
    )
    func owedByRail() async throws {
        try await CardPaymentTests.withCardRail { harness, standIn, client in
            // 1. Alice's rental, paid through the App Store at €80, cancelled by the operator for a storm.
            let alice = try #require(try await CardPaymentTests.rental(client, harness, user: "alice", day: 5)["id"].int64)
            let jws = try harness.ca.signTransaction(
                .testPurchase(bundleId: "it.seaboo.app", productId: "it.seaboo.rental.basic", price: 80_000, currency: "EUR")
            )
            let paid = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: ["bookingId": .int(alice), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(paid.status == .ok, "\(paid.json)")
            #expect(try await Self.owed(client, harness).isEmpty, "a paid booking that will take place owes nothing")
            let cancelled = try await client.call(.post, "/api/admin/bookings/\(alice)/cancel", auth: harness.adminKey, json: ["reason": "storm"])
            #expect(cancelled.status == .ok, "\(cancelled.json)")
            var items = try await Self.owed(client, harness)
            let apple = try #require(items.first { $0["bookingId"].int64 == alice })
            #expect(apple["rail"].string == "app_store" && apple["reason"].string == "cancelled")
            #expect(apple["amountMinor"].int == 8000 && apple["currency"].string == "EUR" && apple["amountFromBooking"].bool == false)
            #expect(apple["resolvedBy"].string == "customer" && (apple["guidance"].string ?? "").contains("Apple"))
            #expect(apple["statusReason"].string == "storm")

            // 2. Giulia's dive for 2 seats, 1 of 2 units paid (no price signed), then her hold lapses.
            let slot = Harness.local(6, hour: 7, from: harness.clock.now())
            let dive = try #require(
                try await createBooking(
                    client,
                    harness,
                    user: "giulia",
                    body: ["resourceId": "diving-intro", "slot": .string(iso(slot)), "seats": 2]
                )["id"]
                .int64
            )
            let part = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "giulia",
                json: [
                    "bookingId": .int(dive), "productId": "it.seaboo.experience.diving",
                    "jwsRepresentation": try .string(harness.purchase("it.seaboo.experience.diving")),
                ]
            )
            #expect(part.status == .accepted, "\(part.json)")
            #expect(try await Self.owed(client, harness).count == 1, "a hold still running owes nothing yet")

            // 3. Marco's rental paid by card, then cancelled by the operator.
            let marco = try #require(try await CardPaymentTests.rental(client, harness, user: "marco", day: 9)["id"].int64)
            let intent = try #require(
                try await CardPaymentTests.pay(client, harness, user: "marco", booking: marco).json["paymentIntentId"].string
            )
            _ = try await standIn.succeed(intent)
            #expect(try await client.call(.post, "/api/admin/bookings/\(marco)/cancel", auth: harness.adminKey, json: [:]).status == .ok)

            harness.clock.advance(3600)  // every hold has lapsed
            items = try await Self.owed(client, harness)
            let lapsed = try #require(items.first { $0["bookingId"].int64 == dive })
            #expect(lapsed["rail"].string == "app_store" && lapsed["reason"].string == "hold_lapsed")
            #expect(lapsed["amountMinor"].int == 8500 && lapsed["amountFromBooking"].bool == true, "\(lapsed)")
            let card = try #require(items.first { $0["bookingId"].int64 == marco })
            #expect(card["rail"].string == "card" && card["resolvedBy"].string == "refund" && card["amountMinor"].int == 8000)
            #expect(items.count == 3)

            // The overview puts them first: three owed, 245.00 EUR.
            let overview = try await Self.needsAction(client, harness)
            #expect(overview["needsAction"]["owedToCustomers"].int == 3, "\(overview["needsAction"])")
            let totals = overview["owedToCustomers"].array ?? []
            #expect(totals.count == 1 && totals.first?["amountMinor"].int == 24_500 && totals.first?["count"].int == 3, "\(totals)")

            // The App Store one is closed by telling the customer; once only; audited.
            let told = try await client.call(
                .post,
                "/api/admin/owed/\(alice)/resolve",
                auth: harness.adminKey,
                json: ["how": "customer_told", "note": "told her to ask Apple"]
            )
            #expect(told.status == .ok, "\(told.json)")
            let again = try await client.call(.post, "/api/admin/owed/\(alice)/resolve", auth: harness.adminKey, json: ["how": "customer_told"])
            #expect(again.status == .conflict && again.errorCode == "owed_resolved", "\(again.json)")
            let bad = try await client.call(.post, "/api/admin/owed/\(dive)/resolve", auth: harness.adminKey, json: ["how": "forgotten"])
            #expect(bad.status == .badRequest && bad.errorCode == "invalid_field")
            let resolved = try await Self.owed(client, harness, status: "resolved")
            #expect(resolved.count == 1 && resolved.first?["resolution"]["how"].string == "customer_told")
            let audit = try await client.call(.get, "/api/admin/audit", auth: harness.adminKey).json["items"].array ?? []
            #expect(audit.contains { $0["action"].string == "owed.resolved" && $0["bookingId"].int64 == alice }, "\(audit.prefix(3))")

            // The card one is not closed by words: it is refunded, and then owed no more.
            let words = try await client.call(.post, "/api/admin/owed/\(marco)/resolve", auth: harness.adminKey, json: ["how": "customer_told"])
            #expect(words.status == .notFound && words.errorCode == "owed_not_found", "\(words.json)")
            let refund = try await client.call(.post, "/api/admin/bookings/\(marco)/refund", auth: harness.adminKey, json: ["reason": "storm"])
            #expect(refund.status == .ok || refund.status == .created, "\(refund.json)")
            items = try await Self.owed(client, harness)
            #expect(items.map { $0["bookingId"].int64 } == [dive], "\(items.map { $0["bookingId"] })")
            #expect(items.first?["bookingId"].int64 == dive)
            let left = try await Self.needsAction(client, harness)
            #expect(left["needsAction"]["owedToCustomers"].int == 1)
        }
    }
}

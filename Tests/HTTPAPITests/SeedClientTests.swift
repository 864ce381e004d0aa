import AppleSignedData
import BerthApp
import Domain
import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import TestKit
import Testing

/// Each seed app's client requests exactly as its plan writes them (paths, field names, casing,
/// headers), answered in the shape the client decodes.
@Suite("The seed apps' own clients")
struct SeedClientTests {
    /// Seaboo's StoreKit plugin never sets a quantity: an experience for two seats is paid by two
    /// purchases of one unit, each posted as the plugin resolves it ({bookingId, productId,
    /// transactionId, receipt}); the first leaves the booking pending with one unit to go, the
    /// second confirms it. The booking names the product and quantity to buy.
    @Test("Seaboo (001): a 2-seat experience paid by two quantity-1 purchases, as its plugin sends them")
    func seabooTwoSeats() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let token = try await harness.userToken("giulia")
            let slot = Harness.local(3, hour: 17, minute: 30, from: harness.clock.now())
            let created = try await client.call(
                .post,
                "/api/bookings",
                auth: token,
                json: ["resourceId": "sunset-cruise", "slot": .string(iso(slot)), "seats": 2]
            )
            #expect(created.status == .created, "\(created.json)")
            let booking = try #require(created.json["booking"].object)
            let product = try #require(booking["requiredProductId"].string)
            #expect(product == "it.seaboo.experience.sunset")
            #expect(booking["requiredQuantity"].int == 2 && booking["remainingQuantity"].int == 2)
            let bookingId = try #require(booking["id"].int64)

            func pay(_ transactionId: String) async throws -> Reply {
                let receipt = try harness.receipt(product, transactionId: transactionId)
                return try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: token,
                    json: [
                        "bookingId": .int(bookingId), "productId": .string(product), "transactionId": .string(transactionId),
                        "receipt": .string(receipt),
                    ]
                )
            }
            let first = try await pay("2000000000009001")
            // Applied, not complete: the app's `if (result.success) alert('Pagamento completato!')` must stay silent,
            // and it is told to finish the transaction and buy one more unit.
            #expect(first.status == .accepted, "\(first.json)")
            #expect(first.json["success"].bool == false && first.json["finishTransaction"].bool == true)
            #expect(first.errorCode == "booking_partly_paid" && first.json["remainingQuantity"].int == 1)
            #expect(first.booking?["status"].string == "pending_payment")
            #expect(first.booking?["remainingQuantity"].int == 1, "the app buys one more unit")
            // The plugin retries the same call: nothing more is counted.
            let retried = try await pay("2000000000009001")
            #expect(retried.status == .accepted && retried.booking?["paidQuantity"].int == 1)
            let second = try await pay("2000000000009002")
            #expect(second.status == .ok, "\(second.json)")
            #expect(second.booking?["status"].string == "confirmed")
            #expect(second.booking?["remainingQuantity"].int == 0)
            #expect(try await harness.count("purchases") == 2)
            // A third unit for a booking already paid is money too: kept for a refund, not lost.
            let third = try await pay("2000000000009003")
            #expect(third.status == .conflict)
            #expect(third.errorCode == "booking_already_paid")
            #expect(
                try await harness.rows("SELECT status FROM purchases WHERE transaction_id = '2000000000009003'").first?["status"] == "needs_refund"
            )

            // Apple refunds one of the two units: the booking is no longer paid in full. It awaits an
            // operator (refund the other unit or confirm by hand) and its slot is released.
            var refunded = TransactionPayload.testPurchase(bundleId: "it.seaboo.app", productId: product, transactionId: "2000000000009001")
            refunded.revocationDate = AppleTimestamp(harness.clock.now())
            let notification = try harness.ca.signNotification(type: .refund, bundleId: "it.seaboo.app", transaction: refunded)
            let ack = try await client.call(.post, "/api/apple/notifications/seaboo-test", auth: nil, json: ["signedPayload": .string(notification)])
            #expect(ack.json["outcome"].string == "part_refunded", "\(ack.json)")
            let after = try await client.call(.get, "/api/bookings/\(bookingId)", auth: token)
            #expect(after.booking?["status"].string == "payment_needs_refund", "\(after.json)")
            #expect(after.booking?["paidQuantity"].int == 1)
        }
    }

    /// FT Chinese's client keeps its own base paths: `/api/sandbox` and `/api/v1` are served for the
    /// shipped `ftchinese` tenant beside Berth's own `/api/…` routes; a path of its routes' form under
    /// a prefix nobody serves answers 404 in its shape (`{message}`), as the OpenAPI document says.
    @Test("FT Chinese (003): its own bases /api/sandbox and /api/v1 are served beside Berth's routes; unknown prefixes answer in its shape")
    func ftChineseBases() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey("ftchinese", .client)
        try await harness.app().test(.router) { client in
            for base in ["/api/sandbox", "/api/v1"] {
                let missing = try await client.call(.post, "\(base)/apple/verify-receipt", auth: key, json: [:] as JSON)
                #expect(missing.status == .unprocessableContent, "\(base): \(missing.json)")
                #expect(missing.json["message"].string == "Missing required field")
                #expect(missing.json["error"]["field"].string == "receiptData")
                #expect(missing.json["success"] == nil, "FT Chinese's shape, not Berth's")
                let list = try await client.call(.get, "\(base)/apple/subs", auth: key)
                #expect(list.json["error"]["field"].string == "X-Ftc-Id", "\(list.json)")
            }
            let unknown = try await client.call(.get, "/nope/apple/subs/1000000000000001", auth: key)
            #expect(unknown.status == .notFound)
            #expect(unknown.json["message"].string != nil && unknown.json["success"] == nil, "\(unknown.json)")
            // Berth's own routes are untouched.
            let products = try await client.call(.get, "/api/products?tenant=aistylist-test", auth: nil)
            #expect(products.status == .ok)
            let own = try await client.call(.get, "/api/nothing-here", auth: key)
            #expect(own.status == .notFound && own.json["success"].bool == false)
        }
        // Every /api/<segment> route of Berth's is in the list prefixes may not take.
        let ftcBases: Set<Substring> = ["sandbox", "v1"]  // the shipped ftchinese tenant's prefixes
        let segments = Set(
            harness.services.routeAccess.all.compactMap { entry -> String? in
                let parts = entry.path.split(separator: "/")
                return parts.count >= 2 && parts[0] == "api" && !ftcBases.contains(parts[1]) ? String(parts[1]) : nil
            }
        )
        #expect(segments.count >= 10)
        #expect(
            segments.isSubset(of: SubscriptionSettings.berthAPISegments),
            "not listed: \(segments.subtracting(SubscriptionSettings.berthAPISegments))"
        )
        var catalog = try Catalog.decode(Data(contentsOf: Harness.repository.appendingPathComponent("products.json")))
        let index = try #require(catalog.tenants.firstIndex { $0.id == "ftchinese" })
        for taken in ["/api/credits", "/api", "/admin/x", "/metrics"] {
            catalog.tenants[index].subscriptions?.ftcRoutes = [.init(prefix: taken, environment: .sandbox)]
            #expect(throws: CatalogError.self, "\(taken)") { try catalog.validate() }
        }
        catalog.tenants[index].subscriptions?.ftcRoutes = [.init(prefix: "/ftc-test/api/sandbox", environment: .sandbox)]
        #expect(throws: CatalogError.self, "a prefix another tenant serves") { try catalog.validate() }
    }

    /// Braindumpster's plan shows a camelCase JSON body and names snake_case fields in its summary:
    /// both are read (camelCase wins when both are sent); the answer is the client's shape either way.
    @Test("Braindumpster (004): the snake_case body its plan's summary names is read like the camelCase one")
    func braindumpsterSnakeCase() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(SubscriptionsTests.brain, .server)
        try await harness.app().test(.router) { client in
            let receipt = try BraindumpsterTests.receipt(harness, original: "4500000000000001", start: harness.clock.now(), days: 365)
            let reply = try await client.call(
                .post,
                "/api/verify-receipt",
                auth: key,
                json: [
                    "receipt_data": .string(receipt), "user_id": "uid-A", "bundle_id": .string(SubscriptionsTests.brainBundle),
                    "app_version": "1.0 (7)",
                    "device_info": ["model": "iPhone15,3", "osVersion": "iOS 18.0", "locale": "en_US"],
                ]
            )
            #expect(reply.status == .ok, "\(reply.json)")
            #expect(reply.json["success"].bool == true && reply.json["isPremium"].bool == true)
            #expect(reply.json["productId"].string == SubscriptionsTests.yearly)
            // The subscription is now uid-A's: the snake_case user_id was read.
            let other = try await client.call(.post, "/api/verify-receipt", auth: key, json: ["receipt_data": .string(receipt), "user_id": "uid-B"])
            #expect(other.status == .conflict, "\(other.json)")
            let none = try await client.call(.post, "/api/verify-receipt", auth: key, json: ["receipt": .string(receipt)])
            #expect(none.status == .badRequest && none.json["success"].bool == false, "\(none.json)")
        }
    }
}

import AppleSignedData
import AppleStandIn
import AsyncHTTPClient
import Crypto
import Foundation
import HTTPAPI
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOHTTP1
import TestKit
import Testing

@Suite("POST /api/apple/notifications/{tenant}")
struct AppleNotificationTests {
    @Test(
        "S6, T8: only failures draw from an address's budget; once it is used up the address is refused before any work (Apple's retry then succeeds), a verified notification makes it whole; a trusted proxy's X-Forwarded-For separates clients"
    )
    func onlyFailuresAreLimited() async throws {
        let harness = try await Harness.make(environment: ["BERTH_TRUSTED_PROXIES": "127.0.0.1"])
        defer { harness.close() }
        try await harness.app().test(.live) { client in
            // Over real connections from 127.0.0.1 (the trusted proxy), through AsyncHTTPClient rather
            // than the test client: that one keeps a single connection and gives each answer 20 s, which
            // a two-core machine busy with builds has exceeded; this waits for each answer, with a
            // bound only against a hang.
            let port = try #require(client.port)
            func post(_ body: String, from address: String) async throws -> HTTPResponse.Status {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/apple/notifications/seaboo-test")
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                request.headers.add(name: "X-Forwarded-For", value: "10.9.9.9, \(address)")
                request.body = .bytes(ByteBuffer(string: body))
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(300))
                _ = try await response.body.collect(upTo: 1 << 20)
                return HTTPResponse.Status(code: Int(response.status.code))
            }
            var junk: [UInt: Int] = [:]
            for _ in 0..<80 { junk[UInt(try await post(#"{"signedPayload":"x.y.z"}"#, from: "203.0.113.9").code), default: 0] += 1 }
            #expect(junk[429, default: 0] > 0 && junk[400, default: 0] > 0, "junk beyond the burst is refused with 429: \(junk)")
            // The budget is used up: even a genuine notification from that address is refused before its body is read (T8).
            let early = try harness.ca.signNotification(type: .test, bundleId: "it.seaboo.app")
            #expect(try await post(#"{"signedPayload":"\#(early)"}"#, from: "203.0.113.9") == .tooManyRequests)
            // Apple retries later (the bucket refills with time): accepted, and the budget is whole again.
            harness.clock.advance(1)
            #expect(try await post(#"{"signedPayload":"\#(early)"}"#, from: "203.0.113.9") == .ok)
            var after: [UInt: Int] = [:]
            for _ in 0..<50 { after[UInt(try await post(#"{"signedPayload":"x.y.z"}"#, from: "203.0.113.9").code), default: 0] += 1 }
            #expect(after == [400: 50], "a verified notification refilled the address's budget: \(after)")
            for _ in 0..<3 {
                let genuine = try harness.ca.signNotification(type: .test, bundleId: "it.seaboo.app")
                #expect(try await post(#"{"signedPayload":"\#(genuine)"}"#, from: "203.0.113.9") == .ok)
            }
            #expect(
                try await post(#"{"signedPayload":"x.y.z"}"#, from: "198.51.100.7") == .badRequest,
                "another client behind the proxy has its own allowance"
            )
        }
        let proxies = TrustedProxies(environment: " 10.0.0.1, 10.0.0.2 ")
        #expect(
            proxies.clientAddress(peer: "10.0.0.1", forwardedFor: ["6.6.6.6, 1.2.3.4", "10.0.0.2"]) == "1.2.3.4",
            "right to left past trusted hops"
        )
        #expect(proxies.clientAddress(peer: "5.5.5.5", forwardedFor: ["1.2.3.4"]) == "5.5.5.5", "an untrusted peer's header is ignored")
        #expect(TrustedProxies().clientAddress(peer: "10.0.0.1", forwardedFor: ["1.2.3.4"]) == "10.0.0.1", "no proxies configured: the peer")
    }

    @Test("a REFUND of a confirmed booking frees its slot; the same notification twice has one effect")
    func refundFreesSlot() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(3, from: harness.clock.now())
            let rental: JSON = ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            let booking = try await createBooking(client, harness, user: "alice", body: rental)
            let transaction = TransactionPayload.testPurchase(
                bundleId: "it.seaboo.app",
                productId: "it.seaboo.rental.basic",
                transactionId: "2000000000007001"
            )
            let paid = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: [
                    "bookingId": booking["id"], "productId": "it.seaboo.rental.basic",
                    "jwsRepresentation": try .string(harness.ca.signTransaction(transaction)),
                ]
            )
            #expect(paid.status == .ok)
            #expect(try await client.call(.post, "/api/bookings", auth: harness.serverKey, user: "bob", json: rental).status == .conflict)

            var refunded = transaction
            refunded.revocationDate = AppleTimestamp(harness.clock.now())
            refunded.revocationReason = .other
            let body = try harness.ca.signNotification(type: .refund, bundleId: "it.seaboo.app", transaction: refunded)
            let first = try await client.call(.post, "/api/apple/notifications/seaboo-test", auth: nil, json: ["signedPayload": .string(body)])
            #expect(first.status == .ok, "\(first.json)")
            #expect(first.json["outcome"].string == "booking_refunded")
            #expect(first.json["duplicate"].bool == false)
            let again = try await client.call(.post, "/api/apple/notifications/seaboo-test", auth: nil, json: ["signedPayload": .string(body)])
            #expect(again.status == .ok)
            #expect(again.json["duplicate"].bool == true)
            #expect(try await harness.count("apple_notifications") == 1)

            let stored = try await client.call(.get, "/api/bookings/\(booking["id"])", auth: harness.serverKey, user: "alice")
            #expect(stored.booking?["status"].string == "refunded")
            let purchases = try await client.call(.get, "/api/admin/purchases", auth: harness.adminKey)
            #expect((purchases.json["items"].array)?.first?["status"].string == "refunded")
            // The slot is free again.
            #expect(try await client.call(.post, "/api/bookings", auth: harness.serverKey, user: "bob", json: rental).status == .created)

            let listed = try await client.call(.get, "/api/admin/notifications", auth: harness.adminKey)
            #expect(listed.json["total"].int == 1)
            #expect((listed.json["items"].array)?.first?["notificationType"].string == "REFUND")
        }
    }

    @Test("REFUND_REVERSED reinstates a refunded booking whose slot is still free")
    func refundReversed() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(4, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "alice",
                body: ["resourceId": "rib-7m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            )
            let transaction = TransactionPayload.testPurchase(
                bundleId: "it.seaboo.app",
                productId: "it.seaboo.rental.premium",
                transactionId: "2000000000007002"
            )
            _ = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: [
                    "bookingId": booking["id"], "productId": "it.seaboo.rental.premium",
                    "jwsRepresentation": try .string(harness.ca.signTransaction(transaction)),
                ]
            )
            for type in [NotificationType.refund, .refundReversed] {
                let reply = try await client.call(
                    .post,
                    "/api/apple/notifications/seaboo-test",
                    auth: nil,
                    json: ["signedPayload": try .string(harness.ca.signNotification(type: type, bundleId: "it.seaboo.app", transaction: transaction))]
                )
                #expect(reply.status == .ok)
            }
            let stored = try await client.call(.get, "/api/bookings/\(booking["id"])", auth: harness.serverKey, user: "alice")
            #expect(stored.booking?["status"].string == "confirmed")
        }
    }

    @Test("tampered, foreign or untrusted notifications are 4xx and write nothing; unknown transactions and TEST are recorded")
    func refusals() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let good = try harness.ca.signNotification(type: .test, bundleId: "it.seaboo.app")
            var parts = good.split(separator: ".").map(String.init)
            parts[2] = String(repeating: "A", count: parts[2].count)  // a well-formed signature of zeros
            let cases: [(JSON, HTTPResponse.Status)] = [
                (["signedPayload": .string(parts.joined(separator: "."))], .unprocessableContent),
                (["signedPayload": "not.a.jws"], .badRequest),
                (["signedPayload": try .string(harness.ca.signNotification(type: .refund, bundleId: "com.other"))], .unprocessableContent),
                (["signedPayload": try .string(TestCA.generate().signNotification(type: .refund, bundleId: "it.seaboo.app"))], .unprocessableContent),
                (
                    ["signedPayload": try .string(harness.ca.signNotification(type: .refund, bundleId: "it.seaboo.app", environment: .production))],
                    .unprocessableContent
                ),
                (["nothing": 1], .badRequest),
            ]
            for (body, status) in cases {
                let reply = try await client.call(.post, "/api/apple/notifications/seaboo-test", auth: nil, json: body)
                #expect(reply.status == status, "\(reply.json)")
            }
            #expect(
                try await client.call(.post, "/api/apple/notifications/nowhere", auth: nil, json: ["signedPayload": .string(good)]).status
                    == .notFound
            )
            #expect(try await harness.count("apple_notifications") == 0)

            let test = try await client.call(.post, "/api/apple/notifications/seaboo-test", auth: nil, json: ["signedPayload": .string(good)])
            #expect(test.json["outcome"].string == "test")
            let unknown = try await client.call(
                .post,
                "/api/apple/notifications/seaboo-test",
                auth: nil,
                json: [
                    "signedPayload": try .string(
                        harness.ca.signNotification(
                            type: .refund,
                            bundleId: "it.seaboo.app",
                            transaction: .testPurchase(bundleId: "it.seaboo.app", productId: "x")
                        )
                    )
                ]
            )
            #expect(unknown.json["outcome"].string == "revoked_unclaimed")
            #expect(try await harness.count("apple_notifications") == 2)
        }
    }

    @Test("a transaction refunded before anyone claimed it never confirms a booking, by JWS, receipt or id; a reversal lifts that")
    func refundBeforeClaim() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            // The user keeps the JWS (signed before the refund, so it shows no revocation) and asks Apple for a refund.
            let transaction = TransactionPayload.testPurchase(
                bundleId: "it.seaboo.app",
                productId: "it.seaboo.rental.basic",
                transactionId: "2000000000007101"
            )
            let jws = try harness.ca.signTransaction(transaction)
            let refund = try await client.call(
                .post,
                "/api/apple/notifications/seaboo-test",
                auth: nil,
                json: ["signedPayload": try .string(harness.ca.signNotification(type: .refund, bundleId: "it.seaboo.app", transaction: transaction))]
            )
            #expect(refund.json["outcome"].string == "revoked_unclaimed")

            let start = Harness.day(5, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "mallory",
                body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            )
            let proofs: [JSON] = [
                ["jwsRepresentation": .string(jws)],
                ["receipt": try .string(harness.receipt("it.seaboo.rental.basic", transactionId: "2000000000007101"))],
            ]
            for proof in proofs {
                let reply = try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: harness.serverKey,
                    user: "mallory",
                    json: proof.merging(["bookingId": booking["id"], "productId": "it.seaboo.rental.basic"])
                )
                #expect(reply.status == .unprocessableContent, "\(reply.json)")
                #expect(reply.errorCode == "transaction_revoked")
            }
            #expect(try await harness.count("purchases") == 0)
            let stored = try await client.call(.get, "/api/bookings/\(booking["id"])", auth: harness.serverKey, user: "mallory")
            #expect(stored.booking?["status"].string == "pending_payment")
            // Each refused claim is recorded.
            let audit = try await client.call(.get, "/api/admin/audit", auth: harness.adminKey)
            let refused = (audit.json["items"].array ?? []).filter { $0["action"].string == "purchase.refused" }
            #expect(refused.count == 2)

            // Apple reverses the refund: the money is there again, and the transaction pays.
            let reversal = try await client.call(
                .post,
                "/api/apple/notifications/seaboo-test",
                auth: nil,
                json: [
                    "signedPayload": try .string(
                        harness.ca.signNotification(type: .refundReversed, bundleId: "it.seaboo.app", transaction: transaction)
                    )
                ]
            )
            #expect(reversal.json["outcome"].string == "revocation_reversed")
            let paid = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "mallory",
                json: ["bookingId": booking["id"], "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(paid.status == .ok, "\(paid.json)")
        }
    }
}

@Suite("Notifications: unclaimed purchases, consumption requests, test notifications")
struct AppleNotificationFollowUpTests {
    @Test("a purchase Apple reports first is kept unclaimed, then linked when the app reports it, not doubled")
    func unclaimedThenClaimed() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let transaction = TransactionPayload.testPurchase(
                bundleId: "it.seaboo.app",
                productId: "it.seaboo.rental.basic",
                transactionId: "2000000000006001"
            )
            let charge = try await client.call(
                .post,
                "/api/apple/notifications/seaboo-test",
                auth: nil,
                json: [
                    "signedPayload": try .string(
                        harness.ca.signNotification(type: .oneTimeCharge, bundleId: "it.seaboo.app", transaction: transaction)
                    )
                ]
            )
            #expect(charge.json["outcome"].string == "unclaimed_purchase")
            let before = try await client.call(.get, "/api/admin/unclaimed", auth: harness.adminKey)
            let item = try #require((before.json["items"].array)?.first)
            #expect(item["transactionId"].string == "2000000000006001")
            #expect(item["claimedByPurchaseId"] == nil)
            #expect(try await harness.count("purchases") == 0)

            let start = Harness.day(3, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "alice",
                body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            )
            let paid = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: [
                    "bookingId": booking["id"], "productId": "it.seaboo.rental.basic",
                    "jwsRepresentation": try .string(harness.ca.signTransaction(transaction)),
                ]
            )
            #expect(paid.status == .ok)
            #expect(try await harness.count("purchases") == 1)
            let after = try await client.call(.get, "/api/admin/unclaimed", auth: harness.adminKey)
            #expect((after.json["items"].array)?.first?["claimedByPurchaseId"].int == paid.purchase?["id"].int)
        }
    }

    @Test(
        "a CONSUMPTION_REQUEST for a transaction nobody claimed is recorded but not answered (no customer consented); admin can request a test notification"
    )
    func consumptionAndTestNotification() async throws {
        let apiKey = P256.Signing.PrivateKey()
        let standIn = AppleStandIn(apiKey: apiKey.publicKey, issuerId: "issuer-1", bundleId: "it.seaboo.app")
        try await Application(router: standIn.router()).test(.live) { apple in
            let harness = try await Harness.make(appleStandIn: (apple.port!, apiKey.pemRepresentation))
            defer { harness.close() }
            try await harness.app().test(.router) { client in
                let transaction = TransactionPayload.testPurchase(
                    bundleId: "it.seaboo.app",
                    productId: "it.seaboo.rental.basic",
                    transactionId: "2000000000006002"
                )
                let request = try await client.call(
                    .post,
                    "/api/apple/notifications/seaboo-test",
                    auth: nil,
                    json: [
                        "signedPayload": try .string(
                            harness.ca.signNotification(
                                type: .consumptionRequest,
                                bundleId: "it.seaboo.app",
                                transaction: transaction
                            )
                        )
                    ]
                )
                #expect(request.json["outcome"].string == "consumption_requested")
                let test = try await client.call(.post, "/api/admin/apple/test-notification", auth: harness.adminKey)
                #expect(test.json["testNotificationToken"].string == "sandbox-token")
                #expect(try await client.call(.post, "/api/admin/apple/test-notification", auth: harness.serverKey, user: "x").status == .forbidden)
            }
            let paths = standIn.requests.map(\.path)
            #expect(!paths.contains { $0.contains("/transactions/consumption/") }, "Apple is told nothing without the customer's consent")
            #expect(paths.contains("/sandbox/inApps/v1/notifications/test"))
        }
    }

    @Test("without an App Store Server API key the admin test notification is refused clearly")
    func testNotificationNotConfigured() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let reply = try await client.call(.post, "/api/admin/apple/test-notification", auth: harness.adminKey)
            #expect(reply.errorCode == "apple_not_configured")
        }
    }
}

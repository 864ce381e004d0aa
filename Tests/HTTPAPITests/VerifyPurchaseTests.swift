import AppleSignedData
import AppleStandIn
import BerthApp
import Crypto
import Domain
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import Synchronization
import TestKit
import Testing
import UseCases

@testable import UseCases

@Suite("POST /api/verify-purchase")
struct VerifyPurchaseTests {
    func rentalBody(_ harness: Harness, day: Int = 3, hours: Int = 8) -> JSON {
        let start = Harness.day(day, from: harness.clock.now())
        return ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(TimeInterval(hours * 3600))))]
    }

    @Test("a verified purchase confirms the booking; the same retry gets the same 200 and writes nothing")
    func confirmsOnceAndIsIdempotent() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let booking = try await createBooking(client, harness, user: "alice", body: rentalBody(harness))
            #expect(booking["requiredProductId"].string == "it.seaboo.rental.basic")
            #expect(booking["status"].string == "pending_payment")
            #expect(booking["price"].int == 8000)
            let id = try #require(booking["id"].int)
            let jws = try harness.purchase("it.seaboo.rental.basic", transactionId: "2000000000000101")
            let body: JSON = [
                "bookingId": .int(id), "productId": "it.seaboo.rental.basic", "transactionId": "2000000000000101", "jwsRepresentation": .string(jws),
            ]

            let first = try await client.call(.post, "/api/verify-purchase", auth: harness.serverKey, user: "alice", json: body)
            #expect(first.status == .ok, "\(first.json)")
            #expect(first.json["success"].bool == true)
            #expect(first.booking?["status"].string == "confirmed")
            #expect(first.purchase?["transactionId"].string == "2000000000000101")
            let auditAfterFirst = try await harness.count("audit_log")

            let again = try await client.call(.post, "/api/verify-purchase", auth: harness.serverKey, user: "alice", json: body)
            #expect(again.status == .ok)
            #expect(again.purchase?["id"].int == first.purchase?["id"].int)
            #expect(try await harness.count("purchases") == 1)
            #expect(try await harness.count("audit_log") == auditAfterFirst)
            #expect(try await harness.count("webhook_outbox") == 0, "a tenant without a webhook gets no outbox rows")
        }
    }

    @Test("a second user replaying the transaction gets 409 and a replay row")
    func replayByAnotherUser() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let alice = try #require(try await createBooking(client, harness, user: "alice", body: rentalBody(harness, day: 3))["id"].int)
            let bob = try #require(try await createBooking(client, harness, user: "bob", body: rentalBody(harness, day: 4))["id"].int)
            let jws = try harness.purchase("it.seaboo.rental.basic")
            let ok = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: ["bookingId": .int(alice), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(ok.status == .ok)
            let replay = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "bob",
                json: ["bookingId": .int(bob), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(replay.status == .conflict)
            #expect(replay.errorCode == "transaction_already_used")
            #expect(try await harness.count("replay_attempts") == 1)
            #expect(try await harness.count("purchases") == 1)
            // Alice using it for her other booking is a replay too.
            let aliceOther = try #require(try await createBooking(client, harness, user: "alice", body: rentalBody(harness, day: 5))["id"].int)
            let sameUserOtherBooking = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: ["bookingId": .int(aliceOther), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(sameUserOtherBooking.errorCode == "transaction_already_used")
            let bobsBooking = try await client.call(.get, "/api/bookings/\(bob)", auth: harness.serverKey, user: "bob")
            #expect(bobsBooking.booking?["status"].string == "pending_payment")

            let replays = try await client.call(.get, "/api/admin/replays", auth: harness.adminKey)
            let items = try #require(replays.json["items"].array)
            #expect(items.count == 2)
            #expect(items.contains { $0["userId"].string == "bob" })
        }
    }

    @Test("a proof verified once is not verified again; a remembered proof still meets every claim check, a forged one is never remembered")
    func verifiedProofsAreRemembered() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let runtime = try #require(harness.services.tenants.tenant(id: "seaboo-test"))
        try await harness.app().test(.router) { client in
            let alice = try #require(try await createBooking(client, harness, user: "alice", body: rentalBody(harness, day: 3))["id"].int)
            let bob = try #require(try await createBooking(client, harness, user: "bob", body: rentalBody(harness, day: 4))["id"].int)
            let jws = try harness.purchase("it.seaboo.rental.basic")
            // The same bytes with one signature character changed: must be refused, and not remembered.
            var parts = jws.split(separator: ".").map(String.init)
            parts[2] = String(parts[2].prefix(10)) + (parts[2].dropFirst(10).first == "A" ? "B" : "A") + String(parts[2].dropFirst(11))
            let forged = parts.joined(separator: ".")
            let refused = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: ["bookingId": .int(alice), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(forged)]
            )
            #expect(refused.status.code >= 400 && refused.status.code < 500, "\(refused.json)")
            #expect(runtime.appStore.verifiedProofs.counts.transactions == 0)

            let body: JSON = ["bookingId": .int(alice), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            #expect(try await client.call(.post, "/api/verify-purchase", auth: harness.serverKey, user: "alice", json: body).status == .ok)
            #expect(runtime.appStore.verifiedProofs.counts.transactions == 1)
            let again = try await client.call(.post, "/api/verify-purchase", auth: harness.serverKey, user: "alice", json: body)
            #expect(again.status == .ok)
            #expect(again.booking?["status"].string == "confirmed")
            #expect(runtime.appStore.verifiedProofs.counts.transactions == 1)
            // Remembered, the proof is still claimed under the policy: another user's claim is a replay.
            let replay = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "bob",
                json: ["bookingId": .int(bob), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(replay.errorCode == "transaction_already_used")
            #expect(try await harness.count("replay_attempts") == 1)
            #expect(try await harness.count("purchases") == 1)
            // The forged copy is refused again after the genuine one was remembered.
            let stillRefused = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "bob",
                json: ["bookingId": .int(bob), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(forged)]
            )
            #expect(stillRefused.errorCode == refused.errorCode)
        }
        // Another tenant never sees this tenant's remembered proofs.
        #expect(try #require(harness.services.tenants.tenant(id: "aistylist-test")).appStore.verifiedProofs.counts.transactions == 0)
    }

    @Test("the remembered proofs are bounded: the oldest goes first")
    func boundedCache() {
        let cache = BoundedCache<Int>(capacity: 3)
        for value in 1...5 { cache.insert(value, for: "k\(value)") }
        #expect(cache.count == 3)
        #expect(cache["k1"] == nil && cache["k2"] == nil)
        #expect(cache["k3"] == 3 && cache["k5"] == 5)
        cache.insert(30, for: "k3")  // already held: kept, not moved
        cache.insert(6, for: "k6")
        #expect(cache["k3"] == nil && cache["k6"] == 6 && cache.count == 3)
    }

    @Test("50 concurrent identical calls make one purchase and one confirmation")
    func concurrentIdenticalCalls() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let id = try #require(try await createBooking(client, harness, user: "alice", body: rentalBody(harness))["id"].int)
            let jws = try harness.purchase("it.seaboo.rental.basic")
            let body: JSON = ["bookingId": .int(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            let data = try body.data()
            let text = String(decoding: data, as: UTF8.self)
            let statuses = try await withThrowingTaskGroup(of: (HTTPResponse.Status, Int?).self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        let reply = try await client.call(.post, "/api/verify-purchase", auth: harness.serverKey, user: "alice", raw: text)
                        return (reply.status, reply.purchase?["id"].int)
                    }
                }
                var all: [(HTTPResponse.Status, Int?)] = []
                for try await result in group { all.append(result) }
                return all
            }
            #expect(statuses.count == 50)
            #expect(statuses.allSatisfy { $0.0 == .ok })
            #expect(Set(statuses.compactMap(\.1)).count == 1)
            #expect(try await harness.count("purchases") == 1)
            let confirmations = try await harness.rows("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'booking.confirmed'").first?["n"]
            #expect(confirmations == "1")
        }
    }

    @Test("refusals answer 4xx with a stable code and write nothing")
    func refusalsWriteNothing() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let id = try #require(try await createBooking(client, harness, user: "alice", body: rentalBody(harness))["id"].int)
            let good = try harness.purchase("it.seaboo.rental.basic", transactionId: "2000000000000555")
            let stranger = try TestCA.generate()
            let untrusted = try stranger.signTransaction(
                .testPurchase(bundleId: "it.seaboo.app", productId: "it.seaboo.rental.basic", signedDate: harness.clock.now())
            )
            let cases: [(String, String?, HTTPResponse.Status, String, String?)] = [
                ("{not json", nil, .badRequest, "invalid_json", nil),
                ("", nil, .badRequest, "invalid_json", nil),
                (#"{"bookingId": "abc", "productId": "x", "jwsRepresentation": "a.b.c"}"#, nil, .badRequest, "invalid_field", "bookingId"),
                (#"{"bookingId": \#(id), "productId": 7, "jwsRepresentation": "a.b.c"}"#, nil, .badRequest, "invalid_field", "productId"),
                (#"{"bookingId": \#(id), "jwsRepresentation": "a.b.c"}"#, nil, .badRequest, "missing_field", "productId"),
                (#"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic"}"#, nil, .badRequest, "missing_field", "jwsRepresentation"),
                (#"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "receipt": "MIIT"}"#, nil, .badRequest, "malformed", "receipt"),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "transactionId": "1", "receipt": "\#(try harness.receipt("it.seaboo.rental.basic", transactionId: "2000000000000556"))"}"#,
                    nil, .unprocessableContent, "transaction_not_in_receipt", "transactionId"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "receipt": "\#(try harness.receipt("it.seaboo.rental.premium", transactionId: "2000000000000557"))"}"#,
                    nil, .unprocessableContent, "product_mismatch", "receipt"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "receipt": "\#(try harness.receipt("it.seaboo.rental.basic", transactionId: "2000000000000558", bundleId: "com.other"))"}"#,
                    nil, .unprocessableContent, "wrong_bundle", "receipt"
                ),
                (
                    #"{"bookingId": 999999, "productId": "it.seaboo.rental.basic", "jwsRepresentation": "\#(good)"}"#, nil, .notFound,
                    "booking_not_found", "bookingId"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.premium", "jwsRepresentation": "\#(good)"}"#, nil, .unprocessableContent,
                    "product_mismatch", "productId"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.premium", "jwsRepresentation": "\#(try harness.purchase("it.seaboo.rental.premium"))"}"#,
                    nil, .unprocessableContent, "product_mismatch", "productId"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "transactionId": "1", "jwsRepresentation": "\#(good)"}"#, nil,
                    .unprocessableContent, "transaction_mismatch", "transactionId"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": "\#(untrusted)"}"#, nil,
                    .unprocessableContent, "untrusted_root", "jwsRepresentation"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": "\#(try harness.purchase("it.seaboo.rental.basic", bundleId: "com.other"))"}"#,
                    nil, .unprocessableContent, "wrong_bundle", "jwsRepresentation"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": "\#(try harness.purchase("it.seaboo.rental.basic", environment: .production))"}"#,
                    nil, .unprocessableContent, "wrong_environment", "jwsRepresentation"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": "garbage"}"#, nil, .badRequest, "malformed",
                    "jwsRepresentation"
                ),
                (
                    #"{"bookingId": \#(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": "\#(good)"}"#, "bob", .notFound,
                    "booking_not_found", "bookingId"
                ),
            ]
            for (body, user, status, code, field) in cases {
                let reply = try await client.call(.post, "/api/verify-purchase", auth: harness.serverKey, user: user ?? "alice", raw: body)
                #expect(reply.status == status, "\(body.prefix(80)) → \(reply.json)")
                #expect(reply.errorCode == code, "\(body.prefix(80))")
                #expect(reply.json["success"].bool == false)
                if let field { #expect(reply.errorField == field, "\(body.prefix(80))") }
            }
            let huge = String(repeating: "x", count: 70 * 1024)
            let tooLarge = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                raw: #"{"productId": "\#(huge)"}"#
            )
            #expect(tooLarge.status == .contentTooLarge)
            #expect(tooLarge.errorCode == "body_too_large")
            #expect(try await harness.count("purchases") == 0)
            #expect(try await harness.count("replay_attempts") == 0)
            let booking = try await client.call(.get, "/api/bookings/\(id)", auth: harness.serverKey, user: "alice")
            #expect(booking.booking?["status"].string == "pending_payment")
        }
    }

    @Test("an expired hold whose slot is still free is confirmed")
    func expiredHoldFreeSlot() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let booking = try await createBooking(client, harness, user: "alice", body: rentalBody(harness))
            harness.clock.advance(20 * 60)
            let jws = try harness.purchase("it.seaboo.rental.basic")
            let reply = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: ["bookingId": booking["id"], "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(reply.status == .ok)
            #expect(reply.booking?["status"].string == "confirmed")
        }
    }

    @Test("an expired hold whose slot was taken keeps the payment for a refund")
    func expiredHoldTakenSlot() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let alice = try await createBooking(client, harness, user: "alice", body: rentalBody(harness))
            let early = try await client.call(.post, "/api/bookings", auth: harness.serverKey, user: "bob", json: rentalBody(harness))
            #expect(early.status == .conflict)
            #expect(early.errorCode == "slot_taken", "nothing was paid yet: the slot is taken, not a payment lost")
            harness.clock.advance(16 * 60)
            _ = try await createBooking(client, harness, user: "bob", body: rentalBody(harness))
            let jws = try harness.purchase("it.seaboo.rental.basic")
            let body: JSON = ["bookingId": alice["id"], "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            let reply = try await client.call(.post, "/api/verify-purchase", auth: harness.serverKey, user: "alice", json: body)
            #expect(reply.status == .conflict)
            #expect(reply.errorCode == "slot_unavailable")
            #expect(try await harness.count("purchases") == 1)
            let stored = try await client.call(.get, "/api/bookings/\(alice["id"])", auth: harness.serverKey, user: "alice")
            #expect(stored.booking?["status"].string == "payment_needs_refund")
            let purchases = try await client.call(.get, "/api/admin/purchases", auth: harness.adminKey)
            let items = try #require(purchases.json["items"].array)
            #expect(items.first?["status"].string == "needs_refund")
            #expect(items.first?["outcomeCode"].string == "slot_unavailable")
            // Retrying gives the same answer, not a second purchase.
            let again = try await client.call(.post, "/api/verify-purchase", auth: harness.serverKey, user: "alice", json: body)
            #expect(again.errorCode == "slot_unavailable")
            #expect(try await harness.count("purchases") == 1)
        }
    }
}

@Suite("POST /api/verify-purchase with an app receipt")
struct VerifyPurchaseReceiptTests {
    @Test("a receipt confirms the booking; the same transaction later as a JWS is the same purchase, and a replay elsewhere is refused")
    func exactlyOnceAcrossForms() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(3, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "alice",
                body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            )
            let id = try #require(booking["id"].int)
            let receipt = try harness.receipt("it.seaboo.rental.basic", transactionId: "2000000000009001")
            // The seaboo app's plugin sends transactionId "" when StoreKit gave none: the receipt's newest purchase of the product.
            let byReceipt = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: ["bookingId": .int(id), "productId": "it.seaboo.rental.basic", "transactionId": "", "receipt": .string(receipt)]
            )
            #expect(byReceipt.status == .ok, "\(byReceipt.json)")
            #expect(byReceipt.booking?["status"].string == "confirmed")
            #expect(byReceipt.purchase?["transactionId"].string == "2000000000009001")
            #expect(byReceipt.purchase?["environment"].string == "Sandbox")

            let jws = try harness.purchase("it.seaboo.rental.basic", transactionId: "2000000000009001")
            let byJWS = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: ["bookingId": .int(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(byJWS.status == .ok)
            #expect(byJWS.purchase?["id"].int == byReceipt.purchase?["id"].int)
            #expect(try await harness.count("purchases") == 1)

            let other = try await createBooking(
                client,
                harness,
                user: "bob",
                body: [
                    "resourceId": "gozzo-5m", "start": .string(iso(start.addingTimeInterval(86_400))),
                    "end": .string(iso(start.addingTimeInterval(90_000))),
                ]
            )
            let replay = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "bob",
                json: [
                    "bookingId": other["id"], "productId": "it.seaboo.rental.basic", "transactionId": "2000000000009001", "receipt": .string(receipt),
                ]
            )
            #expect(replay.errorCode == "transaction_already_used")
            #expect(try await harness.count("purchases") == 1)
            #expect(try await harness.count("replay_attempts") == 1)
        }
    }
}

@Suite("POST /api/verify-purchase with a bare transaction id (App Store Server API stand-in)")
struct VerifyPurchaseLookupTests {
    @Test("receipt, then JWS, then bare id of one transaction make one purchase; lookups fail cleanly")
    func threeFormsOnePurchase() async throws {
        let apiKey = P256.Signing.PrivateKey()
        let standIn = AppleStandIn(apiKey: apiKey.publicKey, issuerId: "issuer-1", bundleId: "it.seaboo.app")
        try await Application(router: standIn.router()).test(.live) { apple in
            let harness = try await Harness.make(appleStandIn: (apple.port!, apiKey.pemRepresentation))
            defer { harness.close() }
            let transactionId = "2000000000009101"
            // Bare ids prove a purchase only when bought with the caller's appAccountToken (the one derived from the id:
            // this app's ids are text, so an id that looks like a UUID is not a token).
            let alice = "0e0c4f4a-6c7b-4f64-9c44-3a1f0d3f6a11"
            let token = UUID(uuidString: AccountTokens.cordovaPlugin(alice))
            standIn.state.withLock {
                $0.transactions["sandbox"]?[transactionId] = try? harness.purchase(
                    "it.seaboo.rental.basic",
                    transactionId: transactionId,
                    appAccountToken: token
                )
                $0.transactions["sandbox"]?["2000000000009102"] = try? harness.purchase("it.seaboo.rental.basic", transactionId: "2000000000009102")
            }
            try await harness.app().test(.router) { client in
                let start = Harness.day(3, from: harness.clock.now())
                let booking = try await createBooking(
                    client,
                    harness,
                    user: alice,
                    body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
                )
                let id = try #require(booking["id"].int)
                func verify(_ extra: JSON, user: String = alice, bookingId: Int? = nil) async throws -> Reply {
                    try await client.call(
                        .post,
                        "/api/verify-purchase",
                        auth: harness.serverKey,
                        user: user,
                        json: extra.merging(["bookingId": .int(bookingId ?? id), "productId": "it.seaboo.rental.basic"])
                    )
                }
                // A second user who learnt the id cannot claim it by id, before or after its owner.
                let bob = try await createBooking(
                    client,
                    harness,
                    user: "bob",
                    body: [
                        "resourceId": "gozzo-5m", "start": .string(iso(start.addingTimeInterval(86_400))),
                        "end": .string(iso(start.addingTimeInterval(90_000))),
                    ]
                )
                let stolen = try await verify(["transactionId": .string(transactionId)], user: "bob", bookingId: bob["id"].int)
                #expect(stolen.status == .unprocessableContent)
                #expect(stolen.errorCode == "proof_required")
                #expect(try await harness.count("purchases") == 0)

                let byReceipt = try await verify(["receipt": try .string(harness.receipt("it.seaboo.rental.basic", transactionId: transactionId))])
                let byJWS = try await verify([
                    "jwsRepresentation": try .string(harness.purchase("it.seaboo.rental.basic", transactionId: transactionId, appAccountToken: token))
                ])
                let byId = try await verify(["transactionId": .string(transactionId)])
                for reply in [byReceipt, byJWS, byId] {
                    #expect(reply.status == .ok, "\(reply.json)")
                    #expect(reply.purchase?["id"].int == byReceipt.purchase?["id"].int)
                }
                #expect(try await harness.count("purchases") == 1)
                let stolenLater = try await verify(["transactionId": .string(transactionId)], user: "bob", bookingId: bob["id"].int)
                #expect(stolenLater.errorCode == "proof_required")

                // A transaction bought without a token is never proven by its id alone, even for its buyer.
                let tokenless = try await verify(["transactionId": "2000000000009102"])
                #expect(tokenless.errorCode == "proof_required")
                #expect(try await harness.count("purchases") == 1)

                let unknown = try await verify(["transactionId": "2000000000009999"])
                #expect(unknown.status == .unprocessableContent)
                #expect(unknown.errorCode == "transaction_not_found")

                standIn.state.withLock { $0.forced["production"] = Array(repeating: .init(status: 500, body: ""), count: 10) }
                let down = try await verify(["transactionId": .string(transactionId)])
                #expect(down.status == .serviceUnavailable)
                #expect(down.errorCode == "apple_unavailable")
            }
            // The stand-in saw Production first, then Sandbox, with a valid token each time.
            let paths = standIn.requests.map(\.path)
            #expect(paths.prefix(2) == ["/production/inApps/v1/transactions/\(transactionId)", "/sandbox/inApps/v1/transactions/\(transactionId)"])
        }
    }

    @Test("without an App Store Server API key a bare id is refused with a clear code")
    func notConfigured() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(3, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "alice",
                body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            )
            let reply = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: ["bookingId": booking["id"], "productId": "it.seaboo.rental.basic", "transactionId": "2000000000000001"]
            )
            #expect(reply.status == .unprocessableContent)
            #expect(reply.errorCode == "transaction_lookup_unavailable")
        }
    }
}

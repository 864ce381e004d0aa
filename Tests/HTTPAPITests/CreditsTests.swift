import AppleSignedData
import Domain
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import TestKit
import Testing

@testable import HTTPAPI

/// The two credit apps of the catalog, end to end over HTTP: `aistylist-test` (seed 000: packs,
/// signup bonus, reserve → commit) and `zorya-test` (seed 002: one credit per report, FIFO, profiles,
/// purchase eligibility).
@Suite("Credits over HTTP")
struct CreditsTests {
    static let stylist = "aistylist-test"
    static let stylistBundle = "com.aiimagestylist.app"
    static let starter = "com.aiimagestylist.credits.starter"
    static let popular = "com.aiimagestylist.credits.popular"
    static let zorya = "zorya-test"
    static let personality = "com.zorya.report.personality"

    /// Keys of both credit tenants.
    struct Keys {
        var stylist: String
        var stylistAdmin: String
        var zorya: String
        var zoryaAdmin: String

        static func make(_ harness: Harness) async throws -> Keys {
            Keys(
                stylist: try await harness.apiKey(CreditsTests.stylist, .server),
                stylistAdmin: try await harness.apiKey(CreditsTests.stylist, .admin),
                zorya: try await harness.apiKey(CreditsTests.zorya, .server),
                zoryaAdmin: try await harness.apiKey(CreditsTests.zorya, .admin)
            )
        }
    }

    static func buy(
        _ client: some TestClientProtocol,
        _ harness: Harness,
        key: String,
        user: String,
        product: String,
        transactionId: String,
        bundle: String = stylistBundle
    ) async throws -> Reply {
        let jws = try harness.purchase(product, transactionId: transactionId, bundleId: bundle)
        return try await client.call(
            .post,
            "/api/verify-purchase",
            auth: key,
            user: user,
            json: ["productId": .string(product), "jwsRepresentation": .string(jws)]
        )
    }

    /// The user's account of `type`, decoded into the contract's type (nil: the answer lists none).
    static func balance(_ client: some TestClientProtocol, key: String, user: String, type: String = "credits") async throws -> CreditBalanceDTO? {
        let reply = try await client.call(.get, "/api/credits", auth: key, user: user)
        #expect(reply.status == .ok, "\(reply.json)")
        return try reply.decode(CreditsResponse.self).credits.first { $0.creditType == type }
    }

    static func reserve(_ client: some TestClientProtocol, key: String, user: String, body: JSON) async throws -> Reply {
        try await client.call(.post, "/api/credits/reservations", auth: key, user: user, json: body)
    }

    static func settle(_ client: some TestClientProtocol, key: String, user: String, reservation: Reply, _ action: String) async throws -> Reply {
        let id = reservation.json["reservation"]["id"].int ?? 0
        return try await client.call(.post, "/api/credits/reservations/\(id)/\(action)", auth: key, user: user)
    }

    static func check(_ client: some TestClientProtocol, admin: String) async throws -> Bool {
        let reply = try await client.call(.get, "/api/admin/credits/check", auth: admin)
        #expect(reply.status == .ok)
        #expect((reply.json["problems"].array)?.isEmpty == true, "\(reply.json)")
        return reply.json["consistent"].bool == true
    }

    @Test("a credit pack adds the catalog's credits once: the same user's retry answers the same, another user gets 409 and a replay record")
    func buyPack() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let first = try await Self.buy(client, harness, key: keys.stylist, user: "ana", product: Self.popular, transactionId: "3000000000000001")
            #expect(first.status == .ok, "\(first.json)")
            let bought = try first.decode(CreditPurchaseResponse.self)
            #expect(bought.transactionId == "3000000000000001" && bought.creditType == "credits" && bought.creditsAdded == 50)
            #expect(bought.newBalance == 52, "50 bought + the 2 of the signup bonus")
            #expect(bought.purchase.credits == 50)

            let again = try await Self.buy(client, harness, key: keys.stylist, user: "ana", product: Self.popular, transactionId: "3000000000000001")
            #expect(again.status == .ok)
            let repeated = try again.decode(CreditPurchaseResponse.self)
            #expect(repeated.creditsAdded == 50 && repeated.newBalance == 52)
            #expect(repeated.purchase.id == bought.purchase.id)

            let stolen = try await Self.buy(client, harness, key: keys.stylist, user: "bob", product: Self.popular, transactionId: "3000000000000001")
            #expect(stolen.status == .conflict)
            #expect(stolen.errorCode == "transaction_already_used")
            #expect(try await harness.count("replay_attempts") == 1)
            #expect(try await Self.balance(client, key: keys.stylist, user: "bob")?.balance == 2)
            #expect(try await harness.count("purchases") == 1)
            #expect(try await harness.rows("SELECT type, amount FROM credit_ledger WHERE user_id = 'ana' ORDER BY created_at, type").count == 2)

            // Consumables bought again each add their credits.
            let second = try await Self.buy(client, harness, key: keys.stylist, user: "ana", product: Self.starter, transactionId: "3000000000000002")
            let starter = try second.decode(CreditPurchaseResponse.self)
            #expect(starter.creditsAdded == 10 && starter.newBalance == 62)
            #expect(try await Self.check(client, admin: keys.stylistAdmin))
        }
    }

    @Test("a receipt and a bare transaction id prove credit packs too; a booking product without bookingId and unknown products are refused")
    func proofsAndRefusals() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let receipt = try harness.receipt(Self.starter, transactionId: "3000000000000101", bundleId: Self.stylistBundle)
            let viaReceipt = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: keys.stylist,
                user: "ana",
                json: ["productId": .string(Self.starter), "receipt": .string(receipt), "transactionId": "3000000000000101"]
            )
            #expect(viaReceipt.status == .ok, "\(viaReceipt.json)")
            #expect(viaReceipt.json["creditsAdded"].int == 10)

            let unknown = try await Self.buy(
                client,
                harness,
                key: keys.stylist,
                user: "ana",
                product: "com.aiimagestylist.credits.mega",
                transactionId: "3000000000000102"
            )
            #expect(unknown.status == .unprocessableContent)
            #expect(unknown.errorCode == "unknown_product")
            let mismatch = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: keys.stylist,
                user: "ana",
                json: [
                    "productId": .string(Self.popular),
                    "jwsRepresentation": try .string(harness.purchase(Self.starter, bundleId: Self.stylistBundle)),
                ]
            )
            #expect(mismatch.errorCode == "product_mismatch")
            #expect(try await Self.balance(client, key: keys.stylist, user: "ana")?.balance == 12)

            let booking = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "ana",
                json: ["productId": "it.seaboo.rental.basic", "jwsRepresentation": try .string(harness.purchase("it.seaboo.rental.basic"))]
            )
            #expect(booking.status == .badRequest)
            #expect(booking.errorCode == "missing_field")
            #expect(booking.errorField == "bookingId")
            let notOffered = try await client.call(.get, "/api/credits", auth: harness.serverKey, user: "ana")
            #expect(notOffered.status == .notFound)
            #expect(notOffered.errorCode == "credits_not_offered")
        }
    }

    @Test("reserve, commit after success, release after failure; holds expire by themselves; 403 insufficient_credits carries the balance")
    func reservations() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let held = try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 1, "reference": "gen-1"])
            #expect(held.status == .created, "\(held.json)")
            let hold = try held.decode(ReservationResponse.self)
            #expect(hold.credits.balance == 2 && hold.credits.held == 1 && hold.credits.available == 1, "\(hold.credits)")
            #expect(hold.reservation.status == "held" && hold.reservation.reference == "gen-1" && hold.reservation.amount == 1)
            // A retried reserve with the same reference finds the same hold.
            let retried = try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 1, "reference": "gen-1"])
            #expect(retried.status == .ok)
            #expect(try retried.decode(ReservationResponse.self).reservation.id == hold.reservation.id)
            let clash = try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 2, "reference": "gen-1"])
            #expect(clash.errorCode == "reference_in_use")

            let committed = try await Self.settle(client, key: keys.stylist, user: "ana", reservation: held, "commit")
            #expect(committed.status == .ok)
            let commit = try committed.decode(ReservationResponse.self)
            #expect(commit.reservation.status == "committed" && commit.credits.balance == 1)
            let twice = try await Self.settle(client, key: keys.stylist, user: "ana", reservation: held, "commit")
            #expect(twice.status == .ok)
            #expect(try twice.decode(ReservationResponse.self).credits.balance == 1, "committing twice spends once")
            #expect(try await Self.settle(client, key: keys.stylist, user: "ana", reservation: held, "release").errorCode == "reservation_not_held")

            let failed = try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 1])
            let released = try await Self.settle(client, key: keys.stylist, user: "ana", reservation: failed, "release")
            let release = try released.decode(ReservationResponse.self)
            #expect(release.reservation.status == "released")
            #expect(release.credits.available == 1, "a failed generation costs nothing")
            #expect(try await Self.settle(client, key: keys.stylist, user: "ana", reservation: failed, "commit").errorCode == "reservation_not_held")
            #expect(try await Self.settle(client, key: keys.stylist, user: "bob", reservation: failed, "commit").status == .notFound)

            let short = try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 3])
            #expect(short.status == .forbidden)
            #expect(short.errorCode == "insufficient_credits")
            #expect(short.json["credits"]["available"].int == 1)

            let forgotten = try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 1])
            #expect(try await Self.balance(client, key: keys.stylist, user: "ana")?.available == 0)
            harness.clock.advance(11 * 60)
            #expect(try await Self.balance(client, key: keys.stylist, user: "ana")?.available == 1, "the hold expired after 10 minutes")
            let late = try await Self.settle(client, key: keys.stylist, user: "ana", reservation: forgotten, "commit")
            #expect(late.status == .conflict)
            #expect(late.errorCode == "reservation_not_held")

            let history = try await client.call(.get, "/api/credits/transactions?limit=10", auth: keys.stylist, user: "ana")
            let entries = history.json["transactions"].array ?? []
            #expect(entries.map { $0["type"].string } == ["usage", "bonus"])
            #expect(entries.first?["reference"].string == "gen-1")
            #expect(history.json["meta"]["total"].int == 2)
            let usage = try await client.call(.get, "/api/credits/transactions?type=usage", auth: keys.stylist, user: "ana")
            #expect(usage.json["meta"]["total"].int == 1)
            #expect(try await client.call(.get, "/api/credits/transactions?type=gift", auth: keys.stylist, user: "ana").errorCode == "invalid_query")
            #expect(try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 0]).errorCode == "invalid_field")
            #expect(
                try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 1, "creditType": "gold"]).errorCode
                    == "unknown_credit_type"
            )
            #expect(try await Self.check(client, admin: keys.stylistAdmin))
        }
    }

    /// One refused request: its status, code and field, and nothing written.
    static func refused(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        key: String,
        user: String? = nil,
        raw: String
    ) async throws -> (HTTPResponse.Status, String?, String?) {
        let reply = try await client.call(method, uri, auth: key, user: user, raw: raw)
        return (reply.status, reply.errorCode, reply.errorField)
    }

    @Test("the API's own bodies refuse null where the field cannot be cleared, blank reasons and unknown export formats: 400 naming the field")
    func strictInput() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let nullType = try await Self.refused(
                client,
                .post,
                "/api/credits/reservations",
                key: keys.stylist,
                user: "ana",
                raw: #"{"amount": 1, "creditType": null}"#
            )
            #expect(nullType.0 == .badRequest && nullType.1 == "invalid_field" && nullType.2 == "creditType", "\(nullType)")
            let nullTitle = try await Self.refused(
                client,
                .patch,
                "/api/admin/credit-products/\(Self.starter)",
                key: keys.stylistAdmin,
                raw: #"{"title": null}"#
            )
            #expect(nullTitle.0 == .badRequest && nullTitle.2 == "title", "\(nullTitle)")
            let nullBooking = try await Self.refused(
                client,
                .post,
                "/api/verify-purchase",
                key: keys.stylist,
                user: "ana",
                raw: #"{"productId": "\#(Self.starter)", "jwsRepresentation": "x", "bookingId": null}"#
            )
            #expect(nullBooking.0 == .badRequest && nullBooking.2 == "bookingId", "\(nullBooking)")
            // Unknown fields are ignored, null or not (the document says so: no additionalProperties: false).
            let unknownNull = try await Self.refused(
                client,
                .post,
                "/api/admin/credits/adjustments",
                key: keys.stylistAdmin,
                raw: #"{"userId": "ana", "amount": 1, "reason": "goodwill", "": null, "note": [null]}"#
            )
            #expect(unknownNull.0 == .created, "\(unknownNull)")
            // "null" inside a string is text, not a null.
            let text = try await Self.refused(
                client,
                .post,
                "/api/admin/credits/adjustments",
                key: keys.stylistAdmin,
                raw: #"{"userId": "ana", "amount": 1, "reason": "null pointer in the generator"}"#
            )
            #expect(text.0 == .created, "\(text)")
            // A reason of white space only (U+001C and U+2003 included) is blank; a too long one is named as invalid.
            let blank = try await Self.refused(
                client,
                .post,
                "/api/admin/credits/adjustments",
                key: keys.stylistAdmin,
                raw: #"{"userId": "ana", "amount": 1, "reason": " \u001c\u2003\n"}"#
            )
            #expect(blank.0 == .badRequest && blank.1 == "missing_field" && blank.2 == "reason", "\(blank)")
            let long = try await Self.refused(
                client,
                .post,
                "/api/admin/credits/adjustments",
                key: keys.stylistAdmin,
                raw: #"{"userId": "ana", "amount": 1, "reason": "\#(String(repeating: "é", count: 501))"}"#
            )
            #expect(long.0 == .badRequest && long.1 == "invalid_field" && long.2 == "reason", "\(long)")
            #expect(try await harness.rows("SELECT id FROM credit_ledger WHERE type = 'adjustment'").count == 2, "only the two valid adjustments")

            for uri in ["/api/admin/credits/ledger?format=xml", "/api/admin/purchases?format=pdf", "/api/admin/purchases?format=csv&format=json"] {
                let reply = try await client.call(.get, uri, auth: keys.stylistAdmin)
                #expect(reply.status == .badRequest && reply.errorField == "format", "\(uri)")
            }
            #expect(try await client.call(.get, "/api/admin/purchases?format=json", auth: keys.stylistAdmin).status == .ok)
        }
    }

    @Test("20 concurrent reservations of 1 against a balance of 5 hold exactly 5")
    func concurrentReservations() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let adjusted = try await client.call(
                .post,
                "/api/admin/credits/adjustments",
                auth: keys.stylistAdmin,
                json: ["userId": "ana", "amount": 3, "reason": "support gesture"]
            )
            #expect(adjusted.status == .created, "\(adjusted.json)")
            #expect(try await Self.balance(client, key: keys.stylist, user: "ana")?.available == 5)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 1, "reference": "race-\(index)"]).status
                    }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .created }.count == 5)
            #expect(statuses.filter { $0 == .forbidden }.count == 15)
            #expect(try await harness.count("credit_reservations") == 5)
            #expect(try await Self.balance(client, key: keys.stylist, user: "ana")?.available == 0)
        }
    }

    @Test("the signup bonus is granted once under 10 concurrent first calls, and to users who existed before")
    func signupBonusOnce() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let balances = try await withThrowingTaskGroup(of: Int?.self) { group in
                for _ in 0..<10 { group.addTask { try await Self.balance(client, key: keys.stylist, user: "new-user").map { Int($0.balance) } } }
                return try await group.reduce(into: [Int?]()) { $0.append($1) }
            }
            #expect(balances.allSatisfy { $0 == 2 }, "\(balances)")
            #expect(try await harness.rows("SELECT amount FROM credit_ledger WHERE user_id = 'new-user' AND type = 'bonus'").count == 1)
            // A user Berth knew before the bonus (an adjustment but no bonus row) gets it on the next call.
            try await harness.rows("INSERT INTO credit_bonuses (tenant_id, user_id, granted_at) VALUES ('aistylist-test', 'old-user', 0)")
            _ = try await client.call(
                .post,
                "/api/admin/credits/adjustments",
                auth: keys.stylistAdmin,
                json: ["userId": "old-user", "amount": 4, "reason": "migration"]
            )
            try await harness.rows("DELETE FROM credit_bonuses WHERE user_id = 'old-user'")
            #expect(try await Self.balance(client, key: keys.stylist, user: "old-user")?.balance == 6)
            #expect(try await Self.check(client, admin: keys.stylistAdmin))
        }
    }

    @Test("the AI stylist's product catalog is public; other apps' catalogs still need a caller")
    func publicCatalog() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let reply = try await client.call(.get, "/api/products?tenant=\(Self.stylist)", auth: nil)
            #expect(reply.status == .ok)
            let products = reply.json["products"].array ?? []
            #expect(products.map { $0["id"].string } == [Self.starter, Self.popular, "com.aiimagestylist.credits.bestvalue"])
            #expect(products.map { $0["credits"].int } == [10, 50, 100])
            #expect(products.map { $0["price"].int } == [99, 499, 899])
            #expect(products.allSatisfy { $0["currency"].string == "USD" && $0["active"].bool == true })
            #expect(products.map { $0["displayOrder"].int } == [1, 2, 3])
            #expect(try await client.call(.get, "/api/products?tenant=seaboo-test", auth: nil).status == .unauthorized)
            #expect(try await client.call(.get, "/api/products", auth: nil).status == .unauthorized)
        }
    }

    @Test(
        "Zorya: one credit per report type, the oldest spent first with its profile, eligibility refuses while one is unused, a re-sent transaction grants nothing twice"
    )
    func zoryaReports() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let eligibility = "/api/credits/purchase-eligibility?productId=\(Self.personality)"
            let before = try await client.call(.get, eligibility, auth: keys.zorya, user: "olha")
            #expect(before.json["eligible"].bool == true)
            let initial = try await client.call(.get, "/api/credits", auth: keys.zorya, user: "olha")
            #expect(
                (initial.json["credits"].array)?.map { $0["unlocked"].bool } == [false, false, false, false],
                "all locked at first launch"
            )

            let first = try await Self.buy(
                client,
                harness,
                key: keys.zorya,
                user: "olha",
                product: Self.personality,
                transactionId: "4000000000000001",
                bundle: "com.zorya.app"
            )
            #expect(first.json["creditsAdded"].int == 1)
            #expect(first.json["creditType"].string == "personality")
            let refused = try await client.call(.get, eligibility, auth: keys.zorya, user: "olha")
            #expect(refused.json["eligible"].bool == false)
            #expect(refused.json["reason"].string == "unused_credit")
            #expect(
                try await client.call(.get, "/api/credits/purchase-eligibility?productId=com.zorya.report.career", auth: keys.zorya, user: "olha")
                    .json["eligible"].bool == true
            )
            // The App Store charged anyway: the purchase is still granted, never lost.
            harness.clock.advance(60)
            let second = try await Self.buy(
                client,
                harness,
                key: keys.zorya,
                user: "olha",
                product: Self.personality,
                transactionId: "4000000000000002",
                bundle: "com.zorya.app"
            )
            #expect(second.json["newBalance"].int == 2)
            let unlocked = try await Self.balance(client, key: keys.zorya, user: "olha", type: "personality")
            #expect(unlocked?.unlocked == true)

            #expect(try await Self.reserve(client, key: keys.zorya, user: "olha", body: ["amount": 1]).errorField == "creditType")
            let forMom = try await Self.reserve(
                client,
                key: keys.zorya,
                user: "olha",
                body: ["amount": 1, "creditType": "personality", "profileId": "profile-mom"]
            )
            #expect(try await Self.settle(client, key: keys.zorya, user: "olha", reservation: forMom, "commit").status == .ok)
            let lots = try await client.call(.get, "/api/credits/lots?creditType=personality", auth: keys.zorya, user: "olha")
            let listed = lots.json["lots"].array ?? []
            #expect(listed.map { $0["state"].string } == ["consumed", "unused"], "the oldest credit is spent first")
            #expect(listed.first?["purchaseId"].int == first.purchase?["id"].int)
            let use = (listed.first?["uses"].array)?.first
            #expect(use?["profileId"].string == "profile-mom")
            #expect(listed.first?["consumedAt"].isNull == false)

            // Reinstall: the app re-sends its unfinished transaction; nothing is granted twice.
            let resent = try await Self.buy(
                client,
                harness,
                key: keys.zorya,
                user: "olha",
                product: Self.personality,
                transactionId: "4000000000000002",
                bundle: "com.zorya.app"
            )
            #expect(resent.status == .ok)
            #expect(resent.json["newBalance"].int == 1)
            let forMe = try await Self.reserve(
                client,
                key: keys.zorya,
                user: "olha",
                body: ["amount": 1, "creditType": "personality", "profileId": "profile-me"]
            )
            _ = try await Self.settle(client, key: keys.zorya, user: "olha", reservation: forMe, "commit")
            #expect(try await client.call(.get, eligibility, auth: keys.zorya, user: "olha").json["eligible"].bool == true)
            let usage = try await client.call(.get, "/api/credits/transactions?type=usage", auth: keys.zorya, user: "olha")
            #expect(
                Set((usage.json["transactions"].array ?? []).compactMap { $0["profileId"].string }) == [
                    "profile-mom", "profile-me",
                ]
            )
            #expect(
                try await client.call(.get, "/api/credits/purchase-eligibility?productId=nope", auth: keys.zorya, user: "olha").status == .notFound
            )
            #expect(try await Self.check(client, admin: keys.zoryaAdmin))
        }
    }

    @Test("REFUND_PRORATED takes back the refunded share of the pack (rounded up), not the pack; REFUND_REVERSED gives back that share")
    func proratedRefund() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let transaction = TransactionPayload.testPurchase(
                bundleId: Self.stylistBundle,
                productId: Self.popular,
                transactionId: "3000000000000401"
            )
            let bought = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: keys.stylist,
                user: "ana",
                json: ["productId": .string(Self.popular), "jwsRepresentation": try .string(harness.ca.signTransaction(transaction))]
            )
            #expect(bought.json["newBalance"].int == 52, "50 bought, 2 of signup bonus")
            let spend = try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 20])
            _ = try await Self.settle(client, key: keys.stylist, user: "ana", reservation: spend, "commit")

            // Apple refunded a third of the price: 33.333 % of 50 credits is 16.67, so 17 come back.
            var refunded = transaction
            refunded.revocationDate = AppleTimestamp(harness.clock.now())
            refunded.revocationReason = .other
            refunded.revocationType = .refundProrated
            refunded.revocationPercentage = 33_333
            let refund = try await client.call(
                .post,
                "/api/apple/notifications/\(Self.stylist)",
                auth: nil,
                json: ["signedPayload": try .string(harness.ca.signNotification(type: .refund, bundleId: Self.stylistBundle, transaction: refunded))]
            )
            #expect(refund.json["outcome"].string == "credits_refunded", "\(refund.json)")
            var account = try await Self.balance(client, key: keys.stylist, user: "ana")
            #expect(account?.balance == 15 && account?.debt == 0, "32 − 17: \(account)")
            let ledger = try await client.call(.get, "/api/admin/credits/ledger?userId=ana&type=refund", auth: keys.stylistAdmin)
            let entry = (ledger.json["items"].array)?.first
            #expect(entry?["amount"].int == -17 && entry?["debtChange"].int == 0)
            #expect((entry?["reason"].string)?.contains("REFUND_PRORATED") == true)

            let reversed = try await client.call(
                .post,
                "/api/apple/notifications/\(Self.stylist)",
                auth: nil,
                json: [
                    "signedPayload": try .string(
                        harness.ca.signNotification(type: .refundReversed, bundleId: Self.stylistBundle, transaction: transaction)
                    )
                ]
            )
            #expect(reversed.json["outcome"].string == "credits_reinstated")
            account = try await Self.balance(client, key: keys.stylist, user: "ana")
            #expect(account?.balance == 32, "the reversal gives back the 17 taken, not the whole pack")
            #expect(try await Self.check(client, admin: keys.stylistAdmin))

            // A full refund (REFUND_FULL, or no type) still takes the whole pack.
            let second = TransactionPayload.testPurchase(bundleId: Self.stylistBundle, productId: Self.popular, transactionId: "3000000000000402")
            _ = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: keys.stylist,
                user: "ana",
                json: ["productId": .string(Self.popular), "jwsRepresentation": try .string(harness.ca.signTransaction(second))]
            )
            var full = second
            full.revocationDate = AppleTimestamp(harness.clock.now())
            full.revocationType = .refundFull
            full.revocationPercentage = 100_000
            _ = try await client.call(
                .post,
                "/api/apple/notifications/\(Self.stylist)",
                auth: nil,
                json: ["signedPayload": try .string(harness.ca.signNotification(type: .refund, bundleId: Self.stylistBundle, transaction: full))]
            )
            account = try await Self.balance(client, key: keys.stylist, user: "ana")
            #expect(account?.balance == 32)
        }
    }

    @Test("a refund of a partly spent pack takes what is left and records the debt; the next pack settles it; REFUND_REVERSED restores")
    func refunds() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let transaction = TransactionPayload.testPurchase(
                bundleId: Self.stylistBundle,
                productId: Self.popular,
                transactionId: "3000000000000301"
            )
            let bought = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: keys.stylist,
                user: "ana",
                json: ["productId": .string(Self.popular), "jwsRepresentation": try .string(harness.ca.signTransaction(transaction))]
            )
            #expect(bought.json["newBalance"].int == 52)
            let spend = try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 20])
            _ = try await Self.settle(client, key: keys.stylist, user: "ana", reservation: spend, "commit")

            var refunded = transaction
            refunded.revocationDate = AppleTimestamp(harness.clock.now())
            refunded.revocationReason = .other
            let refund = try await client.call(
                .post,
                "/api/apple/notifications/\(Self.stylist)",
                auth: nil,
                json: ["signedPayload": try .string(harness.ca.signNotification(type: .refund, bundleId: Self.stylistBundle, transaction: refunded))]
            )
            #expect(refund.json["outcome"].string == "credits_refunded", "\(refund.json)")
            var account = try await Self.balance(client, key: keys.stylist, user: "ana")
            #expect(account?.balance == 0)
            #expect(account?.debt == 18, "50 refunded, 32 were left")
            let ledger = try await client.call(.get, "/api/admin/credits/ledger?userId=ana&type=refund", auth: keys.stylistAdmin)
            let entry = (ledger.json["items"].array)?.first
            #expect(entry?["amount"].int == -32)
            #expect(entry?["debtChange"].int == 18)
            #expect(entry?["transactionId"].string == "3000000000000301")
            let purchaseEntry = try await client.call(.get, "/api/admin/credits/ledger?userId=ana&type=purchase", auth: keys.stylistAdmin)
            #expect((purchaseEntry.json["items"].array)?.first?["status"].string == "refunded")
            #expect(
                try await Self.buy(client, harness, key: keys.stylist, user: "ana", product: Self.popular, transactionId: "3000000000000301")
                    .errorCode == "transaction_revoked"
            )

            let next = try await Self.buy(client, harness, key: keys.stylist, user: "ana", product: Self.starter, transactionId: "3000000000000302")
            #expect(next.json["creditsAdded"].int == 10)
            #expect(next.json["newBalance"].int == 0, "the 10 new credits paid off part of the debt")
            account = try await Self.balance(client, key: keys.stylist, user: "ana")
            #expect(account?.debt == 8)

            let reversed = try await client.call(
                .post,
                "/api/apple/notifications/\(Self.stylist)",
                auth: nil,
                json: [
                    "signedPayload": try .string(
                        harness.ca.signNotification(type: .refundReversed, bundleId: Self.stylistBundle, transaction: transaction)
                    )
                ]
            )
            #expect(reversed.json["outcome"].string == "credits_reinstated")
            account = try await Self.balance(client, key: keys.stylist, user: "ana")
            #expect(account?.balance == 42)
            #expect(account?.debt == 0)
            #expect(try await Self.check(client, admin: keys.stylistAdmin))

            let stats = try await client.call(.get, "/api/admin/credits/stats", auth: keys.stylistAdmin)
            let popular = (stats.json["products"].array)?.first { $0["productId"].string == Self.popular }
            #expect(popular?["purchases"].int == 1)
            #expect(popular?["creditsGranted"].int == 50)
            #expect(popular?["refunds"].int == 1)
            #expect(popular?["creditsRefunded"].int == 50)
        }
    }

    @Test("a ONE_TIME_CHARGE for a pack nobody reported is kept, then applied once when its user claims it")
    func unclaimedPack() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let transaction = TransactionPayload.testPurchase(
                bundleId: Self.stylistBundle,
                productId: Self.starter,
                transactionId: "3000000000000401"
            )
            let charge = try await client.call(
                .post,
                "/api/apple/notifications/\(Self.stylist)",
                auth: nil,
                json: [
                    "signedPayload": try .string(
                        harness.ca.signNotification(type: .oneTimeCharge, bundleId: Self.stylistBundle, transaction: transaction)
                    )
                ]
            )
            #expect(charge.json["outcome"].string == "unclaimed_purchase")
            #expect(try await harness.count("credit_ledger") == 0)
            let jws = try harness.ca.signTransaction(transaction)
            let claimed = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: keys.stylist,
                user: "ana",
                json: ["productId": .string(Self.starter), "jwsRepresentation": .string(jws)]
            )
            #expect(claimed.json["newBalance"].int == 12)
            let again = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: keys.stylist,
                user: "ana",
                json: ["productId": .string(Self.starter), "jwsRepresentation": .string(jws)]
            )
            #expect(again.json["newBalance"].int == 12)
            let unclaimed = try await client.call(.get, "/api/admin/unclaimed", auth: keys.stylistAdmin)
            #expect((unclaimed.json["items"].array)?.first?["claimedByPurchaseId"].int == claimed.purchase?["id"].int)
        }
    }

    @Test("operators create, edit, disable and order credit products (audited; the stored product wins); ledger filters, CSV export")
    func operatorsCMS() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let mega =
                ["productId": "com.aiimagestylist.credits.mega", "credits": 500, "title": "Mega", "priceMinor": 3999, "displayOrder": 0]
                as JSON
            let created = try await client.call(.post, "/api/admin/credit-products", auth: keys.stylistAdmin, json: mega)
            #expect(created.status == .created, "\(created.json)")
            #expect(try await client.call(.post, "/api/admin/credit-products", auth: keys.stylistAdmin, json: mega).errorCode == "product_exists")
            #expect(try await client.call(.post, "/api/admin/credit-products", auth: keys.stylist, json: mega).status == .forbidden)
            var invalid = mega
            invalid["productId"] = "com.aiimagestylist.credits.zero"
            invalid["credits"] = 0
            #expect(try await client.call(.post, "/api/admin/credit-products", auth: keys.stylistAdmin, json: invalid).errorCode == "invalid_field")

            let edited = try await client.call(
                .patch,
                "/api/admin/credit-products/\(Self.starter)",
                auth: keys.stylistAdmin,
                json: ["credits": 12, "displayOrder": 9]
            )
            #expect(edited.json["product"]["credits"].int == 12)
            let cleared = try await client.call(
                .patch,
                "/api/admin/credit-products/\(Self.starter)",
                auth: keys.stylistAdmin,
                raw: #"{"description": null}"#
            )
            let clearedProduct = cleared.json["product"].object
            #expect(clearedProduct?["description"].isNull != false, "null clears a field")
            #expect(clearedProduct?["price"].int == 99, "an absent field is left as it is")
            let disabled = try await client.call(
                .patch,
                "/api/admin/credit-products/\(Self.popular)",
                auth: keys.stylistAdmin,
                json: ["active": false]
            )
            #expect(disabled.json["product"]["active"].bool == false)
            #expect(
                try await client.call(.patch, "/api/admin/credit-products/nope", auth: keys.stylistAdmin, json: ["active": false]).status == .notFound
            )

            let listed = try await client.call(.get, "/api/products?tenant=\(Self.stylist)", auth: nil)
            #expect(
                (listed.json["products"].array)?.map { $0["id"].string } == [
                    "com.aiimagestylist.credits.mega", "com.aiimagestylist.credits.bestvalue", Self.starter,
                ]
            )
            let all = try await client.call(.get, "/api/admin/credit-products", auth: keys.stylistAdmin)
            #expect((all.json["products"].array)?.count == 4)
            #expect(try await harness.rows("SELECT action FROM audit_log WHERE action LIKE 'credit_product.%'").count == 4, "create and three edits")

            // The edited pack grants its new credits; a disabled pack still grants what was paid for.
            #expect(
                try await Self.buy(client, harness, key: keys.stylist, user: "ana", product: Self.starter, transactionId: "3000000000000501").json[
                    "creditsAdded"
                ].int == 12
            )
            #expect(
                try await Self.buy(client, harness, key: keys.stylist, user: "bob", product: Self.popular, transactionId: "3000000000000502").json[
                    "creditsAdded"
                ].int == 50
            )
            let eligibility = try await client.call(
                .get,
                "/api/credits/purchase-eligibility?productId=\(Self.popular)",
                auth: keys.stylist,
                user: "ana"
            )
            #expect(eligibility.json["reason"].string == "product_inactive")

            let bobs = try await client.call(.get, "/api/admin/credits/ledger?userId=bob&productId=\(Self.popular)", auth: keys.stylistAdmin)
            #expect(bobs.json["total"].int == 1)
            let bonuses = try await client.call(.get, "/api/admin/credits/ledger?type=bonus", auth: keys.stylistAdmin)
            #expect(bonuses.json["total"].int == 2)
            let future = iso(harness.clock.now().addingTimeInterval(3600))
            #expect(try await client.call(.get, "/api/admin/credits/ledger?from=\(future)", auth: keys.stylistAdmin).json["total"].int == 0)
            let csv = try await client.call(.get, "/api/admin/credits/ledger?format=csv&userId=ana", auth: keys.stylistAdmin)
            let lines = String(decoding: csv.data, as: UTF8.self).split(separator: "\r\n")
            #expect(lines.first?.hasPrefix("id,createdAt,userId,creditType,type,amount") == true)
            #expect(lines.count == 3, "header, bonus, purchase")
            #expect(lines.last?.contains(",purchase,12,") == true)
            #expect(try await Self.check(client, admin: keys.stylistAdmin))
        }
    }

    @Test("credit changes reach the tenant's backend as credits.changed events, in order per account")
    func creditEvents() async throws {
        let harness = try await Harness.make(webhookURL: "http://127.0.0.1:9/hook", webhookTenants: [Self.stylist])
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            _ = try await Self.buy(client, harness, key: keys.stylist, user: "ana", product: Self.starter, transactionId: "3000000000000601")
            let spend = try await Self.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 3])
            _ = try await Self.settle(client, key: keys.stylist, user: "ana", reservation: spend, "commit")
            let events = try await harness.rows(
                "SELECT event_type, subject, payload FROM webhook_outbox WHERE tenant_id = ? ORDER BY sequence",
                [Self.stylist]
            )
            #expect(events.map { $0["event_type"] ?? nil } == ["credits.changed", "credits.changed", "credits.changed"])
            #expect(Set(events.map { $0["subject"] ?? nil }) == ["credits:credits:ana"])
            let reasons = events.compactMap { row -> String? in
                let payload = (try? JSON.parse(Data((row["payload"] ?? "")!.utf8)))?.object
                guard let data = payload?["data"], let reason = data["reason"].string, let change = data["change"].string,
                    let balance = data["balance"].string
                else { return nil }
                return "\(reason):\(change):\(balance)"
            }
            #expect(reasons == ["bonus:2:2", "purchase:10:12", "usage:-3:9"])
        }
    }

    @Test(
        "hostile numbers never trap: an adjustment of Int64.min, a signed quantity of 10^18; a CSV cell starting with = and a combining mark is guarded"
    )
    func hostileNumbers() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await Keys.make(harness)
        try await harness.app().test(.router) { client in
            let minimum = try await Self.refused(
                client,
                .post,
                "/api/admin/credits/adjustments",
                key: keys.stylistAdmin,
                raw: #"{"userId": "ana", "amount": -9223372036854775808, "reason": "x"}"#
            )
            #expect(minimum.0 == .badRequest && minimum.1 == "invalid_field" && minimum.2 == "amount", "\(minimum)")

            func signed(_ quantity: Int, _ id: String) throws -> String {
                try harness.ca.signTransaction(
                    .testPurchase(
                        bundleId: Self.stylistBundle,
                        productId: Self.starter,
                        transactionId: id,
                        quantity: quantity,
                        signedDate: harness.clock.now()
                    )
                )
            }
            let huge = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: keys.stylist,
                user: "ana",
                json: ["productId": .string(Self.starter), "jwsRepresentation": try .string(signed(1_000_000_000_000_000_000, "3000000000000901"))]
            )
            #expect(huge.status == .unprocessableContent && huge.errorCode == "malformed", "\(huge.json)")
            let ten = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: keys.stylist,
                user: "ana",
                json: ["productId": .string(Self.starter), "jwsRepresentation": try .string(signed(10, "3000000000000902"))]
            )
            #expect(ten.status == .ok && ten.json["creditsAdded"].int == 100, "ten starter packs: \(ten.json)")

            // (=\u{0338} would be composed into ≠ at entry)
            _ = try await client.call(.get, "/api/credits", auth: keys.stylist, user: "=\u{0301}cmd|calc")
            let csv = try await client.call(.get, "/api/admin/credits/ledger?format=csv", auth: keys.stylistAdmin)
            let text = String(decoding: csv.data, as: UTF8.self)
            #expect(text.contains("'=\u{0301}cmd|calc") && !text.contains(",=\u{0301}cmd"), "the formula guard looks at the first scalar")
            // V10: a spreadsheet in a `;` locale (Italian, German, French Excel) or splitting on tabs sees
            // these as cells of their own: every part that starts a formula is guarded, the cell quoted.
            for user in ["x;=1+1", "y;@SUM(1+1)", "q\t=1+1", "z; -2+3"] {
                _ = try await client.call(.get, "/api/credits", auth: keys.stylist, user: user)
            }
            let guarded = String(
                decoding: try await client.call(.get, "/api/admin/credits/ledger?format=csv", auth: keys.stylistAdmin).data,
                as: UTF8.self
            )
            for cell in ["\"x;'=1+1\"", "\"y;'@SUM(1+1)\"", "\"q\t'=1+1\"", "\"z; '-2+3\""] {
                #expect(guarded.contains(cell), "\(cell) in the export")
            }
            #expect(LedgerCSV.text("plain; text") == "\"plain; text\"" && LedgerCSV.text("-5") == "'-5" && LedgerCSV.text("ok") == "ok")
        }
    }
}

import Domain
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import TestKit
import Testing

@Suite("Bookings, admin and tenant isolation")
struct BookingAndAdminTests {
    @Test(
        "bookings are priced server-side and mapped to their product",
        arguments: [
            ("gozzo-5m", 1, "it.seaboo.rental.basic", 8000),
            ("gozzo-5m", 2, "it.seaboo.rental.premium", 16000),
            ("rib-7m", 1, "it.seaboo.rental.premium", 18000),
        ]
    )
    func rentalProducts(resource: String, days: Int, product: String, price: Int) async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(5, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "u",
                body: [
                    "resourceId": .string(resource), "start": .string(iso(start)),
                    "end": .string(iso(start.addingTimeInterval(TimeInterval(days * 86_400 - 3600)))), "price": 1,
                ]
            )
            #expect(booking["requiredProductId"].string == product)
            #expect(booking["price"].int == price)
            #expect(booking["currency"].string == "EUR")
        }
    }

    @Test("experiences sell seats of a slot; the last seat goes to one of two racing users")
    func lastSeatRace() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let slot = Harness.local(6, hour: 7, from: harness.clock.now())
            let group = try await createBooking(
                client,
                harness,
                user: "family",
                body: ["resourceId": "diving-intro", "slot": .string(iso(slot)), "seats": 5]
            )
            #expect(group["requiredProductId"].string == "it.seaboo.experience.diving")
            #expect(group["price"].int == 5 * 8500)
            #expect(group["end"].string == iso(slot.addingTimeInterval(3 * 3600)).replacingOccurrences(of: "Z", with: ".000Z"))

            let replies = try await withThrowingTaskGroup(of: Reply.self) { tasks in
                for user in ["anna", "bruno"] {
                    tasks.addTask {
                        try await client.call(
                            .post,
                            "/api/bookings",
                            auth: harness.serverKey,
                            user: user,
                            json: ["resourceId": "diving-intro", "slot": .string(iso(slot)), "seats": 1]
                        )
                    }
                }
                return try await tasks.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.filter { $0.status == .created }.count == 1)
            #expect(replies.filter { $0.status == .conflict && $0.errorCode == "slot_taken" }.count == 1)

            let winner = try #require(replies.first { $0.status == .created }?.booking)
            let user = try #require(winner["userId"].string)
            let paid = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: user,
                json: [
                    "bookingId": winner["id"], "productId": "it.seaboo.experience.diving",
                    "jwsRepresentation": try .string(harness.purchase("it.seaboo.experience.diving")),
                ]
            )
            #expect(paid.booking?["status"].string == "confirmed")

            let badSlot = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "x",
                json: ["resourceId": "diving-intro", "slot": .string(iso(slot.addingTimeInterval(1800)))]
            )
            #expect(badSlot.errorCode == "slot_not_offered")
            let tooMany = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "x",
                json: [
                    "resourceId": "sunset-cruise", "slot": .string(iso(Harness.local(6, hour: 17, minute: 30, from: harness.clock.now()))),
                    "seats": 11,
                ]
            )
            #expect(tooMany.errorField == "seats")
        }
    }

    @Test("bad booking requests are 4xx with the field named")
    func badBookingRequests() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let now = harness.clock.now()
            let start = Harness.day(3, from: now)
            let cases: [(JSON, String, String?)] = [
                (
                    ["resourceId": "nope", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))], "resource_not_found",
                    "resourceId"
                ),
                (["resourceId": "gozzo-5m", "start": .string(iso(start))], "invalid_request", "end"),
                (["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start))], "invalid_request", "end"),
                (
                    ["resourceId": "gozzo-5m", "start": .string(iso(now.addingTimeInterval(-86_400))), "end": .string(iso(now))], "invalid_request",
                    "start"
                ),
                (["resourceId": .string("gozzo-5m"), "start": .string("tomorrow"), "end": .string(iso(start))], "invalid_field", "start"),
                (
                    ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(40 * 86_400)))],
                    "invalid_request", "end"
                ),
                (
                    ["resourceId": "diving-intro", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))],
                    "invalid_request", "slot"
                ),
                (["start": .string(iso(start))], "missing_field", "resourceId"),
            ]
            for (body, code, field) in cases {
                let reply = try await client.call(.post, "/api/bookings", auth: harness.serverKey, user: "u", json: body)
                #expect(reply.status.code >= 400 && reply.status.code < 500, "\(body)")
                #expect(reply.errorCode == code, "\(body) → \(reply.json)")
                #expect(reply.errorField == field, "\(body)")
            }
            #expect(try await harness.count("bookings") == 0)
        }
    }

    @Test("admin confirms with a reason and cancels; both are audited and told to the tenant's backend (L2: booking.confirmed, booking.cancelled)")
    func adminConfirmAndCancel() async throws {
        // The receiver is never reached here: the events are read from the outbox.
        let harness = try await Harness.make(webhookURL: "http://127.0.0.1:9/hooks")
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(3, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "alice",
                body: ["resourceId": "rib-7m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            )
            let id = try #require(booking["id"].int)

            let noReason = try await client.call(.post, "/api/admin/bookings/\(id)/confirm", auth: harness.adminKey, json: ["reason": "  "])
            #expect(noReason.status == .badRequest)
            #expect(noReason.errorField == "reason")
            let asUser = try await client.call(
                .post,
                "/api/admin/bookings/\(id)/confirm",
                auth: harness.serverKey,
                user: "alice",
                json: ["reason": "x"]
            )
            #expect(asUser.status == .forbidden)

            let confirmed = try await client.call(
                .post,
                "/api/admin/bookings/\(id)/confirm",
                auth: harness.adminKey,
                json: ["reason": "paid at the harbour"]
            )
            #expect(confirmed.status == .ok)
            #expect(confirmed.booking?["status"].string == "confirmed")
            #expect(confirmed.booking?["statusReason"].string == "paid at the harbour")
            let twice = try await client.call(.post, "/api/admin/bookings/\(id)/confirm", auth: harness.adminKey, json: ["reason": "again"])
            #expect(twice.errorCode == "invalid_transition")

            let cancelled = try await client.call(
                .post,
                "/api/admin/bookings/\(id)/cancel",
                auth: harness.adminKey,
                json: ["reason": "storm warning"]
            )
            #expect(cancelled.booking?["status"].string == "cancelled")
            let cancelledTwice = try await client.call(.post, "/api/admin/bookings/\(id)/cancel", auth: harness.adminKey)
            #expect(cancelledTwice.status == .conflict)

            let audit = try await client.call(.get, "/api/admin/audit", auth: harness.adminKey)
            let actions = (audit.json["items"].array ?? []).compactMap { $0["action"].string }
            #expect(actions.contains("booking.manual_confirm"))
            #expect(actions.contains("booking.cancelled"))
            #expect(actions.contains("booking.created"))
            let events = try await harness.rows("SELECT event_type FROM webhook_outbox ORDER BY sequence").compactMap { $0["event_type"] ?? nil }
            #expect(events == ["booking.confirmed", "booking.cancelled"], "\(events)")

            let listed = try await client.call(.get, "/api/admin/bookings?status=cancelled&resourceId=rib-7m&limit=10", auth: harness.adminKey)
            #expect(listed.json["total"].int == 1)
            let none = try await client.call(.get, "/api/admin/bookings?status=confirmed", auth: harness.adminKey)
            #expect(none.json["total"].int == 0)
            let badFilter = try await client.call(.get, "/api/admin/bookings?status=maybe", auth: harness.adminKey)
            #expect(badFilter.errorField == "status")
            let badLimit = try await client.call(.get, "/api/admin/bookings?limit=0", auth: harness.adminKey)
            #expect(badLimit.errorField == "limit")
        }
    }

    @Test("admin listing filters by user and date range and pages")
    func adminPagination() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            for day in 1...5 {
                let start = Harness.day(day, from: harness.clock.now())
                _ = try await createBooking(
                    client,
                    harness,
                    user: day % 2 == 0 ? "even" : "odd",
                    body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
                )
            }
            let page = try await client.call(.get, "/api/admin/bookings?limit=2&offset=2", auth: harness.adminKey)
            #expect(page.json["total"].int == 5)
            #expect((page.json["items"].array)?.count == 2)
            let even = try await client.call(.get, "/api/admin/bookings?userId=even", auth: harness.adminKey)
            #expect(even.json["total"].int == 2)
            let from = iso(Harness.day(2, hour: 0, from: harness.clock.now()))
            let to = iso(Harness.day(4, hour: 0, from: harness.clock.now()))
            let range = try await client.call(.get, "/api/admin/bookings?from=\(from)&to=\(to)", auth: harness.adminKey)
            #expect(range.json["total"].int == 2)
            let mine = try await client.call(.get, "/api/bookings", auth: harness.serverKey, user: "odd")
            #expect(mine.json["total"].int == 3)
        }
    }

    @Test("tenants are isolated on every endpoint")
    func tenantIsolation() async throws {
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
            let jws = try harness.purchase("it.seaboo.rental.basic")
            let paid = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "alice",
                json: ["bookingId": .int(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(paid.status == .ok)

            // The other tenant ("seaboo") sees none of it, under the same user id.
            #expect(try await client.call(.get, "/api/bookings/\(id)", auth: harness.otherServerKey, user: "alice").status == .notFound)
            #expect(try await client.call(.get, "/api/bookings", auth: harness.otherServerKey, user: "alice").json["total"].int == 0)
            #expect(try await client.call(.get, "/api/admin/bookings", auth: harness.otherAdminKey).json["total"].int == 0)
            #expect(try await client.call(.get, "/api/admin/purchases", auth: harness.otherAdminKey).json["total"].int == 0)
            let otherAudit = try await client.call(.get, "/api/admin/audit", auth: harness.otherAdminKey).json["items"].array ?? []
            #expect(otherAudit.allSatisfy { $0["action"].string == "api_key.created" }, "only its own key creations: \(otherAudit)")
            #expect(try await client.call(.get, "/api/admin/replays", auth: harness.otherAdminKey).json["total"].int == 0)
            #expect(
                try await client.call(.post, "/api/admin/bookings/\(id)/confirm", auth: harness.otherAdminKey, json: ["reason": "x"]).status
                    == .notFound
            )
            #expect(try await client.call(.post, "/api/admin/bookings/\(id)/cancel", auth: harness.otherAdminKey).status == .notFound)
            let verify = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.otherServerKey,
                user: "alice",
                json: ["bookingId": .int(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(verify.status == .notFound)
            // The other tenant does not trust the test CA at all.
            let otherStart = Harness.day(9, from: harness.clock.now())
            let other = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.otherServerKey,
                user: "alice",
                json: ["resourceId": "gozzo-5m", "start": .string(iso(otherStart)), "end": .string(iso(otherStart.addingTimeInterval(3600)))]
            )
            let otherVerify = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.otherServerKey,
                user: "alice",
                json: ["bookingId": other.booking!["id"], "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(otherVerify.errorCode == "untrusted_root")
            #expect(try await harness.count("purchases") == 1)
        }
    }

    @Test("authentication: user JWTs by issuer, API keys, and clear 401/403s")
    func authentication() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let token = try await harness.userToken("carla")
            let start = Harness.day(3, from: harness.clock.now())
            let created = try await client.call(
                .post,
                "/api/bookings",
                auth: token,
                json: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            )
            #expect(created.status == .created)
            #expect(created.booking?["userId"].string == "carla")
            #expect(try await client.call(.get, "/api/products", auth: token).json["products"].array != nil)

            #expect(try await client.call(.get, "/api/bookings", auth: nil).status == .unauthorized)
            #expect(try await client.call(.get, "/api/bookings", auth: "berth_seaboo-test_forged").status == .unauthorized)
            #expect(
                try await client.call(.get, "/api/bookings", auth: try await harness.userToken("carla", issuer: "https://evil.example")).status
                    == .unauthorized
            )
            #expect(
                try await client.call(.get, "/api/bookings", auth: try await harness.userToken("carla", audience: "other")).status == .unauthorized
            )
            #expect(try await client.call(.get, "/api/bookings", auth: try await harness.userToken("carla", expiresIn: -60)).status == .unauthorized)
            #expect(try await client.call(.get, "/api/bookings", auth: harness.serverKey).errorCode == "missing_user")
            #expect(try await client.call(.get, "/api/admin/bookings", auth: token).status == .forbidden)
            #expect(try await client.call(.get, "/api/bookings", auth: harness.adminKey).status == .forbidden)
            #expect(try await client.call(.get, "/healthz", auth: nil).json["status"].string == "ok")
            #expect(try await client.call(.get, "/nowhere", auth: nil).status == .notFound)
        }
    }
}

@Suite("ES256 user tokens")
struct ES256TokenTests {
    @Test("a tenant configured with an ES256 public key accepts tokens signed by its private key only")
    func es256() async throws {
        let signingKey = ES256PrivateKey()
        let harness = try await Harness.make(userPublicKeyPEM: signingKey.publicKey.pemRepresentation)
        defer { harness.close() }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: signingKey)
        let claims = TestUserClaims(
            sub: .init(value: "dora"),
            iss: .init(value: "https://auth.seaboo.test"),
            aud: .init(value: ["berth"]),
            exp: .init(value: Date().addingTimeInterval(300))
        )
        let token = try await keys.sign(claims)
        let otherKeys = JWTKeyCollection()
        await otherKeys.add(ecdsa: ES256PrivateKey())
        let forged = try await otherKeys.sign(claims)
        let hmac = try await harness.userToken("dora")
        try await harness.app().test(.router) { client in
            let mine = try await client.call(.get, "/api/bookings", auth: token)
            #expect(mine.status == .ok)
            #expect(try await client.call(.get, "/api/bookings", auth: forged).status == .unauthorized)
            #expect(try await client.call(.get, "/api/bookings", auth: hmac).status == .unauthorized)
        }
    }
}

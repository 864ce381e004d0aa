import Domain
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import StripeAPI
import StripeStandIn
import Testing

/// Closures (issue "Run the season"): the port closed for a storm.
@Suite("Closures")
struct ClosureTests {
    @Test(
        "a storm closes Saturday: the answer lists the bookings already inside, a new booking inside is refused with resource_closed, the next day is open; bad input is a 4xx naming the field; deleting the closure reopens the day; audited"
    )
    func stormClosesTheDay() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let day = String(iso(Harness.day(6, from: harness.clock.now())).prefix(10))
            let nextDay = String(iso(Harness.day(7, from: harness.clock.now())).prefix(10))
            let dayAfter = String(iso(Harness.day(8, from: harness.clock.now())).prefix(10))
            /// A rental's local days run from its start day to the day it ends (exclusive).
            let following = [day: nextDay, nextDay: dayAfter]
            func book(_ user: String, _ resource: String, on date: String) async throws -> Reply {
                let body: JSON =
                    resource == "sunset-cruise"
                    ? ["resourceId": .string(resource), "slot": "\(date)T17:30", "seats": 1]
                    : ["resourceId": .string(resource), "start": .string(date), "end": .string(following[date] ?? date)]
                return try await client.call(.post, "/api/bookings", auth: harness.serverKey, user: user, json: body)
            }
            let cruise = try await book("ada", "sunset-cruise", on: day)
            let boat = try await book("ben", "gozzo-5m", on: day)
            #expect(cruise.status == .created && boat.status == .created, "\(cruise.json) \(boat.json)")

            let closed = try await client.call(
                .post,
                "/api/admin/closures",
                auth: harness.adminKey,
                json: ["from": .string(day), "to": .string(day), "reason": "storm: the harbour master closed the port"]
            )
            #expect(closed.status == .created, "\(closed.json)")
            let inside = (closed.json["bookingsInside"].array ?? []).compactMap { $0["reference"].string }
            #expect(
                Set(inside) == Set([cruise.booking?["reference"].string, boat.booking?["reference"].string].compactMap { $0 }),
                "\(inside)"
            )
            #expect((closed.json["localFrom"].string)?.hasPrefix("\(day)T00:00:00+0") == true, "the whole local day: \(closed.json)")
            #expect(closed.json["timeZone"].string == "Europe/Rome")
            let id = try #require(closed.json["id"].int)

            let refused = try await book("cai", "gozzo-5m", on: day)
            #expect(refused.status == .conflict && refused.errorCode == "resource_closed", "\(refused.json)")
            let message = refused.json["error"]["message"].string ?? ""
            #expect(message.contains("storm"), "the refusal says why: \(message)")
            let cruiseRefused = try await book("cai", "sunset-cruise", on: day)
            #expect(cruiseRefused.errorCode == "resource_closed", "every resource: \(cruiseRefused.json)")
            #expect(try await book("cai", "gozzo-5m", on: nextDay).status == .created, "the next day is open")

            // Bad input, each named.
            for (body, field): (JSON, String) in [
                (["from": .string(nextDay), "to": .string(day), "reason": "x"], "to"),
                (["from": "15/08/2026", "to": .string(day), "reason": "x"], "from"),
                (["from": .string(day), "to": .string(day), "reason": "  "], "reason"),
            ] {
                let reply = try await client.call(.post, "/api/admin/closures", auth: harness.adminKey, json: body)
                #expect(
                    reply.status == .badRequest && reply.json["error"]["field"].string == field,
                    "\(body): \(reply.json)"
                )
            }
            let unknown = try await client.call(
                .post,
                "/api/admin/closures",
                auth: harness.adminKey,
                json: ["resourceId": "ghost", "from": .string(day), "to": .string(day), "reason": "x"]
            )
            #expect(unknown.status == .notFound && unknown.errorCode == "resource_not_found")

            let listed = try await client.call(.get, "/api/admin/closures", auth: harness.adminKey)
            #expect((listed.json["closures"].array)?.map { $0["id"].int } == [id])
            #expect(try await client.call(.delete, "/api/admin/closures/\(id)", auth: harness.adminKey).status == .noContent)
            #expect(try await book("cai", "rib-7m", on: day).status == .created, "reopened (the gozzo is ben's that day)")
            let again = try await client.call(.delete, "/api/admin/closures/\(id)", auth: harness.adminKey)
            #expect(again.status == .notFound && again.errorCode == "closure_not_found")
            let history = try await client.call(.get, "/api/admin/closures?deleted=true", auth: harness.adminKey)
            #expect((history.json["closures"].array)?.first?["deletedAt"].isNull == false)
            let audit = try await client.call(.get, "/api/admin/audit?limit=50", auth: harness.adminKey)
            let actions = Set((audit.json["items"].array ?? []).compactMap { $0["action"].string })
            #expect(actions.isSuperset(of: ["closure.created", "closure.deleted"]), "\(actions)")
            #expect(try await client.call(.get, "/api/admin/closures", auth: harness.serverKey).status == .forbidden)
        }
    }
}

extension ClosureTests {
    @Test(
        "resolving a closure by cancel: the card-paid booking refunded in full through Stripe once (resolving again refunds nothing), the App Store one cancelled and owed, the unpaid one cancelled"
    )
    func resolveByCancel() async throws {
        try await CardPaymentTests.withCardRail { harness, standIn, client in
            let day = String(iso(Harness.day(8, from: harness.clock.now())).prefix(10))
            let next = String(iso(Harness.day(9, from: harness.clock.now())).prefix(10))
            func rent(_ user: String, _ resource: String) async throws -> Int64 {
                let made = try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: user,
                    json: ["resourceId": .string(resource), "start": .string(day), "end": .string(next)]
                )
                return try #require(made.booking?["id"].int64, "\(made.json)")
            }
            let byCard = try await rent("carla", "gozzo-5m")
            let intent = try #require(
                try await CardPaymentTests.pay(client, harness, user: "carla", booking: byCard).json["paymentIntentId"].string
            )
            _ = try await standIn.succeed(intent)
            let byApple = try await rent("ivo", "rib-7m")
            let verified = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "ivo",
                json: [
                    "bookingId": .int(byApple), "productId": "it.seaboo.rental.premium",
                    "jwsRepresentation": try .string(harness.purchase("it.seaboo.rental.premium")),
                ]
            )
            #expect(verified.status == .ok, "\(verified.json)")
            let unpaid = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "ugo",
                json: ["resourceId": "sunset-cruise", "slot": "\(day)T17:30", "seats": 1]
            )
            let unpaidId = try #require(unpaid.booking?["id"].int64, "\(unpaid.json)")

            let closed = try await client.call(
                .post,
                "/api/admin/closures",
                auth: harness.adminKey,
                json: ["from": .string(day), "to": .string(day), "reason": "storm"]
            )
            #expect((closed.json["bookingsInside"].array)?.count == 3, "\(closed.json)")
            let id = try #require(closed.json["id"].int)
            let resolved = try await client.call(.post, "/api/admin/closures/\(id)/resolve", auth: harness.adminKey, json: ["action": "cancel"])
            #expect(resolved.status == .ok, "\(resolved.json)")
            var outcomes: [Int64: String] = [:]
            for result in resolved.json["results"].array ?? [] {
                if let booking = result["booking"]["id"].int64 { outcomes[booking] = result["outcome"].string }
            }
            #expect(outcomes == [byCard: "refunded", byApple: "cancelled_owed", unpaidId: "cancelled"], "\(resolved.json)")
            #expect(standIn.refunds.map(\.amount) == [8000], "one full refund at Stripe")
            let owed = try await client.call(.get, "/api/admin/owed", auth: harness.adminKey)
            #expect(
                (owed.json["items"].array ?? []).contains {
                    $0["bookingId"].int64 == byApple && $0["rail"].string == "app_store"
                },
                "\(owed.json)"
            )
            // Again: nothing is left inside, nothing is refunded twice.
            let again = try await client.call(.post, "/api/admin/closures/\(id)/resolve", auth: harness.adminKey, json: ["action": "cancel"])
            #expect(again.status == .ok && (again.json["results"].array)?.isEmpty == true, "\(again.json)")
            #expect(standIn.refunds.count == 1)
            let move = try await client.call(.post, "/api/admin/closures/\(id)/resolve", auth: harness.adminKey, json: ["action": "move"])
            #expect(move.status == .badRequest, "moves are not offered yet: \(move.json)")
        }
    }
}

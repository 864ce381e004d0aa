import Domain
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import StripeAPI
import StripeStandIn
import Testing

/// The season (issue "Run the season"): prices by date and weekday, customers moving and cancelling
/// under the cancellation policy, closures resolved by moving.
@Suite("The season: prices, moves, cancellations")
struct SeasonTests {
    /// `YYYY-MM-DD` of the UTC day `offset` days from now (08:00 UTC is the same date in Rome).
    static func date(_ offset: Int, _ harness: Harness) -> String {
        String(iso(Harness.day(offset, from: harness.clock.now())).prefix(10))
    }

    /// `mon` … `sun` of that date.
    static func weekday(_ offset: Int, _ harness: Harness) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Europe/Rome") ?? .current
        let index = calendar.component(.weekday, from: Harness.day(offset, from: harness.clock.now()))
        return ["sun", "mon", "tue", "wed", "thu", "fri", "sat"][index - 1]
    }

    @Test(
        "season prices: a rule by dates prices each local day of a rental and each seat of a slot, a later rule for a weekday wins over it, days outside keep the resource's price; a rule no band covers, dates out of order, an unknown weekday or the wrong price field is a 422 naming why"
    )
    func seasonPrices() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let (d10, d11, d12, d14) = (Self.date(10, harness), Self.date(11, harness), Self.date(12, harness), Self.date(14, harness))
            let august = try await client.call(
                .post,
                "/api/admin/resources/gozzo-5m/prices",
                auth: harness.adminKey,
                json: ["from": .string(d10), "to": .string(d12), "pricePerDayMinor": 9500]
            )
            #expect(august.status == .created, "\(august.json)")
            let rules = august.json["resource"]["resource"]["prices"].array
            #expect(rules?.count == 1 && rules?.first?["pricePerDayMinor"].int == 9500, "\(august.json)")
            let weekend = try await client.call(
                .post,
                "/api/admin/resources/gozzo-5m/prices",
                auth: harness.adminKey,
                json: ["from": .string(d10), "to": .string(d10), "weekdays": [.string(Self.weekday(10, harness))], "pricePerDayMinor": 9900]
            )
            #expect(weekend.status == .created, "\(weekend.json)")
            func rent(_ user: String, _ start: String, _ end: String) async throws -> JSON? {
                try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: user,
                    json: ["resourceId": "gozzo-5m", "start": .string(start), "end": .string(end)]
                )
                .booking
            }
            #expect(try await rent("a", d10, d11)?["price"].int == 9900, "the later weekday rule wins on its day")
            #expect(try await rent("b", d11, d12)?["price"].int == 9500, "the season's day price")
            let across = try await rent("c", d12, d14)
            #expect(across?["price"].int == 9500 + 8000, "one day in the season, one after it: \(String(describing: across))")
            #expect(
                across?["requiredProductId"].string == "it.seaboo.rental.premium",
                "the product follows the bands: \(String(describing: across))"
            )
            #expect(try await rent("d", Self.date(15, harness), Self.date(16, harness))?["price"].int == 8000)

            let seats = try await client.call(
                .post,
                "/api/admin/resources/sunset-cruise/prices",
                auth: harness.adminKey,
                json: ["from": .string(d10), "to": .string(d10), "pricePerSeatMinor": 5000]
            )
            #expect(seats.status == .created, "\(seats.json)")
            let cruise = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "e",
                json: ["resourceId": "sunset-cruise", "slot": "\(d10)T17:30", "seats": 2]
            )
            #expect(cruise.booking?["price"].int == 10_000, "\(cruise.json)")

            for (resource, body, words) in [
                ("gozzo-5m", ["from": .string(d10), "to": .string(d10), "pricePerDayMinor": 60_000] as JSON, "price band"),
                ("gozzo-5m", ["from": .string(d12), "to": .string(d10), "pricePerDayMinor": 9000], "before"),
                ("gozzo-5m", ["from": .string(d10), "to": .string(d12), "weekdays": ["funday"], "pricePerDayMinor": 9000], "weekdays"),
                ("gozzo-5m", ["from": .string(d10), "to": .string(d12), "pricePerSeatMinor": 9000], "pricePerDayMinor"),
                ("gozzo-5m", ["from": "10/08/2026", "to": .string(d12), "pricePerDayMinor": 9000], "not a date"),
            ] {
                let refused = try await client.call(.post, "/api/admin/resources/\(resource)/prices", auth: harness.adminKey, json: body)
                let message = refused.json["error"]["message"].string ?? ""
                #expect(refused.status == .unprocessableContent && message.contains(words), "\(body): \(refused.json)")
            }
            let unknown = try await client.call(
                .post,
                "/api/admin/resources/ghost/prices",
                auth: harness.adminKey,
                json: ["from": .string(d10), "to": .string(d10), "pricePerDayMinor": 1]
            )
            #expect(unknown.status == .notFound && unknown.errorCode == "resource_not_found")
            let listed = try await client.call(.get, "/api/admin/resources", auth: harness.adminKey)
            let gozzo = (listed.json["resources"].array)?.first { $0["resource"]["id"].string == "gozzo-5m" }
            #expect((gozzo?["resource"]["prices"].array)?.count == 2, "refused rules are not kept")
        }
    }

    @Test(
        "moves: a customer moves a seat to the next day's slot (the old slot freed, booking.moved audited); into the past, into a closure, into a full slot and after changeUntilHoursBefore are refused with their codes; a paid booking's move to a dearer day waits for the difference, held and paid through the App Store, then moves with both payments; an operator moves any booking, another user's is not found"
    )
    func moves() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let (d5, d6, d7, d8) = (Self.date(5, harness), Self.date(6, harness), Self.date(7, harness), Self.date(8, harness))
            let made = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "sara",
                json: ["resourceId": "sunset-cruise", "slot": "\(d5)T17:30", "seats": 2]
            )
            let id = try #require(made.booking?["id"].int64, "\(made.json)")
            func move(_ body: JSON, user: String = "sara", booking: Int64? = nil) async throws -> Reply {
                try await client.call(.post, "/api/bookings/\(booking ?? id)/move", auth: harness.serverKey, user: user, json: body)
            }
            let moved = try await move(["slot": "\(d6)T17:30"])
            #expect(moved.status == .ok, "\(moved.json)")
            #expect((moved.booking?["localStart"].string)?.hasPrefix("\(d6)T17:30") == true, "\(moved.json)")
            #expect(moved.booking?["seats"].int == 2 && moved.booking?["status"].string == "pending_payment")
            // The old slot is free again: ten seats can be booked there.
            let full = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "team",
                json: ["resourceId": "sunset-cruise", "slot": "\(d5)T17:30", "seats": 10]
            )
            #expect(full.status == .created, "the old slot was given back: \(full.json)")

            let past = try await move(["slot": "\(Self.date(-1, harness))T17:30"])
            #expect(past.status == .badRequest && past.errorCode == "invalid_request", "\(past.json)")
            let notOffered = try await move(["slot": "\(d7)T09:00"])
            #expect(notOffered.errorCode == "slot_not_offered", "\(notOffered.json)")
            let tooFull = try await move(["slot": "\(d5)T17:30"])
            #expect(tooFull.status == .conflict && tooFull.errorCode == "slot_taken", "\(tooFull.json)")
            let closed = try await client.call(
                .post,
                "/api/admin/closures",
                auth: harness.adminKey,
                json: ["from": .string(d7), "to": .string(d7), "reason": "storm"]
            )
            #expect(closed.status == .created)
            let intoClosure = try await move(["slot": "\(d7)T17:30"])
            #expect(intoClosure.status == .conflict && intoClosure.errorCode == "resource_closed", "\(intoClosure.json)")
            let other = try await move(["slot": "\(d8)T17:30"], user: "mallory")
            #expect(other.status == .notFound && other.errorCode == "booking_not_found", "\(other.json)")
            let elsewhere = try await move(["slot": "\(d8)T17:30", "resourceId": "diving-intro"])
            #expect(elsewhere.status == .forbidden, "only operators change the resource: \(elsewhere.json)")

            // An operator moves it to day 8 (any booking, with the admin key).
            let byOperator = try await client.call(.post, "/api/admin/bookings/\(id)/move", auth: harness.adminKey, json: ["slot": "\(d8)T17:30"])
            #expect(byOperator.status == .ok && (byOperator.booking?["localStart"].string)?.hasPrefix(d8) == true, "\(byOperator.json)")
            let audit = try await client.call(.get, "/api/admin/audit?limit=50", auth: harness.adminKey)
            let moves = (audit.json["items"].array ?? []).filter { $0["action"].string == "booking.moved" }
            #expect(moves.count == 2, "\(audit.json)")

            // An operator moves a rental to another boat sold by the same product (not to one of another band).
            let sister = try await client.call(
                .post,
                "/api/admin/resources",
                auth: harness.adminKey,
                json: ["id": "gozzo-5m-b", "kind": "rental", "name": "Gozzo 5 m (second)", "pricePerDayMinor": 8000]
            )
            #expect(sister.status == .created, "\(sister.json)")
            let boat = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "olga",
                json: ["resourceId": "gozzo-5m", "start": .string(Self.date(9, harness)), "end": .string(Self.date(10, harness))]
            )
            let boatId = try #require(boat.booking?["id"].int64, "\(boat.json)")
            let toSister = try await client.call(
                .post,
                "/api/admin/bookings/\(boatId)/move",
                auth: harness.adminKey,
                json: ["resourceId": "gozzo-5m-b", "start": .string(Self.date(9, harness)), "end": .string(Self.date(10, harness))]
            )
            #expect(toSister.status == .ok && toSister.booking?["resourceId"].string == "gozzo-5m-b", "\(toSister.json)")
            let paidBoat = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "olga",
                json: [
                    "bookingId": .int(boatId), "productId": "it.seaboo.rental.basic",
                    "jwsRepresentation": try .string(harness.purchase("it.seaboo.rental.basic")),
                ]
            )
            #expect(paidBoat.status == .ok, "\(paidBoat.json)")
            let toRib = try await client.call(
                .post,
                "/api/admin/bookings/\(boatId)/move",
                auth: harness.adminKey,
                json: ["resourceId": "rib-7m", "start": .string(Self.date(9, harness)), "end": .string(Self.date(10, harness))]
            )
            #expect(toRib.status == .unprocessableContent && toRib.errorCode == "invalid_field", "another product's boat: \(toRib.json)")

            // Paid bookings: a dearer day waits for the difference; within 24 hours of the start the policy refuses.
            let rental = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "ivo",
                json: ["resourceId": "gozzo-5m", "start": .string(d5), "end": .string(d6)]
            )
            let rentalId = try #require(rental.booking?["id"].int64, "\(rental.json)")
            let paid = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "ivo",
                json: [
                    "bookingId": .int(rentalId), "productId": "it.seaboo.rental.basic",
                    "jwsRepresentation": try .string(harness.purchase("it.seaboo.rental.basic")),
                ]
            )
            #expect(paid.status == .ok, "\(paid.json)")
            let dearer = try await client.call(
                .post,
                "/api/admin/resources/gozzo-5m/prices",
                auth: harness.adminKey,
                json: ["from": .string(d8), "to": .string(d8), "pricePerDayMinor": 9000]
            )
            #expect(dearer.status == .created)
            // The dearer day waits for the difference: a booking of it holds the new day, paid like any booking.
            let costsMore = try await move(["start": .string(d8), "end": .string(Self.date(9, harness))], user: "ivo", booking: rentalId)
            #expect(costsMore.status == .accepted, "\(costsMore.json)")
            let difference = try #require(costsMore.json["difference"].object, "\(costsMore.json)")
            #expect(difference["price"].int == 1000 && difference["requiredProductId"].string == "it.seaboo.rental.basic", "\(difference)")
            #expect((costsMore.booking?["localStart"].string)?.hasPrefix(d5) == true, "the booking stays until the difference is paid")
            let differenceId = try #require(difference["id"].int64)
            let again = try await move(["start": .string(d8), "end": .string(Self.date(9, harness))], user: "ivo", booking: rentalId)
            #expect(again.json["difference"]["id"].int64 == differenceId, "a repeat answers the same hold")
            let rivals = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "rival",
                json: ["resourceId": "gozzo-5m", "start": .string(d8), "end": .string(Self.date(9, harness))]
            )
            #expect(rivals.status == .conflict, "the new day is held for ivo meanwhile: \(rivals.json)")
            let paidDifference = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "ivo",
                json: [
                    "bookingId": .int(differenceId), "productId": "it.seaboo.rental.basic",
                    "jwsRepresentation": try .string(harness.purchase("it.seaboo.rental.basic", transactionId: "2000000000058001")),
                ]
            )
            #expect(paidDifference.status == .ok, "\(paidDifference.json)")
            #expect(paidDifference.booking?["id"].int64 == rentalId, "the answer shows the booking that moved: \(paidDifference.json)")
            let movedRental = try await client.call(.get, "/api/bookings/\(rentalId)", auth: harness.serverKey, user: "ivo")
            #expect((movedRental.booking?["localStart"].string)?.hasPrefix(d8) == true, "\(movedRental.json)")
            #expect(movedRental.booking?["price"].int == 9000 && movedRental.booking?["status"].string == "confirmed", "\(movedRental.json)")
            #expect(try await client.call(.get, "/api/bookings/\(differenceId)", auth: harness.serverKey, user: "ivo").status == .notFound)
            let purchases = try await client.call(.get, "/api/admin/purchases?userId=ivo", auth: harness.adminKey)
            let owners = (purchases.json["items"].array ?? []).compactMap { $0["bookingId"].int64 }
            #expect(owners == [rentalId, rentalId], "both payments are the booking's now: \(purchases.json)")
            let freed = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "rival",
                json: ["resourceId": "gozzo-5m", "start": .string(d5), "end": .string(d6)]
            )
            #expect(freed.status == .created, "the old day is free: \(freed.json)")

            let cheaper = try await move(["start": .string(d6), "end": .string(d7)], user: "ivo", booking: rentalId)
            #expect(cheaper.status == .ok && cheaper.booking?["status"].string == "confirmed", "stays paid: \(cheaper.json)")
            #expect(cheaper.booking?["price"].int == 9000, "what was paid stays: \(cheaper.json)")
            // 12 hours before the rental's first day begins in Rome.
            let rentalStart = Harness.local(6, hour: 0, from: harness.clock.now())
            harness.clock.advance(rentalStart.timeIntervalSince(harness.clock.now()) - 12 * 3600)
            let late = try await move(["start": .string(d8), "end": .string(Self.date(9, harness))], user: "ivo", booking: rentalId)
            #expect(late.status == .conflict && late.errorCode == "change_not_allowed", "\(late.json)")
        }
    }

    @Test(
        "cancellation: the quote follows the tiers (100 % two days ahead, 50 % at 30 h); a card-paid cancel refunds the quoted part once through Stripe and the rest is not owed; an App Store-paid one is owed with words for the customer; an unpaid one costs nothing; a cancelled or started booking is refused"
    )
    func cancellation() async throws {
        try await CardPaymentTests.withCardRail { harness, standIn, client in
            let day = Self.date(4, harness), next = Self.date(5, harness)
            func book(_ user: String, _ body: JSON) async throws -> Int64 {
                let made = try await client.call(.post, "/api/bookings", auth: harness.serverKey, user: user, json: body)
                return try #require(made.booking?["id"].int64, "\(made.json)")
            }
            let byCard = try await book("carla", ["resourceId": "sunset-cruise", "slot": "\(day)T17:30", "seats": 1])
            let intent = try #require(
                try await CardPaymentTests.pay(client, harness, user: "carla", booking: byCard).json["paymentIntentId"].string
            )
            _ = try await standIn.succeed(intent)
            #expect(try await CardPaymentTests.booking(client, harness, user: "carla", byCard)["status"].string == "confirmed")
            let byApple = try await book("ivo", ["resourceId": "gozzo-5m", "start": .string(next), "end": .string(Self.date(6, harness))])
            let verified = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "ivo",
                json: [
                    "bookingId": .int(byApple), "productId": "it.seaboo.rental.basic",
                    "jwsRepresentation": try .string(harness.purchase("it.seaboo.rental.basic")),
                ]
            )
            #expect(verified.status == .ok, "\(verified.json)")
            let unpaid = try await book("ugo", ["resourceId": "sunset-cruise", "slot": "\(day)T17:30", "seats": 1])

            func quote(_ user: String, _ id: Int64) async throws -> JSON {
                try await client.call(.get, "/api/bookings/\(id)/cancellation", auth: harness.serverKey, user: user).json
            }
            let early = try await quote("carla", byCard)
            #expect(early["refundPercent"].int == 100 && early["refundMinor"].int == 4500 && early["rail"].string == "card", "\(early)")
            // 30 hours before the 17:30 slot in Rome.
            let slot = Harness.local(4, hour: 17, minute: 30, from: harness.clock.now())
            harness.clock.advance(slot.timeIntervalSince(harness.clock.now()) - 30 * 3600)
            let late = try await quote("carla", byCard)
            #expect(late["refundPercent"].int == 50 && late["refundMinor"].int == 2250 && late["allowed"].bool == true, "\(late)")
            #expect((late["message"].string)?.contains("card") == true, "\(late)")

            let cancelled = try await client.call(.post, "/api/bookings/\(byCard)/cancel", auth: harness.serverKey, user: "carla")
            #expect(cancelled.status == .ok, "\(cancelled.json)")
            #expect(cancelled.booking?["status"].string == "cancelled")
            #expect(cancelled.json["refund"]["amountMinor"].int == 2250, "\(cancelled.json)")
            #expect(standIn.refunds.map(\.amount) == [2250], "one partial refund at Stripe")
            let again = try await client.call(.post, "/api/bookings/\(byCard)/cancel", auth: harness.serverKey, user: "carla")
            #expect(again.status == .conflict && again.errorCode == "invalid_transition", "\(again.json)")
            #expect(standIn.refunds.count == 1)

            let appleQuote = try await quote("ivo", byApple)
            #expect(appleQuote["rail"].string == "app_store" && appleQuote["refundPercent"].int == 50, "\(appleQuote)")
            let appleCancelled = try await client.call(.post, "/api/bookings/\(byApple)/cancel", auth: harness.serverKey, user: "ivo")
            #expect(appleCancelled.status == .ok && appleCancelled.json["refund"] == nil, "\(appleCancelled.json)")
            let words = appleCancelled.json["cancellation"]["message"].string ?? ""
            #expect(words.contains("Apple"), "the app's words say who refunds: \(words)")

            let free = try await client.call(.post, "/api/bookings/\(unpaid)/cancel", auth: harness.serverKey, user: "ugo")
            #expect(free.status == .ok && free.json["cancellation"]["paidMinor"].int == 0, "\(free.json)")
            let stranger = try await client.call(.get, "/api/bookings/\(unpaid)/cancellation", auth: harness.serverKey, user: "mallory")
            #expect(stranger.status == .notFound)

            let owed = try await client.call(.get, "/api/admin/owed", auth: harness.adminKey)
            let owedIds = (owed.json["items"].array ?? []).compactMap { $0["bookingId"].int64 }
            #expect(owedIds.contains(byApple) && !owedIds.contains(byCard) && !owedIds.contains(unpaid), "\(owed.json)")
            // policy_kept is Berth's own record of a late cancel, not an operator's answer.
            let kept = try await client.call(.post, "/api/admin/owed/\(byApple)/resolve", auth: harness.adminKey, json: ["how": "policy_kept"])
            #expect(kept.status == .badRequest && kept.errorCode == "invalid_field", "\(kept.json)")

            // Once the trip begins, the customer asks the operator.
            let started = try await book("zeno", ["resourceId": "sunset-cruise", "slot": "\(next)T17:30", "seats": 1])
            let zenoIntent = try #require(
                try await CardPaymentTests.pay(client, harness, user: "zeno", booking: started).json["paymentIntentId"].string
            )
            _ = try await standIn.succeed(zenoIntent)
            let zenoSlot = Harness.local(5, hour: 17, minute: 30, from: harness.clock.now())
            harness.clock.advance(zenoSlot.timeIntervalSince(harness.clock.now()) + 600)
            let tooLate = try await client.call(.post, "/api/bookings/\(started)/cancel", auth: harness.serverKey, user: "zeno")
            #expect(tooLate.status == .conflict && tooLate.errorCode == "booking_started", "\(tooLate.json)")
            #expect(standIn.refunds.count == 1, "nothing refunded")
        }
    }

    @Test(
        "a card-paid trip moved to a dearer day: the difference paid by card moves it with both payments; cancelled two days ahead, both are refunded in full; one closed by a storm refunds both too"
    )
    func dearerMoveByCard() async throws {
        try await CardPaymentTests.withCardRail { harness, standIn, client in
            let (d10, d11, d12) = (Self.date(10, harness), Self.date(11, harness), Self.date(12, harness))
            let august = try await client.call(
                .post,
                "/api/admin/resources/sunset-cruise/prices",
                auth: harness.adminKey,
                json: ["from": .string(d11), "to": .string(d12), "pricePerSeatMinor": 5000]
            )
            #expect(august.status == .created)
            /// A seat on `day` paid by card, moved to `to` with its difference paid by card: the booking's id.
            func paidAndMoved(_ user: String, on day: String, to: String) async throws -> Int64 {
                let made = try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: user,
                    json: ["resourceId": "sunset-cruise", "slot": "\(day)T17:30", "seats": 1]
                )
                let id = try #require(made.booking?["id"].int64, "\(made.json)")
                _ = try await standIn.succeed(
                    try #require(try await CardPaymentTests.pay(client, harness, user: user, booking: id).json["paymentIntentId"].string)
                )
                let moved = try await client.call(
                    .post,
                    "/api/bookings/\(id)/move",
                    auth: harness.serverKey,
                    user: user,
                    json: ["slot": "\(to)T17:30"]
                )
                #expect(moved.status == .accepted, "\(moved.json)")
                let difference = try #require(moved.json["difference"]["id"].int64, "\(moved.json)")
                let intent = try await CardPaymentTests.pay(client, harness, user: user, booking: difference).json
                #expect(intent["amount"].int == 500, "the card pays the difference only: \(intent)")
                _ = try await standIn.succeed(try #require(intent["paymentIntentId"].string))
                let after = try await CardPaymentTests.booking(client, harness, user: user, id)
                #expect((after["localStart"].string)?.hasPrefix("\(to)T17:30") == true && after["price"].int == 5000, "\(after)")
                return id
            }
            let early = try await paidAndMoved("eva", on: d10, to: d11)
            let cancelled = try await client.call(.post, "/api/bookings/\(early)/cancel", auth: harness.serverKey, user: "eva")
            #expect(cancelled.status == .ok && cancelled.json["refund"]["amountMinor"].int == 5000, "\(cancelled.json)")
            #expect(standIn.refunds.map(\.amount).sorted() == [500, 4500], "each payment refunded once")

            let stormed = try await paidAndMoved("teo", on: d10, to: d12)
            let closed = try await client.call(
                .post,
                "/api/admin/closures",
                auth: harness.adminKey,
                json: ["from": .string(d12), "to": .string(d12), "reason": "storm"]
            )
            let closure = try #require(closed.json["id"].int)
            let resolved = try await client.call(.post, "/api/admin/closures/\(closure)/resolve", auth: harness.adminKey, json: ["action": "cancel"])
            #expect((resolved.json["results"].array)?.map { $0["outcome"].string } == ["refunded"], "\(resolved.json)")
            #expect(standIn.refunds.map(\.amount).sorted() == [500, 500, 4500, 4500], "both of teo's payments refunded")
            let owed = try await client.call(.get, "/api/admin/owed", auth: harness.adminKey)
            let owedIds = (owed.json["items"].array ?? []).compactMap { $0["bookingId"].int64 }
            #expect(!owedIds.contains(early) && !owedIds.contains(stormed), "nothing left owed: \(owed.json)")
        }
    }

    @Test(
        "with refundPriceDifference, a customer's move of a card-paid trip to a cheaper day refunds the difference once and the booking takes the new price; without it the booking keeps what was paid"
    )
    func cheaperMoveRefundsByPolicy() async throws {
        try await CardPaymentTests.withCardRail(customize: { catalog in
            if let index = catalog.tenants.firstIndex(where: { $0.id == "seaboo-test" }) {
                catalog.tenants[index].cancellation?.refundPriceDifference = true
            }
        }) { harness, standIn, client in
            let (d10, d11) = (Self.date(10, harness), Self.date(11, harness))
            let low = try await client.call(
                .post,
                "/api/admin/resources/sunset-cruise/prices",
                auth: harness.adminKey,
                json: ["from": .string(d11), "to": .string(d11), "pricePerSeatMinor": 4000]
            )
            #expect(low.status == .created)
            let made = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "pia",
                json: ["resourceId": "sunset-cruise", "slot": "\(d10)T17:30", "seats": 2]
            )
            let id = try #require(made.booking?["id"].int64, "\(made.json)")
            _ = try await standIn.succeed(
                try #require(try await CardPaymentTests.pay(client, harness, user: "pia", booking: id).json["paymentIntentId"].string)
            )
            let moved = try await client.call(.post, "/api/bookings/\(id)/move", auth: harness.serverKey, user: "pia", json: ["slot": "\(d11)T17:30"])
            #expect(moved.status == .ok && moved.booking?["price"].int == 8000, "\(moved.json)")
            #expect(standIn.refunds.map(\.amount) == [1000], "2 seats × 5.00 back, once")
            let again = try await client.call(.post, "/api/bookings/\(id)/move", auth: harness.serverKey, user: "pia", json: ["slot": "\(d11)T17:30"])
            #expect(again.status == .ok && standIn.refunds.count == 1, "a repeat refunds nothing")
            let owed = try await client.call(.get, "/api/admin/owed", auth: harness.adminKey)
            #expect((owed.json["items"].array ?? []).isEmpty, "nothing owed: \(owed.json)")
        }
    }

    @Test(
        "the tenant's backend is told: booking.moved with the new and previous times, booking.cancelled with reason customer (a customer's cancel) and closure (a closure resolved by cancel)"
    )
    func webhooksOfTheSeason() async throws {
        // The receiver is never reached here: the events are read from the outbox.
        let harness = try await Harness.make(webhookURL: "http://127.0.0.1:9/hooks")
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let (d5, d6, d7) = (Self.date(5, harness), Self.date(6, harness), Self.date(7, harness))
            func book(_ user: String, _ day: String) async throws -> Int64 {
                let made = try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: user,
                    json: ["resourceId": "sunset-cruise", "slot": "\(day)T17:30", "seats": 1]
                )
                return try #require(made.booking?["id"].int64, "\(made.json)")
            }
            let moving = try await book("mia", d5), leaving = try await book("leo", d5), stormed = try await book("ugo", d7)
            #expect(
                try await client.call(.post, "/api/bookings/\(moving)/move", auth: harness.serverKey, user: "mia", json: ["slot": "\(d6)T17:30"])
                    .status == .ok
            )
            #expect(try await client.call(.post, "/api/bookings/\(leaving)/cancel", auth: harness.serverKey, user: "leo").status == .ok)
            let closed = try await client.call(
                .post,
                "/api/admin/closures",
                auth: harness.adminKey,
                json: ["from": .string(d7), "to": .string(d7), "reason": "storm"]
            )
            let id = try #require(closed.json["id"].int)
            #expect(
                try await client.call(.post, "/api/admin/closures/\(id)/resolve", auth: harness.adminKey, json: ["action": "cancel"]).status == .ok
            )

            var events: [String: JSON] = [:]
            for row in try await harness.rows("SELECT event_type, payload FROM webhook_outbox ORDER BY sequence") {
                guard let type = row["event_type"] ?? nil, let payload = row["payload"] ?? nil,
                    let body = try JSON.parse(Data(payload.utf8)).object,
                    let data = body["data"].object, let booking = data["bookingId"].string
                else { continue }
                events["\(type) \(booking)"] = data
            }
            let moved = try #require(events["booking.moved \(moving)"], "\(events.keys.sorted())")
            #expect(
                (moved["localStart"].string)?.hasPrefix("\(d6)T17:30") == true
                    && (moved["previousLocalStart"].string)?.hasPrefix("\(d5)T17:30") == true,
                "\(moved)"
            )
            #expect(moved["previousResourceId"].string == "sunset-cruise")
            #expect(events["booking.cancelled \(leaving)"]?["reason"].string == "customer", "\(events.keys.sorted())")
            #expect(events["booking.cancelled \(stormed)"]?["reason"].string == "closure", "\(events.keys.sorted())")
        }
    }

    @Test(
        "a closure resolved by move: each named booking goes to the place its customer accepted; one that is not inside is refused, one whose new place is full fails alone"
    )
    func closureResolvedByMove() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let (d6, d7) = (Self.date(6, harness), Self.date(7, harness))
            func book(_ user: String, _ slot: String, seats: Int = 1) async throws -> Int64 {
                let made = try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: user,
                    json: ["resourceId": "sunset-cruise", "slot": .string(slot), "seats": .int(seats)]
                )
                return try #require(made.booking?["id"].int64, "\(made.json)")
            }
            let ada = try await book("ada", "\(d6)T17:30", seats: 2)
            let ben = try await book("ben", "\(d6)T17:30", seats: 2)
            _ = try await book("crowd", "\(d7)T17:30", seats: 7)
            let outside = try await book("cai", "\(d7)T17:30")
            let closed = try await client.call(
                .post,
                "/api/admin/closures",
                auth: harness.adminKey,
                json: ["resourceId": "sunset-cruise", "from": .string(d6), "to": .string(d6), "reason": "storm"]
            )
            let id = try #require(closed.json["id"].int, "\(closed.json)")
            let notInside = try await client.call(
                .post,
                "/api/admin/closures/\(id)/resolve",
                auth: harness.adminKey,
                json: ["action": "move", "moves": [["bookingId": .int(outside), "slot": "\(d7)T17:30"]]]
            )
            #expect(notInside.status == .badRequest, "\(notInside.json)")
            let resolved = try await client.call(
                .post,
                "/api/admin/closures/\(id)/resolve",
                auth: harness.adminKey,
                json: [
                    "action": "move", "moves": [["bookingId": .int(ada), "slot": "\(d7)T17:30"], ["bookingId": .int(ben), "slot": "\(d7)T17:30"]],
                ]
            )
            #expect(resolved.status == .ok, "\(resolved.json)")
            let outcomes = (resolved.json["results"].array ?? []).map { $0["outcome"].string }
            #expect(outcomes == ["moved", "failed"], "ada takes the last two seats, ben's move fails alone: \(resolved.json)")
            let message = (resolved.json["results"].array)?.last?["message"].string ?? ""
            #expect(message.hasPrefix("slot_taken"), "\(message)")
            let empty = try await client.call(.post, "/api/admin/closures/\(id)/resolve", auth: harness.adminKey, json: ["action": "move"])
            #expect(empty.status == .badRequest && empty.errorCode == "missing_field", "\(empty.json)")
        }
    }
}

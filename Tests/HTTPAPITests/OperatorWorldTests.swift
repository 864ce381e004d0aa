import AppleSignedData
import AppleStandIn
import BerthApp
import BerthWorkers
import Crypto
import Domain
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import Synchronization
import TestKit
import Testing

/// Bookings in the operator's world, through HTTP: local times in requests, answers, webhooks and
/// CSV; references wherever a booking id is; search (with Apple's Look Up Order ID on the stand-in),
/// a customer's timeline and the overview.
@Suite("Operators: local time, references, search, timeline, overview")
struct OperatorWorldTests {
    static func rome(_ catalog: inout Catalog) {
        if let index = catalog.tenants.firstIndex(where: { $0.id == "seaboo-test" }) { catalog.tenants[index].timeZone = "Europe/Rome" }
    }

    static func webhookBody(_ message: WebhookReceiver.Received) -> JSON {
        (try? JSON.parse(message.body)) ?? .null
    }

    @Test(
        "Europe/Rome: the 17:30 sunset cruise named as a local slot is 15:30Z in July and 16:30Z in January; answers, the bookings CSV and webhooks carry both the instant and the local time; a reference works wherever an id does"
    )
    func localTimesEverywhere() async throws {
        let receiver = WebhookReceiver()
        try await Application(router: receiver.router()).test(.live) { hooks in
            let harness = try await Harness.make(webhookURL: "http://127.0.0.1:\(hooks.port!)/hooks", customize: Self.rome)
            defer { harness.close() }
            try await harness.app().test(.router) { client in
                let year = Calendar(identifier: .gregorian).component(.year, from: harness.clock.now()) + 1
                let july = try await createBooking(
                    client,
                    harness,
                    user: "rosa",
                    body: ["resourceId": "sunset-cruise", "slot": "\(year)-07-14T17:30", "seats": 1]
                )
                let january = try await createBooking(
                    client,
                    harness,
                    user: "rosa",
                    body: ["resourceId": "sunset-cruise", "slot": "\(year)-01-14T17:30", "seats": 1]
                )
                #expect((july["start"].string)?.hasPrefix("\(year)-07-14T15:30:00") == true)
                #expect((january["start"].string)?.hasPrefix("\(year)-01-14T16:30:00") == true)
                #expect(july["localStart"].string == "\(year)-07-14T17:30:00+02:00" && july["timeZone"].string == "Europe/Rome")
                #expect(january["localStart"].string == "\(year)-01-14T17:30:00+01:00")
                // An instant that is not 17:30 in Rome is refused (daylight-saving days: RulesTests).
                let skipped = try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: "rosa",
                    json: ["resourceId": "sunset-cruise", "slot": "\(year)-03-28T17:30:00+05:00", "seats": 1]
                )
                #expect(skipped.status == .badRequest && skipped.errorCode == "slot_not_offered")
                let malformed = try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: "rosa",
                    json: ["resourceId": "sunset-cruise", "slot": "\(year)-07-14 17:30", "seats": 1]
                )
                #expect(malformed.status == .badRequest, "a local time is written YYYY-MM-DDTHH:MM")

                // References: any case, dashes; the user route and the admin routes take them.
                let reference = try #require(july["reference"].string)
                let spelled = reference.lowercased().prefix(3) + "-" + reference.lowercased().dropFirst(3)
                let shown = try await client.call(.get, "/api/bookings/\(spelled)", auth: harness.serverKey, user: "rosa")
                #expect(shown.status == .ok && shown.booking?["id"].int == july["id"].int)
                #expect(
                    try await client.call(.get, "/api/bookings/\(reference)", auth: harness.serverKey, user: "bob").status == .notFound,
                    "another user's reference is not theirs"
                )
                #expect(try await client.call(.get, "/api/bookings/ABCDEF0", auth: harness.serverKey, user: "rosa").status == .notFound)
                let confirmed = try await client.call(
                    .post,
                    "/api/admin/bookings/\(reference)/confirm",
                    auth: harness.adminKey,
                    json: ["reason": "paid at the harbour"]
                )
                #expect(confirmed.status == .ok && confirmed.booking?["status"].string == "confirmed")
                #expect(
                    try await client.call(.post, "/api/admin/bookings/\(reference)/confirm", auth: harness.otherAdminKey, json: ["reason": "x"])
                        .status == .notFound,
                    "a reference names a booking within its tenant only"
                )
                let trail = try await client.call(.get, "/api/admin/audit?bookingId=\(reference.lowercased())", auth: harness.adminKey)
                #expect(
                    (trail.json["items"].array)?.contains { $0["action"].string == "booking.manual_confirm" } == true,
                    "\(trail.json)"
                )
                #expect(try await client.call(.get, "/api/admin/audit?bookingId=ABCDEFG", auth: harness.adminKey).status == .notFound)
                #expect(
                    try await client.call(.get, "/api/admin/audit?bookingId=\(reference.prefix(3))+\(reference.dropFirst(3))", auth: harness.adminKey)
                        .status == .ok,
                    "a space written as + in a query string"
                )

                // The CSV: the instant and the local time of each booking.
                let csv = try await client.call(.get, "/api/admin/bookings?format=csv&userId=rosa", auth: harness.adminKey)
                let text = String(decoding: csv.data, as: UTF8.self)
                let lines = text.split(separator: "\r\n")
                #expect(
                    lines.first?.hasPrefix("id,reference,createdAt,userId,resourceId,status,statusReason,start,end,localStart,localEnd,timeZone")
                        == true
                )
                #expect(lines.count == 3)
                #expect(
                    text.contains(
                        "\(year)-07-14T15:30:00.000Z,\(year)-07-14T17:30:00.000Z,\(year)-07-14T17:30:00+02:00,\(year)-07-14T19:30:00+02:00,Europe/Rome"
                    )
                )
                #expect(text.contains(reference) && text.contains("paid at the harbour"))
            }
            // The operator's confirmation told the tenant's backend, with the local time.
            // As the deliverer retries: an attempt that a loaded machine let time out is made again later.
            let webhooks = WebhookHTTPClient()
            let deliverer = webhookDeliverer(services: harness.services, client: webhooks)
            for _ in 0..<5 where !receiver.received.contains(where: { $0.event == "booking.confirmed" }) {
                _ = try await deliverer.deliverDue()
                harness.clock.advance(3600)
            }
            try await webhooks.shutdown()
            let confirmed = receiver.received.first { $0.event == "booking.confirmed" }
            let data = try #require(confirmed.map(Self.webhookBody)?["data"].object)
            #expect(
                data["localStart"].string?.hasSuffix("T17:30:00+02:00") == true && data["timeZone"] == "Europe/Rome"
                    && data["reference"].string?.count == 7
            )
            #expect(data["start"].string?.hasSuffix("T15:30:00Z") == true)
        }
    }

    @Test(
        "search: a reference, a transaction id, a user; an Apple order ID resolved by Apple's Look Up Order ID (the stand-in) to the purchase Berth recorded; other tenants' data is never found"
    )
    func searchWithAppleOrders() async throws {
        let apiKey = P256.Signing.PrivateKey()
        let standIn = AppleStandIn(apiKey: apiKey.publicKey, issuerId: "issuer-1", bundleId: "it.seaboo.app")
        try await Application(router: standIn.router()).test(.live) { apple in
            let harness = try await Harness.make(appleStandIn: (try #require(apple.port), apiKey.pemRepresentation))
            defer { harness.close() }
            try await harness.app().test(.router) { client in
                let start = Harness.day(3, from: harness.clock.now())
                let booking = try await createBooking(
                    client,
                    harness,
                    user: "alice",
                    body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(8 * 3600)))]
                )
                let jws = try harness.purchase("it.seaboo.rental.basic", transactionId: "2000000000007001")
                let paid = try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: harness.serverKey,
                    user: "alice",
                    json: ["bookingId": booking["id"], "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
                )
                #expect(paid.status == .ok)
                standIn.state.withLock { $0.orders["sandbox"]?["MK5TTTVWJH"] = [jws] }

                func search(_ text: String, key: String? = nil) async throws -> Reply {
                    try await client.call(
                        .get,
                        "/api/admin/search?q=\(text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text)",
                        auth: key ?? harness.adminKey
                    )
                }
                let order = try await search("MK5TTTVWJH")
                let items = try #require(order.json["items"].array)
                #expect(order.json["appleOrderLookup"].string == "found")
                #expect(items.map { $0["matched"].string } == ["appleOrderId"] && items.first?["bookingId"].int == booking["id"].int)
                #expect(standIn.requests.contains { $0.path.hasSuffix("/inApps/v1/lookup/MK5TTTVWJH") })
                let unknown = try await search("ZZ9ZZZ9ZZZ")
                #expect(unknown.json["appleOrderLookup"].string == "not_found" && (unknown.json["items"].array)?.isEmpty == true)
                let byTransaction = try #require(try await search("2000000000007001").json["items"].array)
                #expect(byTransaction.map { $0["matched"].string } == ["transactionId"])
                let reference = try #require(booking["reference"].string)
                let byReference = try #require(try await search(reference).json["items"].array)
                #expect(byReference.map { $0["kind"].string } == ["booking"])
                #expect(
                    byReference.first?["amount"].string == "80.00 EUR"
                        && (byReference.first?["at"].string)?.hasPrefix(String(iso(start).dropLast())) == true,
                    "a hit's date and amount"
                )
                #expect(byTransaction.first?["amount"].string == nil || byTransaction.first?["at"].isNull == false)
                let user = try #require(try await search("alice").json["items"].array)
                #expect(user.map { $0["kind"].string } == ["user"])
                let elsewhere = try await search("2000000000007001", key: harness.otherAdminKey)
                #expect((elsewhere.json["items"].array)?.isEmpty == true, "another tenant's admin finds nothing")
                #expect(try await client.call(.get, "/api/admin/search", auth: harness.adminKey).status == .badRequest)
                #expect(try await client.call(.get, "/api/admin/search?q=x", auth: harness.serverKey).status == .forbidden, "operators only")
            }
        }
    }

    @Test("the operators' bookings list is in trip order: what has not sailed yet first, soonest first, then past trips, latest first")
    func bookingsInTripOrder() async throws {
        let harness = try await Harness.make(customize: Self.rome)
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            func book(_ day: Int) async throws -> String {
                let start = Harness.day(day, from: harness.clock.now())
                let made = try await createBooking(
                    client,
                    harness,
                    user: "ugo",
                    body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
                )
                harness.clock.advance(1)
                return try #require(made["reference"].string)
            }
            let past = try await book(1)
            let older = try await book(2)
            harness.clock.advance(4 * 86_400)  // both have sailed
            let soon = try await book(1)
            let later = try await book(5)
            let listed = try await client.call(.get, "/api/admin/bookings", auth: harness.adminKey)
            let order = (listed.json["items"].array ?? []).compactMap { $0["reference"].string }
            #expect(order == [soon, later, older, past], "\(order)")
            let made = try await client.call(.get, "/api/admin/bookings?order=created", auth: harness.adminKey)
            #expect((made.json["items"].array ?? []).compactMap { $0["reference"].string } == [later, soon, older, past])
            #expect(try await client.call(.get, "/api/admin/bookings?order=price", auth: harness.adminKey).status == .badRequest)
        }
    }

    @Test(
        "a customer's timeline and the overview: a booking paid, cancelled by an operator with a reason; the money, the day's bookings and what needs action"
    )
    func timelineAndOverview() async throws {
        let harness = try await Harness.make(customize: Self.rome)
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(1, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "alice",
                body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(8 * 3600)))]
            )
            let jws = try harness.ca.signTransaction(
                .testPurchase(
                    bundleId: "it.seaboo.app",
                    productId: "it.seaboo.rental.basic",
                    transactionId: "2000000000007101",
                    price: 80_000,
                    currency: "EUR",
                    purchaseDate: harness.clock.now()
                )
            )
            #expect(
                try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: harness.serverKey,
                    user: "alice",
                    json: ["bookingId": booking["id"], "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
                ).status == .ok
            )
            harness.clock.advance(60)
            let id = try #require(booking["id"].int)
            #expect(
                try await client.call(.post, "/api/admin/bookings/\(id)/cancel", auth: harness.adminKey, json: ["reason": "storm warning"]).status
                    == .ok
            )

            let timeline = try await client.call(.get, "/api/admin/customers/alice/timeline", auth: harness.adminKey)
            let entries = try #require(timeline.json["items"].array)
            let kinds = entries.compactMap { $0["kind"].string }
            #expect(kinds.first == "booking_change", "newest first: the cancellation")
            #expect(Set(kinds).isSuperset(of: ["purchase", "booking", "booking_change"]))
            #expect((entries.first?["summary"].string)?.contains("storm warning") == true)
            // Plain words, written in Domain from the stored facts: amounts, local trip times, who did it; no internal codes.
            let summaries = entries.compactMap { $0["summary"].string }
            #expect(entries.first?["summary"].string == "Booking cancelled · by an operator · “storm warning”", "\(summaries)")
            #expect(
                summaries.contains { $0.hasPrefix("Bought ") && $0.contains(" for 80.00 EUR through the App Store (test)") },
                "\(summaries)"
            )
            var rome = Calendar(identifier: .gregorian)
            rome.timeZone = try #require(TimeZone(identifier: "Europe/Rome"))
            let parts = rome.dateComponents([.day, .month, .year, .hour], from: start)
            let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
            let localDay = "\(parts.day ?? 0) \(months[(parts.month ?? 1) - 1]) \(parts.year ?? 0), \(String(format: "%02d", parts.hour ?? 0)):00–"
            #expect(
                summaries.contains { $0.hasPrefix("Booked ") && $0.contains(" for \(localDay)") },
                "the trip in Rome's time: \(localDay) \(summaries)"
            )
            #expect(
                !summaries.contains {
                    $0.contains("notification.") || $0.contains("admin:") || $0.contains("pending_payment") || $0.contains("by apple")
                },
                "\(summaries)"
            )
            // The header: over the whole history.
            let customer = try #require(timeline.json["customer"].object)
            #expect((customer["paid"].array)?.first?["amountMilliunits"].int == 80_000, "\(customer)")
            #expect(customer["bookings"].int == 1 && customer["purchases"].int == 1 && customer["stores"].strings == ["app_store"])
            #expect((customer["refunded"].array)?.isEmpty == true && customer["firstSeen"].string != nil)
            #expect(try await client.call(.get, "/api/admin/customers/alice/timeline?limit=0", auth: harness.adminKey).status == .badRequest)
            let nobody = try await client.call(.get, "/api/admin/customers/nobody/timeline", auth: harness.adminKey)
            #expect(nobody.status == .ok && (nobody.json["items"].array)?.isEmpty == true)

            let overview = try await client.call(.get, "/api/admin/overview?interval=day", auth: harness.adminKey)
            #expect(overview.status == .ok && overview.json["timeZone"].string == "Europe/Rome")
            let buckets = try #require(overview.json["buckets"].array)
            #expect(buckets.count >= 30 && buckets.count <= 31)
            let money = try #require(overview.json["moneyIn"].array)
            #expect(money.first?["currency"].string == "EUR" && money.first?["amountMilliunits"].int == 80_000, "\(money)")
            let today = try #require(buckets.last?["moneyIn"].array)
            #expect(
                today.first?["store"].string == "app_store" && today.first?["count"].int == 1,
                "the day's money by store: \(buckets.last ?? [:])"
            )
            let needs = try #require(overview.json["needsAction"].members).compactMapValues(\.int)
            #expect(
                Set(needs.keys) == [
                    "unappliedPayments", "deadLetters", "webhookBacklog", "overduePlayAcknowledgements", "bookingsNeedingRefund",
                    "purchasesNeedingRefund", "owedToCustomers",
                ]
            )
            // The €80 paid through the App Store for a booking cancelled in a storm is owed to alice.
            #expect(needs["owedToCustomers"] == 1 && needs.filter { $0.key != "owedToCustomers" }.values.allSatisfy { $0 == 0 }, "\(needs)")
            let week = try #require(overview.json["bookingsNext7Days"].array)
            #expect(week.contains { $0["resourceId"].string == "gozzo-5m" })
            #expect(try await client.call(.get, "/api/admin/overview?interval=hour", auth: harness.adminKey).status == .badRequest)
            let long = try await client.call(
                .get,
                "/api/admin/overview?from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&interval=day",
                auth: harness.adminKey
            )
            #expect(
                long.status == .ok && (long.json["buckets"].array)?.count ?? 0 <= 401
                    && (long.json["from"].string)?.hasPrefix("2024-11-") == true,
                "a period longer than 400 days starts 400 days before its end: \(long.json["from"])"
            )
            let empty = try await client.call(.get, "/api/admin/overview?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", auth: harness.adminKey)
            #expect(empty.status == .ok && (empty.json["buckets"].array)?.isEmpty == true, "from after to is an empty period")
        }
    }
}

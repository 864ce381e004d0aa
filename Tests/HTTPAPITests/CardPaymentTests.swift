import AsyncHTTPClient
import BerthApp
import Domain
import Foundation
import GRDB
import HTTPAPI
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOHTTP1
import StripeAPI
import StripeStandIn
import Synchronization
import Testing
import UseCases

/// The card rail end to end, over real HTTP on loopback: Berth with the shipped `seaboo-test` tenant
/// pointed at the Stripe stand-in, which sends its signed webhooks back to Berth.
@Suite("Card payments")
struct CardPaymentTests {
    static let secret = "whsec_test_seaboo_card_rail_0123456789"

    /// Berth (background jobs off: the tests run them) and the stand-in, each on its own port.
    static func withCardRail(
        customize: (@Sendable (inout Catalog) -> Void)? = nil,
        _ body: @Sendable (Harness, StripeStandIn, any TestClientProtocol) async throws -> Void
    ) async throws {
        let clock = TestClock()
        let standIn = StripeStandIn(webhookSecrets: [secret], now: { clock.now() })
        try await Application(router: standIn.router()).test(.live) { stripe in
            let harness = try await Harness.make(
                customize: customize,
                environment: [
                    "SEABOO_TEST_STRIPE_SECRET_KEY": "sk_test_berth_standin", "SEABOO_TEST_STRIPE_WEBHOOK_SECRET": secret,
                    "SEABOO_TEST_STRIPE_API_BASE": "http://127.0.0.1:\(try #require(stripe.port))",
                ],
                clock: clock
            )
            defer { harness.close() }
            var services = harness.services
            services.cardPaymentJobsInterval = nil
            try await buildApplication(services: services, server: ServerConfiguration(host: "127.0.0.1", port: 0)).test(.live) { client in
                let port = try #require(client.port)
                standIn.state.withLock { $0.webhookURL = "http://127.0.0.1:\(port)/api/stripe/webhooks/seaboo-test" }
                try await body(harness, standIn, client)
            }
        }
    }

    static func rental(_ client: any TestClientProtocol, _ harness: Harness, user: String, day: Int) async throws -> JSON {
        let start = Harness.day(day, from: harness.clock.now())
        return try await createBooking(
            client,
            harness,
            user: user,
            body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(10 * 3600)))]
        )
    }

    static func pay(_ client: any TestClientProtocol, _ harness: Harness, user: String, booking id: Int64) async throws -> Reply {
        try await client.call(.post, "/api/bookings/\(id)/card-payment", auth: harness.serverKey, user: user)
    }

    static func booking(_ client: any TestClientProtocol, _ harness: Harness, user: String, _ id: Int64) async throws -> JSON {
        try #require(try await client.call(.get, "/api/bookings/\(id)", auth: harness.serverKey, user: user).booking)
    }

    @Test(
        "a rental paid by card: one PaymentIntent for its price, the hold extended once; confirmed exactly once though the webhook comes twice and out of order"
    )
    func rentalPaidByCard() async throws {
        try await Self.withCardRail { harness, standIn, client in
            let booking = try await Self.rental(client, harness, user: "marco", day: 3)
            let id = try #require(booking["id"].int64)
            let started = try await Self.pay(client, harness, user: "marco", booking: id)
            #expect(started.status == .created, "\(started.json)")
            let intentId = try #require(started.json["paymentIntentId"].string)
            #expect(
                started.json["provider"].string == "stripe" && started.json["amount"].int == 8000
                    && started.json["currency"].string == "EUR"
            )
            #expect(started.json["publishableKey"].string == "pk_test_seaboo_standin")
            #expect((started.json["clientSecret"].string)?.hasPrefix(intentId + "_secret_") == true)
            // The hold now covers 3-D Secure: 20 minutes from now instead of the booking's 15.
            let hold = try #require(APITimeText.parse(started.json["holdExpiresAt"].string))
            #expect(abs(hold.timeIntervalSince(harness.clock.now()) - 20 * 60) < 2)
            // Stripe holds exactly the booking's price, with the booking in its metadata.
            let intent = try #require(standIn.intent(intentId))
            #expect(intent.amount == 8000 && intent.currency == "eur" && intent.metadata?["berth_booking_id"] == String(id))
            // Asking again returns the same open PaymentIntent.
            let again = try await Self.pay(client, harness, user: "marco", booking: id)
            #expect(again.status == .ok && again.json["paymentIntentId"].string == intentId)
            #expect(standIn.requests.filter { $0.method == "POST" && $0.path == "/v1/payment_intents" }.count == 1)
            #expect(
                try await Self.booking(client, harness, user: "marco", id)["payment"].object?["status"].string
                    == "requires_payment"
            )

            // Paid: the success twice, then an older declined attempt (twice) after it.
            let deliveries = try await standIn.succeed(intentId, sending: .init(duplicate: true, outOfOrder: true))
            #expect(deliveries.map(\.status) == [200, 200, 200, 200], "\(deliveries)")
            #expect(
                deliveries.map(\.type) == [
                    "payment_intent.succeeded", "payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.payment_failed",
                ]
            )
            #expect(deliveries[0].note?.contains("\"outcome\":\"booking_confirmed\"") == true, "\(deliveries[0])")
            #expect(deliveries[1].note?.contains("\"duplicate\":true") == true)
            #expect(deliveries[2].note?.contains("ignored_after_succeeded") == true, "\(deliveries[2])")
            let paid = try await Self.booking(client, harness, user: "marco", id)
            #expect(paid["status"].string == "confirmed")
            #expect(paid["payment"]["status"].string == "succeeded")
            let purchases = try await harness.rows("SELECT store, environment, transaction_id, status, product_id FROM purchases")
            #expect(purchases.count == 1)
            #expect(
                purchases.first?["store"] == "stripe" && purchases.first?["transaction_id"] == intentId && purchases.first?["status"] == "applied"
            )
            #expect(try await harness.count("payment_events") == 2)
            // A paid booking takes no second payment.
            let paidAgain = try await Self.pay(client, harness, user: "marco", booking: id)
            #expect(paidAgain.status == .conflict && paidAgain.errorCode == "booking_not_payable")
            // Someone else's booking is not found.
            #expect(try await Self.pay(client, harness, user: "giulia", booking: id).status == .notFound)
        }
    }

    @Test("a 2-seat experience paid by card: the PaymentIntent is the two seats' price and confirms both seats")
    func experiencePaidByCard() async throws {
        try await Self.withCardRail { harness, standIn, client in
            let slot = Harness.local(4, hour: 17, minute: 30, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "anna",
                body: ["resourceId": "sunset-cruise", "slot": .string(iso(slot)), "seats": 2]
            )
            let id = try #require(booking["id"].int64)
            let started = try await Self.pay(client, harness, user: "anna", booking: id)
            #expect(started.status == .created && started.json["amount"].int == 9000, "\(started.json)")
            let intentId = try #require(started.json["paymentIntentId"].string)
            let deliveries = try await standIn.succeed(intentId, sending: .init(duplicate: true))
            #expect(deliveries.map(\.status) == [200, 200])
            let paid = try await Self.booking(client, harness, user: "anna", id)
            #expect(paid["status"].string == "confirmed" && paid["paidQuantity"].int == 2 && paid["seats"].int == 2, "\(paid)")
            #expect(try await harness.count("purchases") == 1)
        }
    }

    @Test("a tampered, stale, unsigned or foreign-secret event is refused with 400 and writes nothing")
    func signaturesRefused() async throws {
        try await Self.withCardRail { harness, standIn, client in
            let booking = try await Self.rental(client, harness, user: "marco", day: 5)
            let id = try #require(booking["id"].int64)
            let intentId = try #require(try await Self.pay(client, harness, user: "marco", booking: id).json["paymentIntentId"].string)
            let tampered = try await standIn.succeed(intentId, sending: .init(tamper: true))
            #expect(tampered.map(\.status) == [400] && tampered[0].note?.contains("invalid_signature") == true, "\(tampered)")
            let event = StripeEvent(
                id: "evt_forged",
                type: "payment_intent.succeeded",
                created: Int64(harness.clock.now().timeIntervalSince1970),
                livemode: false,
                object: StripeEventObject(
                    id: intentId,
                    object: "payment_intent",
                    amount: 8000,
                    amountReceived: 8000,
                    currency: "eur",
                    status: "succeeded",
                    livemode: false
                )
            )
            let body = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
            let now = Int64(harness.clock.now().timeIntervalSince1970)
            for header in [
                StripeSignature.header(payload: Data(body.utf8), secrets: ["whsec_someone_else"], timestamp: now),
                StripeSignature.header(payload: Data(body.utf8), secrets: [Self.secret], timestamp: now - 301),
                StripeSignature.header(payload: Data(body.utf8), secrets: [Self.secret], timestamp: now + 301),
                "t=\(now)", "", "v1=00",
            ] {
                var headers: HTTPFields = [.contentType: "application/json"]
                if !header.isEmpty { headers[HTTPField.Name("Stripe-Signature")!] = header }
                let status = try await client.execute(
                    uri: "/api/stripe/webhooks/seaboo-test",
                    method: .post,
                    headers: headers,
                    body: ByteBuffer(string: body)
                ) { $0.status }
                #expect(status == .badRequest, "\(header)")
            }
            #expect(try await harness.count("payment_events") == 0)
            #expect(try await harness.count("purchases") == 0)
            #expect(try await Self.booking(client, harness, user: "marco", id)["status"].string == "pending_payment")
            // The same event, correctly signed, is taken (and a rolled secret's second v1 does not matter).
            var headers: HTTPFields = [.contentType: "application/json"]
            headers[HTTPField.Name("Stripe-Signature")!] = StripeSignature.header(
                payload: Data(body.utf8),
                secrets: ["whsec_old", Self.secret],
                timestamp: now
            )
            let ack = try await client.execute(
                uri: "/api/stripe/webhooks/seaboo-test",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: body)
            ) {
                Reply(status: $0.status, data: Data($0.body.readableBytesView))
            }
            #expect(ack.status == .ok && ack.json["outcome"].string == "booking_confirmed", "\(ack.json)")
            // A tenant without a card rail has no webhook URL.
            let other = try await client.execute(
                uri: "/api/stripe/webhooks/zorya-test",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: body)
            ) { $0.status }
            #expect(other == .notFound)
        }
    }

    @Test("a payment that succeeds after its slot went to someone else is refunded automatically, once; the operator sees why")
    func latePaymentRefundedOnce() async throws {
        try await Self.withCardRail { harness, standIn, client in
            let late = try #require(try await Self.rental(client, harness, user: "marco", day: 6)["id"].int64)
            let intentId = try #require(try await Self.pay(client, harness, user: "marco", booking: late).json["paymentIntentId"].string)
            // The 20-minute hold lapses; giulia takes the boat for the same day.
            harness.clock.advance(21 * 60)
            let giulias = try #require(try await Self.rental(client, harness, user: "giulia", day: 6)["id"].int64)
            // Then marco's payment goes through (3-D Secure took too long).
            let deliveries = try await standIn.succeed(intentId)
            #expect(deliveries.first?.note?.contains("needs_refund:slot_unavailable:refund_requested") == true, "\(deliveries)")
            let parked = try await Self.booking(client, harness, user: "marco", late)
            #expect(parked["status"].string == "payment_needs_refund" && parked["statusReason"].string == "slot_unavailable")
            // The job refunds it; running it again (or on a second instance) refunds nothing more.
            let first = await harness.services.cardPaymentJobs.runDue()
            #expect(first.refunds == 1)
            await harness.services.cardPaymentJobs.runDue()
            #expect(standIn.refunds.count == 1)
            #expect(standIn.refunds.first?.amount == 8000 && standIn.refunds.first?.paymentIntent == intentId)
            try await waitUntil { try await Self.booking(client, harness, user: "marco", late)["status"].string == "refunded" }
            // What the operator sees.
            let payments = try await client.call(.get, "/api/admin/bookings/\(late)/payments", auth: harness.adminKey)
            let payment = try #require((payments.json["payments"].array)?.first)
            #expect(payment["displayStatus"].string == "refunded" && payment["amountRefunded"].int == 8000, "\(payment)")
            let refund = try #require((payment["refunds"].array)?.first)
            #expect(
                refund["initiatedBy"].string == "auto_late_payment" && refund["reason"].string == "slot_unavailable"
                    && refund["status"].string == "succeeded"
            )
            let purchase = try await harness.rows("SELECT status, outcome_code FROM purchases WHERE transaction_id = ?", [intentId])
            #expect(purchase.first?["status"] == "refunded" && purchase.first?["outcome_code"] == "slot_unavailable")
            #expect(try await Self.booking(client, harness, user: "giulia", giulias)["status"].string == "pending_payment")
            #expect(standIn.refunds.count == 1)
        }
    }

    @Test("an admin refund frees the slot; a partial refund keeps the booking; App Store bookings are refunded by Apple")
    func adminRefunds() async throws {
        try await Self.withCardRail { harness, standIn, client in
            func paidRental(_ user: String, day: Int) async throws -> Int64 {
                let id = try #require(try await Self.rental(client, harness, user: user, day: day)["id"].int64)
                let intentId = try #require(try await Self.pay(client, harness, user: user, booking: id).json["paymentIntentId"].string)
                _ = try await standIn.succeed(intentId)
                #expect(try await Self.booking(client, harness, user: user, id)["status"].string == "confirmed")
                return id
            }
            let full = try await paidRental("marco", day: 8)
            // Nobody else can have the boat that day, until the refund.
            let start = Harness.day(8, from: harness.clock.now())
            let taken = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "giulia",
                json: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            )
            #expect(taken.status == .conflict)
            #expect(try await client.call(.post, "/api/admin/bookings/\(full)/refund", auth: harness.adminKey, json: [:]).status == .badRequest)
            let refunded = try await client.call(
                .post,
                "/api/admin/bookings/\(full)/refund",
                auth: harness.adminKey,
                json: ["reason": "storm warning"]
            )
            #expect(refunded.status == .ok, "\(refunded.json)")
            #expect(refunded.json["refund"]["status"].string == "succeeded")
            #expect(refunded.booking?["status"].string == "refunded")
            #expect(
                try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: "giulia",
                    json: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
                ).status == .created
            )
            let nothingLeft = try await client.call(.post, "/api/admin/bookings/\(full)/refund", auth: harness.adminKey, json: ["reason": "again"])
            #expect(nothingLeft.status == .conflict && nothingLeft.errorCode == "booking_not_paid")

            let partial = try await paidRental("anna", day: 9)
            let tooMuch = try await client.call(
                .post,
                "/api/admin/bookings/\(partial)/refund",
                auth: harness.adminKey,
                json: ["reason": "fee", "amountMinor": 9000]
            )
            #expect(tooMuch.status == .unprocessableContent && tooMuch.errorCode == "invalid_amount")
            let part = try await client.call(
                .post,
                "/api/admin/bookings/\(partial)/refund",
                auth: harness.adminKey,
                json: ["reason": "fuel not used", "amountMinor": 1500]
            )
            #expect(part.status == .ok && part.booking?["status"].string == "confirmed", "\(part.json)")
            #expect(part.json["payment"]["displayStatus"].string == "partially_refunded")
            #expect(standIn.refunds.map(\.amount) == [8000, 1500])
            // The overview counts both card payments in, and each refund once at its amount (the full one
            // not a second time through its purchase row, the partial one at its part).
            harness.clock.advance(1)
            let overview = try await client.call(.get, "/api/admin/overview?interval=day", auth: harness.adminKey)
            let moneyIn = try #require(overview.json["moneyIn"].array)
            let refundsOut = try #require(overview.json["refunds"].array)
            #expect(moneyIn.map { "\($0["currency"].string ?? "") \($0["amountMilliunits"].int ?? 0)" } == ["EUR 160000"], "\(moneyIn)")
            #expect(refundsOut.map { "\($0["currency"].string ?? "") \($0["amountMilliunits"].int ?? 0)" } == ["EUR 95000"], "\(refundsOut)")
            let lines = (overview.json["buckets"].array ?? []).flatMap { $0["refunds"].array ?? [] }
            #expect(lines.allSatisfy { $0["store"].string == "stripe" } && lines.reduce(0) { $0 + ($1["count"].int ?? 0) } == 2, "\(lines)")

            // A booking paid through the App Store.
            let iap = try #require(try await Self.rental(client, harness, user: "luca", day: 10)["id"].int64)
            let verified = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "luca",
                json: [
                    "productId": "it.seaboo.rental.basic", "bookingId": .int(iap),
                    "jwsRepresentation": try .string(harness.purchase("it.seaboo.rental.basic")),
                ]
            )
            #expect(verified.status == .ok, "\(verified.json)")
            let viaApple = try await client.call(
                .post,
                "/api/admin/bookings/\(iap)/refund",
                auth: harness.adminKey,
                json: ["reason": "customer asked"]
            )
            #expect(viaApple.status == .conflict && viaApple.errorCode == "refund_via_apple")
        }
    }

    @Test("a lapsed hold cancels its open PaymentIntent; a payment the webhook never reported is found by the check; a lost dispute refunds")
    func lapsedOverdueAndDisputed() async throws {
        try await Self.withCardRail { harness, standIn, client in
            let abandoned = try #require(try await Self.rental(client, harness, user: "marco", day: 11)["id"].int64)
            let abandonedIntent = try #require(
                try await Self.pay(client, harness, user: "marco", booking: abandoned).json["paymentIntentId"].string
            )
            // Paid, but its event is lost (no webhook URL for a moment).
            let quiet = try #require(try await Self.rental(client, harness, user: "anna", day: 12)["id"].int64)
            let quietIntent = try #require(try await Self.pay(client, harness, user: "anna", booking: quiet).json["paymentIntentId"].string)
            let url = standIn.state.withLock { state in
                defer { state.webhookURL = nil }
                return state.webhookURL
            }
            _ = try await standIn.succeed(quietIntent)
            standIn.state.withLock { $0.webhookURL = url }
            #expect(try await Self.booking(client, harness, user: "anna", quiet)["status"].string == "pending_payment")
            // Ten minutes on, the check finds it paid; at 21 minutes marco's hold has lapsed and his PaymentIntent is canceled.
            harness.clock.advance(10 * 60 + 1)
            await harness.services.cardPaymentJobs.runDue()
            #expect(try await Self.booking(client, harness, user: "anna", quiet)["status"].string == "confirmed")
            harness.clock.advance(11 * 60)
            await harness.services.cardPaymentJobs.runDue()
            #expect(standIn.intent(abandonedIntent)?.status == "canceled")
            try await waitUntil {
                try await Self.booking(client, harness, user: "marco", abandoned)["payment"]["status"].string == "canceled"
            }
            let refused = try await Self.pay(client, harness, user: "marco", booking: abandoned)
            #expect(refused.status == .conflict && refused.errorCode == "hold_expired")

            // anna's payment is disputed, then lost: the booking (still in the future) is refunded.
            _ = try await standIn.dispute(quietIntent, status: "needs_response")
            #expect(try await Self.booking(client, harness, user: "anna", quiet)["payment"]["status"].string == "disputed")
            #expect(try await Self.booking(client, harness, user: "anna", quiet)["status"].string == "confirmed")
            _ = try await standIn.dispute(quietIntent, status: "lost")
            #expect(try await Self.booking(client, harness, user: "anna", quiet)["status"].string == "refunded")
            // Final: a later "won" changes nothing.
            let late = try await standIn.dispute(quietIntent, status: "won")
            #expect(late.first?.note?.contains("dispute_final") == true, "\(late)")
        }
    }

    @Test("lost answers: a PaymentIntent created while its answer was lost is found again by its key; a refund likewise refunds once")
    func lostAnswers() async throws {
        try await Self.withCardRail { harness, standIn, client in
            let id = try #require(try await Self.rental(client, harness, user: "marco", day: 14)["id"].int64)
            // Stripe creates the PaymentIntent, but its answer is lost: the app is told to retry.
            standIn.state.withLock { $0.faults = [(status: 500, applied: true)] }
            let lost = try await Self.pay(client, harness, user: "marco", booking: id)
            #expect(lost.status == .serviceUnavailable && lost.errorCode == "payment_provider_unavailable", "\(lost.json)")
            #expect(lost.headers[.retryAfter] != nil)
            let retried = try await Self.pay(client, harness, user: "marco", booking: id)
            #expect(retried.status == .ok, "the one created before: \(retried.json)")
            #expect(standIn.state.withLock { $0.intents.count } == 1, "one PaymentIntent at Stripe")
            let intentId = try #require(retried.json["paymentIntentId"].string)
            _ = try await standIn.succeed(intentId)
            #expect(try await Self.booking(client, harness, user: "marco", id)["status"].string == "confirmed")

            // The refund is made, its answer lost: recorded as pending, retried by the job with the same key.
            standIn.state.withLock { $0.faults = [(status: 500, applied: true)] }
            let pending = try await client.call(.post, "/api/admin/bookings/\(id)/refund", auth: harness.adminKey, json: ["reason": "engine trouble"])
            #expect(pending.status == .ok && pending.json["refund"]["status"].string == "pending", "\(pending.json)")
            let again = try await client.call(.post, "/api/admin/bookings/\(id)/refund", auth: harness.adminKey, json: ["reason": "engine trouble"])
            // Refused either way: still unanswered (refund_in_progress), or Stripe's charge.refunded already told Berth (nothing left).
            #expect(
                again.status == .conflict && ["refund_in_progress", "booking_not_paid"].contains(again.errorCode ?? ""),
                "no second refund: \(again.json)"
            )
            harness.clock.advance(31)
            #expect(await harness.services.cardPaymentJobs.runDue().refunds == 1)
            #expect(standIn.refunds.count == 1, "Stripe refunded once")
            try await waitUntil { try await Self.booking(client, harness, user: "marco", id)["status"].string == "refunded" }
            let keys = standIn.requests.filter { $0.path == "/v1/refunds" }.map(\.idempotencyKey)
            #expect(keys.count == 2 && Set(keys).count == 1, "both attempts sent the same key: \(keys)")
        }
    }

    @Test("the rail is off without its secrets or with an API base the secret key must not travel to; the catalog refuses such a base")
    func railConfiguration() async throws {
        for environment in [
            ["SEABOO_TEST_STRIPE_WEBHOOK_SECRET": Self.secret],
            ["SEABOO_TEST_STRIPE_SECRET_KEY": "sk_test_berth_standin"],
            [
                "SEABOO_TEST_STRIPE_SECRET_KEY": "sk_test_berth_standin", "SEABOO_TEST_STRIPE_WEBHOOK_SECRET": Self.secret,
                "SEABOO_TEST_STRIPE_API_BASE": "http://stripe.example.net",
            ],
        ] {
            let harness = try await Harness.make(environment: environment)
            defer { harness.close() }
            try await harness.app().test(.router) { client in
                let id = try #require(try await Self.rental(client, harness, user: "marco", day: 15)["id"].int64)
                let refused = try await Self.pay(client, harness, user: "marco", booking: id)
                #expect(
                    refused.status == .unprocessableContent && refused.errorCode == "card_payments_not_offered",
                    "\(environment.keys.sorted()): \(refused.json)"
                )
                let hook = try await client.call(.post, "/api/stripe/webhooks/seaboo-test", auth: nil, raw: "{}")
                #expect(hook.status == .notFound)
                #expect(
                    try await client.call(.get, "/api/admin/app", auth: harness.adminKey).json["app"].object?[
                        "cardPayments"
                    ].bool == false
                )
            }
        }
        var catalog = try JSONDecoder().decode(Catalog.self, from: Data(contentsOf: Harness.repository.appendingPathComponent("products.json")))
        let index = try #require(catalog.tenants.firstIndex { $0.id == "seaboo-test" })
        catalog.tenants[index].stripe?.apiBase = "http://api.stripe.com"
        #expect(throws: CatalogError.self) { try catalog.validate() }
        catalog.tenants[index].stripe?.apiBase = "http://127.0.0.1:12111"
        try catalog.validate()
    }

    @Test(
        "deposits at check-in: authorized on the card, then captured in part, released by the operator, or released by Berth before the window ends"
    )
    func deposits() async throws {
        try await Self.withCardRail { harness, standIn, client in
            func paidRental(_ user: String, day: Int) async throws -> Int64 {
                let id = try #require(try await Self.rental(client, harness, user: user, day: day)["id"].int64)
                let intentId = try #require(try await Self.pay(client, harness, user: user, booking: id).json["paymentIntentId"].string)
                _ = try await standIn.succeed(intentId)
                return id
            }
            func deposit(_ id: Int64, _ amount: Int) async throws -> String {
                let started = try await client.call(
                    .post,
                    "/api/admin/bookings/\(id)/deposit",
                    auth: harness.adminKey,
                    json: ["amountMinor": .int(amount)]
                )
                #expect(started.status == .created && started.json["amount"].int == amount, "\(started.json)")
                let intentId = try #require(started.json["paymentIntentId"].string)
                #expect(standIn.intent(intentId)?.captureMethod == "manual")
                // The customer authorizes it in the Payment Sheet: Stripe holds the amount.
                let deliveries = try await standIn.succeed(intentId)
                #expect(
                    deliveries.first?.type == "payment_intent.amount_capturable_updated"
                        && deliveries.first?.note?.contains("deposit_authorized") == true,
                    "\(deliveries)"
                )
                return intentId
            }
            func depositOf(_ id: Int64) async throws -> JSON {
                let list = try await client.call(.get, "/api/admin/bookings/\(id)/payments", auth: harness.adminKey)
                return try #require((list.json["payments"].array)?.first { $0["purpose"].string == "deposit" })
            }
            // A deposit is for a confirmed booking.
            let pending = try #require(try await Self.rental(client, harness, user: "nina", day: 20)["id"].int64)
            let early = try await client.call(.post, "/api/admin/bookings/\(pending)/deposit", auth: harness.adminKey, json: ["amountMinor": 30000])
            #expect(early.status == .conflict && early.errorCode == "booking_not_payable")

            // Damage: 120 € of the 300 € deposit is captured, the rest released by the card network.
            let damaged = try await paidRental("marco", day: 16)
            let damagedIntent = try await deposit(damaged, 30000)
            #expect(try await depositOf(damaged)["displayStatus"].string == "authorized")
            let twice = try await client.call(.post, "/api/admin/bookings/\(damaged)/deposit", auth: harness.adminKey, json: ["amountMinor": 30000])
            #expect(twice.status == .conflict && twice.errorCode == "deposit_held")
            let tooMuch = try await client.call(
                .post,
                "/api/admin/bookings/\(damaged)/deposit/capture",
                auth: harness.adminKey,
                json: ["amountMinor": 30001]
            )
            #expect(tooMuch.status == .unprocessableContent && tooMuch.errorCode == "invalid_amount")
            let captured = try await client.call(
                .post,
                "/api/admin/bookings/\(damaged)/deposit/capture",
                auth: harness.adminKey,
                json: ["amountMinor": 12000]
            )
            #expect(captured.status == .ok, "\(captured.json)")
            let capturedDeposit = try #require(captured.json["deposit"].object)
            #expect(capturedDeposit["displayStatus"].string == "captured" && capturedDeposit["amountCaptured"].int == 12000)
            #expect(standIn.intent(damagedIntent)?.status == "succeeded" && standIn.intent(damagedIntent)?.amountReceived == 12000)
            // The deposit neither pays nor refunds the booking.
            #expect(try await Self.booking(client, harness, user: "marco", damaged)["status"].string == "confirmed")
            #expect(try await harness.rows("SELECT COUNT(*) AS n FROM purchases WHERE store = 'stripe'").first?["n"] == "1")
            #expect(
                try await client.call(.post, "/api/admin/bookings/\(damaged)/deposit/release", auth: harness.adminKey).errorCode == "deposit_not_held"
            )

            // No damage: the operator releases it.
            let clean = try await paidRental("anna", day: 17)
            let cleanIntent = try await deposit(clean, 30000)
            let released = try await client.call(.post, "/api/admin/bookings/\(clean)/deposit/release", auth: harness.adminKey)
            #expect(
                released.status == .ok && released.json["deposit"]["displayStatus"].string == "released",
                "\(released.json)"
            )
            #expect(standIn.intent(cleanIntent)?.status == "canceled")

            // Forgotten: Berth releases it before the card networks' window ends (six days).
            let forgotten = try await paidRental("luca", day: 18)
            let forgottenIntent = try await deposit(forgotten, 20000)
            harness.clock.advance(5 * 86_400)
            await harness.services.cardPaymentJobs.runDue()
            #expect(standIn.intent(forgottenIntent)?.status == "requires_capture")
            harness.clock.advance(86_400 + 1)
            await harness.services.cardPaymentJobs.runDue()
            #expect(standIn.intent(forgottenIntent)?.status == "canceled")
            #expect(try await depositOf(forgotten)["displayStatus"].string == "released")
            let audit = try await harness.rows(
                "SELECT action FROM audit_log WHERE booking_id = ? AND action LIKE 'card_deposit.%' ORDER BY id",
                [forgotten]
            )
            #expect(audit.compactMap { $0["action"] ?? nil }.contains("card_deposit.released"), "\(audit)")
        }
    }

    @Test("50 concurrent deliveries of one signed success confirm the booking once")
    func concurrentDeliveries() async throws {
        try await Self.withCardRail { harness, standIn, client in
            let id = try #require(try await Self.rental(client, harness, user: "marco", day: 13)["id"].int64)
            let intentId = try #require(try await Self.pay(client, harness, user: "marco", booking: id).json["paymentIntentId"].string)
            let event = StripeEvent(
                id: "evt_concurrent",
                type: "payment_intent.succeeded",
                created: Int64(harness.clock.now().timeIntervalSince1970),
                livemode: false,
                object: StripeEventObject(
                    id: intentId,
                    object: "payment_intent",
                    amount: 8000,
                    amountReceived: 8000,
                    currency: "eur",
                    status: "succeeded",
                    livemode: false,
                    metadata: ["berth_booking_id": String(id)]
                )
            )
            let body = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
            let header = StripeSignature.header(
                payload: Data(body.utf8),
                secrets: [Self.secret],
                timestamp: Int64(harness.clock.now().timeIntervalSince1970)
            )
            let url = "http://127.0.0.1:\(try #require(client.port))/api/stripe/webhooks/seaboo-test"
            let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        var request = HTTPClientRequest(url: url)
                        request.method = .POST
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.headers.add(name: "Stripe-Signature", value: header)
                        request.body = .bytes(ByteBuffer(string: body))
                        return try await HTTPClient.shared.execute(request, timeout: .seconds(30)).status.code
                    }
                }
                return try await group.reduce(into: [UInt]()) { $0.append($1) }
            }
            #expect(statuses.count == 50 && statuses.allSatisfy { $0 == 200 }, "\(statuses)")
            #expect(try await harness.count("purchases") == 1)
            #expect(try await harness.count("payment_events") == 1)
            #expect(try await harness.rows("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'booking.confirmed'").first?["n"] == "1")
        }
    }
}

/// Polls `condition` (events the stand-in sends after its answer arrive shortly after).
func waitUntil(timeout: Duration = .seconds(10), _ condition: () async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws
{
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    Issue.record("condition not met within \(timeout)", sourceLocation: sourceLocation)
}

/// Parses an answer's ISO 8601 time.
enum APITimeText {
    static func parse(_ text: String?) -> Date? {
        guard let text else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }
}

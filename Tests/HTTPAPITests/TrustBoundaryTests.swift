import AppleSignedData
import BerthApp
import Domain
import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import TestKit
import Testing
import UseCases

/// What the public client key and a caller who names users may do (security review of 9d512a8,
/// T1, T3, T5, T7, T10): each test fails without its fix.
@Suite("Trust boundary: the client key and named users")
struct TrustBoundaryTests {
    /// aistylist-test with appAccountTokenMatchesUserId (the review's setup), optionally with UUID user ids.
    static func harness(uuidUserIds: Bool = false) async throws -> Harness {
        try await Harness.make(customize: { catalog in
            guard let index = catalog.tenants.firstIndex(where: { $0.id == CreditsTests.stylist }) else { return }
            catalog.tenants[index].appAccountTokenMatchesUserId = true
            if uuidUserIds { catalog.tenants[index].userIdFormat = .uuid }
        })
    }

    static func signedPurchase(_ harness: Harness, id: String, token: String) throws -> String {
        try harness.ca.signTransaction(
            .testPurchase(
                bundleId: CreditsTests.stylistBundle,
                productId: CreditsTests.popular,
                transactionId: id,
                appAccountToken: UUID(uuidString: token)
            )
        )
    }

    static func notify(_ client: some TestClientProtocol, _ harness: Harness, jws: String) async throws -> Reply {
        try await client.call(
            .post,
            "/api/apple/notifications/\(CreditsTests.stylist)",
            auth: nil,
            json: [
                "signedPayload": try .string(
                    harness.ca.signNotification(
                        type: .oneTimeCharge,
                        bundleId: CreditsTests.stylistBundle,
                        signedTransactionInfo: jws,
                        signedRenewalInfo: nil
                    )
                )
            ]
        )
    }

    static func balance(_ client: some TestClientProtocol, key: String, user: String) async throws -> Int? {
        let reply = try await client.call(.get, "/api/credits", auth: key, user: user)
        return ((reply.json["credits"].array) ?? []).first?["balance"].int
    }

    @Test(
        "T1: a client key naming the victim's cordova-plugin-purchase token as X-User-Id gets none of the victim's waiting purchases, records no token, and the victim's claim still succeeds"
    )
    func clientKeyNamingDerivedToken() async throws {
        let harness = try await Self.harness()
        defer { harness.close() }
        let client = try await harness.apiKey(CreditsTests.stylist, .client)
        let victimToken = AccountTokens.cordovaPlugin("bao")
        try await harness.app().test(.router) { http in
            let jws = try Self.signedPurchase(harness, id: "3000000000090001", token: victimToken)
            #expect(try await Self.notify(http, harness, jws: jws).json["outcome"].string == "unclaimed_purchase")

            // The attacker names the victim's token: 2 free credits, not the victim's 52.
            #expect(try await Self.balance(http, key: client, user: victimToken) == 2)
            #expect(try await harness.count("purchases") == 0)
            #expect(try await harness.rows("SELECT user_id FROM account_tokens WHERE token = '\(victimToken)'").isEmpty)
            // Even with a purchase of the attacker's own under that id, the victim's token is not recorded for them.
            let own = try harness.purchase(
                CreditsTests.starter,
                transactionId: "3000000000090009",
                bundleId: CreditsTests.stylistBundle,
                appAccountToken: UUID(uuidString: AccountTokens.cordovaPlugin(victimToken))
            )
            let bought = try await http.call(
                .post,
                "/api/verify-purchase",
                auth: client,
                user: victimToken,
                json: ["productId": .string(CreditsTests.starter), "jwsRepresentation": .string(own)]
            )
            #expect(bought.status == .ok, "\(bought.json)")
            #expect(try await harness.rows("SELECT user_id FROM account_tokens WHERE token = '\(victimToken)'").isEmpty)

            // The victim's own claim of the purchase succeeds (not a replay) and is theirs.
            let claimed = try await http.call(
                .post,
                "/api/verify-purchase",
                auth: client,
                user: "bao",
                json: ["productId": .string(CreditsTests.popular), "jwsRepresentation": .string(jws)]
            )
            #expect(claimed.status == .ok, "\(claimed.json)")
            #expect(try await harness.rows("SELECT user_id FROM purchases WHERE transaction_id = '3000000000090001'").first?["user_id"] == "bao")

            // The victim's next purchase, notified, goes to the victim at once (their token is theirs now).
            let next = try Self.signedPurchase(harness, id: "3000000000090002", token: victimToken)
            #expect(try await Self.notify(http, harness, jws: next).json["outcome"].string == "applied_to_token_user")
            #expect(try await harness.rows("SELECT user_id FROM purchases WHERE transaction_id = '3000000000090002'").first?["user_id"] == "bao")
        }
    }

    @Test(
        "T1: where user ids are UUIDs, an upper-case spelling of the victim's id is refused at the entry; a client key naming the victim's exact id proves nothing, so waiting purchases stay waiting until the victim's token or the backend asks"
    )
    func uuidUserIds() async throws {
        let harness = try await Self.harness(uuidUserIds: true)
        defer { harness.close() }
        let client = try await harness.apiKey(CreditsTests.stylist, .client)
        let server = try await harness.apiKey(CreditsTests.stylist, .server)
        let victim = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
        try await harness.app().test(.router) { http in
            let jws = try Self.signedPurchase(harness, id: "3000000000090011", token: victim)
            #expect(try await Self.notify(http, harness, jws: jws).json["outcome"].string == "unclaimed_purchase")

            let upper = try await http.call(.get, "/api/credits", auth: client, user: victim.uppercased())
            #expect(upper.status == .badRequest && upper.json["error"]["code"].string == "invalid_user_id", "\(upper.json)")
            let notUUID = try await http.call(.get, "/api/credits", auth: client, user: "bao")
            #expect(notUUID.status == .badRequest, "\(notUUID.json)")

            // A client key only names the user: the waiting purchase is not claimed on its read.
            #expect(try await Self.balance(http, key: client, user: victim) == 2)
            #expect(try await harness.count("purchases") == 0)
            // The app's backend (a server key) proves the user: the read claims it for them.
            #expect(try await Self.balance(http, key: server, user: victim) == 52)
            #expect(try await harness.rows("SELECT user_id FROM purchases WHERE transaction_id = '3000000000090011'").first?["user_id"] == victim)
            // And the id is its own token: Apple's next notification of the victim's purchase is applied at once.
            let next = try Self.signedPurchase(harness, id: "3000000000090012", token: victim)
            #expect(try await Self.notify(http, harness, jws: next).json["outcome"].string == "applied_to_token_user")
        }
    }

    @Test("T1: on an app whose ids are text, a user id that is a UUID does not own that UUID as a token")
    func textIdsDoNotOwnTokens() async throws {
        let harness = try await Self.harness()
        defer { harness.close() }
        let server = try await harness.apiKey(CreditsTests.stylist, .server)
        let token = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
        try await harness.app().test(.router) { http in
            let jws = try Self.signedPurchase(harness, id: "3000000000090021", token: token)
            #expect(try await Self.notify(http, harness, jws: jws).json["outcome"].string == "unclaimed_purchase")
            // Even the backend naming a user whose id equals the token does not collect it: ids are not tokens here.
            #expect(try await Self.balance(http, key: server, user: token) == 2)
            #expect(try await Self.balance(http, key: server, user: token.uppercased()) == 2)
            #expect(try await harness.count("purchases") == 0)
        }
    }

    @Test("T3, T5: offers and consumption consent are refused to the public client key (user tokens and server keys only)")
    func offersAndConsentNeedProof() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let client = try await harness.apiKey("ftchinese-test", .client)
        let server = try await harness.apiKey("ftchinese-test", .server)
        try await harness.app().test(.router) { http in
            let consent = try await http.call(
                .put,
                "/api/consumption-consent",
                auth: client,
                user: "bao",
                json: ["consented": true, "textVersion": "2026-01"]
            )
            #expect(consent.status == .forbidden, "\(consent.json)")
            #expect(try await harness.count("consumption_consents") == 0)
            let byBackend = try await http.call(
                .put,
                "/api/consumption-consent",
                auth: server,
                user: "bao",
                json: ["consented": true, "textVersion": "2026-01"]
            )
            #expect(byBackend.status == .ok, "\(byBackend.json)")
            let product = "com.ft.ftchinese.mobile.subscription.member.monthly"
            let intro = try await http.call(
                .post,
                "/api/offers/apple/introductory-eligibility",
                auth: client,
                user: "eve-fresh-1",
                json: ["productId": .string(product), "transactionId": "2000000900000901"]
            )
            #expect(intro.status == .forbidden, "\(intro.json)")
            let promo = try await http.call(
                .post,
                "/api/offers/apple/promotional",
                auth: client,
                user: "eve-fresh-2",
                json: ["productId": .string(product), "offerId": "newcomer50"]
            )
            #expect(promo.status == .forbidden, "\(promo.json)")
        }
    }

    @Test("T10: a server key narrowed to bookings does not reach one subscription by id (GET, PATCH); a read-scoped key and an admin key do")
    func subscriptionByIdNeedsReadScope() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let scoped = try await CreateAPIKey(store: harness.database)(
            tenantId: "seaboo-test",
            role: .server,
            scopes: [.bookings],
            now: harness.clock.now()
        ).secret
        try await harness.app().test(.router) { http in
            for method in [HTTPRequest.Method.get, .patch] {
                let reply = try await http.call(method, "/api/subscriptions/2000000900000999", auth: scoped, user: "ana")
                #expect(
                    reply.status == .forbidden && reply.json["error"]["code"].string == "insufficient_scope",
                    "\(method) \(reply.json)"
                )
            }
            #expect(try await http.call(.get, "/api/subscriptions/2000000900000999", auth: harness.serverKey, user: "ana").status == .notFound)
            #expect(try await http.call(.get, "/api/subscriptions/2000000900000999", auth: harness.adminKey).status == .notFound)
        }
    }

    @Test(
        "T4: unpaid holds are capped per resource and slot window: throwaway accounts filling one evening's cruise do not block the next evening; operators see the slot filling (audit, metric)"
    )
    func holdsCappedPerSlotWindow() async throws {
        let harness = try await Harness.make(customize: { catalog in
            guard let index = catalog.tenants.firstIndex(where: { $0.id == "seaboo-test" }) else { return }
            catalog.tenants[index].limits = Tenant.Limits(pendingHoldsPerResource: 3)
        })
        defer { harness.close() }
        try await harness.app().test(.router) { http in
            func hold(_ user: String, day: Int) async throws -> Reply {
                let slot = Harness.local(day, hour: 17, minute: 30, from: harness.clock.now())
                return try await http.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: user,
                    json: ["resourceId": "sunset-cruise", "slot": .string(iso(slot)), "seats": 1]
                )
            }
            for user in ["t1", "t2", "t3"] { #expect(try await hold(user, day: 3).status == .created) }
            let full = try await hold("customer", day: 3)
            #expect(full.status == .conflict && full.errorCode == "too_many_pending_bookings", "\(full.json)")
            // Another evening of the same cruise is not held by them.
            let nextEvening = try await hold("customer", day: 4)
            #expect(nextEvening.status == .created, "\(nextEvening.json)")
            // Operators were told when the slot reached four fifths of the cap (2 of 3), and the refusal is counted.
            let alerts = try await harness.rows("SELECT detail FROM audit_log WHERE action = 'booking.holds_high'")
            #expect(alerts.count == 1, "\(alerts)")
            #expect(harness.services.metrics.render().contains("berth_booking_holds_refused_total{"))
        }
    }
}

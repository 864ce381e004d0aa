import AppleSignedData
import Domain
import Foundation
import GRDB
import HTTPTypes
import HummingbirdTesting
import TestKit
import Testing
import UseCases

@testable import HTTPAPI

/// One-time unlocks end to end over HTTP: a tenant (its catalog built here) selling a lifetime
/// unlock and a 30-day pass besides its subscriptions. Answers are decoded into typed structs.
@Suite("Unlocks and passes over HTTP")
struct UnlocksTests {
    static let tenant = "ftchinese-test"
    static let bundle = "com.ft.ftchinese.mobile"
    static let lifetime = "com.ft.ftchinese.mobile.pro.lifetime"
    static let pass = "com.ft.ftchinese.mobile.club.pass30"
    static let day: TimeInterval = 86_400

    struct Grant: Decodable {
        var source: String
        var reference: String
        var productId: String?
        var from: String
        var until: String?
        var state: String
    }

    struct Held: Decodable {
        var entitlement: String
        var active: Bool
        var expiresAt: String?
        var grants: [Grant]
    }

    struct PurchaseAnswer: Decodable {
        struct Purchase: Decodable {
            var transactionId: String
            var productId: String
            var status: String
        }
        var entitlement: Held
        var purchase: Purchase
    }

    struct Entitlements: Decodable {
        struct Item: Decodable {
            var entitlement: String
            var productId: String
            var state: String
            var source: String?
        }
        var isPremium: Bool
        var entitlements: [Item]
        var byEntitlement: [Held]

        func held(_ name: String) -> Held? { byEntitlement.first { $0.entitlement == name } }
    }

    static func make() async throws -> Harness {
        try await Harness.make(customize: { catalog in
            guard let index = catalog.tenants.firstIndex(where: { $0.id == tenant }) else { return }
            catalog.tenants[index].products += [
                Product(id: lifetime, kind: .unlock, type: "Non-Consumable", title: "Pro forever", entitlement: "premium"),
                Product(
                    id: pass,
                    kind: .unlock,
                    type: "Non-Renewing Subscription",
                    title: "Boat club, 30 days",
                    entitlement: "club",
                    durationDays: 30
                ),
            ]
        })
    }

    static func transaction(
        _ harness: Harness,
        _ product: String,
        id: String = TestIDs.transactionId(),
        at: Date? = nil,
        revoked: Date? = nil
    ) -> TransactionPayload {
        var t = TransactionPayload.testPurchase(
            bundleId: bundle,
            productId: product,
            transactionId: id,
            originalTransactionId: id,
            type: product == lifetime ? .nonConsumable : .nonRenewingSubscription,
            purchaseDate: at ?? harness.clock.now(),
            signedDate: harness.clock.now()
        )
        t.revocationDate = revoked.map(AppleTimestamp.init)
        return t
    }

    static func buy(
        _ client: some TestClientProtocol,
        _ harness: Harness,
        key: String,
        user: String,
        _ t: TransactionPayload
    ) async throws -> (Reply, PurchaseAnswer?) {
        let reply = try await client.call(
            .post,
            "/api/verify-purchase",
            auth: key,
            user: user,
            json: ["productId": .string(t.productId ?? ""), "jwsRepresentation": try .string(harness.ca.signTransaction(t))]
        )
        return (reply, try? JSONDecoder().decode(PurchaseAnswer.self, from: reply.data))
    }

    static func entitlements(_ client: some TestClientProtocol, key: String, user: String) async throws -> Entitlements {
        let reply = try await client.call(.get, "/api/entitlements", auth: key, user: user)
        #expect(reply.status == .ok, "\(reply.json)")
        return try JSONDecoder().decode(Entitlements.self, from: reply.data)
    }

    static func notify(
        _ client: some TestClientProtocol,
        _ harness: Harness,
        _ type: AppleSignedData.NotificationType,
        _ t: TransactionPayload
    ) async throws -> String? {
        let payload = try harness.ca.signNotification(type: type, bundleId: bundle, transaction: t, signedDate: harness.clock.now())
        let reply = try await client.call(.post, "/api/apple/notifications/\(tenant)", auth: nil, json: ["signedPayload": .string(payload)])
        #expect(reply.status == .ok, "\(reply.json)")
        return try await harness.rows(
            "SELECT outcome FROM apple_notifications WHERE transaction_id = ? AND notification_type = ?",
            [t.transactionId ?? "", type.rawValue]
        ).first?["outcome"] ?? nil
    }

    @Test("a lifetime unlock: bought, restored on a second device, refused to another user, refunded (the grant ends), reinstated")
    func lifetimeUnlock() async throws {
        let harness = try await Self.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            let t = Self.transaction(harness, Self.lifetime)
            let (bought, answer) = try await Self.buy(client, harness, key: key, user: "ana", t)
            #expect(bought.status == .ok, "\(bought.json)")
            #expect(answer?.purchase.status == "applied")
            #expect(answer?.entitlement.entitlement == "premium")
            #expect(answer?.entitlement.active == true)
            #expect(answer?.entitlement.expiresAt == nil, "a lifetime unlock never expires")
            var held = try await Self.entitlements(client, key: key, user: "ana")
            #expect(held.isPremium)
            #expect(held.held("premium")?.grants.map(\.source) == ["unlock"])
            #expect(held.entitlements.contains { $0.source == "unlock" && $0.productId == Self.lifetime && $0.state == "active" })

            // A second device of the same user sends the same transaction: the same grant, nothing new.
            let (restored, again) = try await Self.buy(client, harness, key: key, user: "ana", t)
            #expect(restored.status == .ok, "\(restored.json)")
            #expect(again?.entitlement.grants.map(\.reference) == [t.transactionId ?? ""])
            #expect(try await harness.count("entitlement_grants") == 1)
            #expect(try await harness.count("purchases") == 1)

            // Another user with the same transaction: a replay.
            let (other, _) = try await Self.buy(client, harness, key: key, user: "bob", t)
            #expect(other.status == .conflict)
            #expect(other.errorCode == "transaction_already_used")
            #expect(try await Self.entitlements(client, key: key, user: "bob").held("premium") == nil)

            // Apple refunds it: the grant ends, premium goes.
            #expect(try await Self.notify(client, harness, .refund, t) == "unlock_ended")
            held = try await Self.entitlements(client, key: key, user: "ana")
            #expect(!held.isPremium)
            #expect(held.held("premium")?.active == false)
            #expect(held.held("premium")?.grants.first?.state == "ended")
            #expect(held.entitlements.first { $0.source == "unlock" }?.state == "revoked", "the items share the subscriptions' states")
            let (afterRefund, _) = try await Self.buy(client, harness, key: key, user: "ana", t)
            #expect(afterRefund.errorCode == "transaction_revoked", "\(afterRefund.json)")

            // The refund is reversed: the grant is back.
            #expect(try await Self.notify(client, harness, .refundReversed, t) == "unlock_reinstated")
            #expect(try await Self.entitlements(client, key: key, user: "ana").isPremium)
        }
    }

    @Test(
        "an unlock Apple notified for a user who never called waits; that user's next GET /api/entitlements with proof of who they are (the backend's key) applies it and shows it in the same answer; the public client key naming them claims nothing"
    )
    func waitingUnlockOnEntitlements() async throws {
        let harness = try await Self.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .server)
        let appKey = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            var t = Self.transaction(harness, Self.lifetime)
            t.appAccountToken = AccountTokens.cordovaPlugin("dee")
            #expect(try await Self.notify(client, harness, .oneTimeCharge, t) == "unclaimed_purchase")
            #expect(try await harness.count("entitlement_grants") == 0)
            // Someone else's call takes nothing.
            #expect(try await Self.entitlements(client, key: key, user: "eve").held("premium") == nil)
            #expect(try await harness.count("purchases") == 0)
            // The app's public key naming Dee proves nothing about who calls: nothing is claimed.
            #expect(try await Self.entitlements(client, key: appKey, user: "dee").held("premium") == nil)
            #expect(try await harness.count("purchases") == 0)
            // Dee's first call: the waiting unlock is claimed, and the answer already holds it.
            let held = try await Self.entitlements(client, key: key, user: "dee")
            #expect(held.isPremium)
            #expect(held.held("premium")?.grants.map(\.reference) == [t.transactionId ?? ""])
            #expect(
                try await harness.rows("SELECT user_id FROM purchases WHERE transaction_id = ?", [t.transactionId ?? ""]).first?["user_id"] == "dee"
            )
            // Later calls find nothing waiting and change nothing.
            #expect(try await Self.entitlements(client, key: key, user: "dee").isPremium)
            #expect(try await harness.count("purchases") == 1)
        }
    }

    @Test("a 30-day pass: bought twice (extended to 60 days), a refund of the first moves the second up, expiry ends the entitlement")
    func passes() async throws {
        let harness = try await Self.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            let start = harness.clock.now()
            let first = Self.transaction(harness, Self.pass, at: start)
            let (one, answer) = try await Self.buy(client, harness, key: key, user: "ana", first)
            #expect(one.status == .ok, "\(one.json)")
            #expect(answer?.entitlement.expiresAt == APITime.format(start.addingTimeInterval(30 * Self.day)))

            harness.clock.advance(10 * Self.day)
            let second = Self.transaction(harness, Self.pass)
            let (two, extended) = try await Self.buy(client, harness, key: key, user: "ana", second)
            #expect(two.status == .ok, "\(two.json)")
            #expect(
                extended?.entitlement.expiresAt == APITime.format(start.addingTimeInterval(60 * Self.day)),
                "the second pass starts when the first ends"
            )
            var held = try await Self.entitlements(client, key: key, user: "ana")
            #expect(held.held("club")?.active == true)
            #expect(held.held("club")?.grants.count == 2)
            #expect(!held.isPremium, "club is not premium")

            // The first pass is refunded: the second now runs from its own purchase, 30 days.
            #expect(try await Self.notify(client, harness, .refund, first) == "unlock_ended")
            held = try await Self.entitlements(client, key: key, user: "ana")
            #expect(held.held("club")?.active == true)
            #expect(held.held("club")?.expiresAt == APITime.format(start.addingTimeInterval(40 * Self.day)))

            harness.clock.advance(31 * Self.day)
            held = try await Self.entitlements(client, key: key, user: "ana")
            #expect(held.held("club")?.active == false, "the pass expired")
        }
    }

    @Test("premium from a subscription and a lifetime unlock: when the subscription expires, the unlock keeps premium")
    func subscriptionAndUnlock() async throws {
        let harness = try await Self.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            let period = SubscriptionsTests.period(harness, transaction: "sub-1", original: "sub-1", start: harness.clock.now(), days: 30)
            let subscribed = try await SubscriptionsTests.claim(client, harness, key: key, user: "ana", period)
            #expect(subscribed.status == .ok, "\(subscribed.json)")
            let (unlocked, _) = try await Self.buy(client, harness, key: key, user: "ana", Self.transaction(harness, Self.lifetime))
            #expect(unlocked.status == .ok, "\(unlocked.json)")
            var held = try await Self.entitlements(client, key: key, user: "ana")
            #expect(Set(held.held("premium")?.grants.map(\.source) ?? []) == ["app_store_subscription", "unlock"])
            #expect(held.held("premium")?.expiresAt == nil, "the lifetime grant outlasts the subscription")

            harness.clock.advance(40 * Self.day)
            held = try await Self.entitlements(client, key: key, user: "ana")
            #expect(held.entitlements.first { $0.source == "app_store_subscription" }?.state == "expired")
            #expect(held.isPremium, "the unlock still grants premium")
            #expect(held.held("premium")?.active == true)
            #expect(held.held("premium")?.grants.first?.source == "unlock", "live grants come first")
        }
    }

    /// The body cordova-plugin-purchase builds for a StoreKit 2 transaction (its product types as it names them).
    static func validatorBody(_ jws: String, product: String, type: String) -> JSON {
        [
            "id": .string(bundle), "type": "application",
            "products": [["type": .string(type), "id": .string(product), "offers": []]],
            "transaction": ["type": "apple-sk2", "id": .string(product), "jwsRepresentation": .string(jws)],
            "device": ["plugin": "cordova-plugin-purchase/13.12.1", "platform": "ios"],
            "additionalData": ["applicationUsername": "ana"],
        ]
    }

    @Test("cordova-plugin-purchase's validator: a pass validates with its expiry; a lifetime unlock without one; both stay in the collection")
    func validator() async throws {
        let harness = try await Self.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            let pass = Self.transaction(harness, Self.pass)
            let reply = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: key,
                json: Self.validatorBody(try harness.ca.signTransaction(pass), product: Self.pass, type: "non renewing subscription")
            )
            #expect(CordovaValidatorTests.ok(reply), "\(reply.json)")
            let entry = try #require(CordovaValidatorTests.collection(reply).first)
            #expect(entry["id"].string == Self.pass)
            #expect(entry["expiryDate"].int64 == harness.clock.now().addingTimeInterval(30 * Self.day).epochMilliseconds)
            #expect(entry["isExpired"].bool == false)

            let lifetime = Self.transaction(harness, Self.lifetime)
            let unlocked = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: key,
                json: Self.validatorBody(try harness.ca.signTransaction(lifetime), product: Self.lifetime, type: "non consumable")
            )
            #expect(CordovaValidatorTests.ok(unlocked), "\(unlocked.json)")
            // The collection is everything the user owns: the pass is still listed beside the unlock.
            let owned = CordovaValidatorTests.collection(unlocked)
            let lifetimeEntry = try #require(owned.first { $0["id"].string == Self.lifetime })
            #expect(lifetimeEntry["expiryDate"] == nil)
            #expect(lifetimeEntry["isExpired"].bool == false)
            #expect(owned.contains { $0["id"].string == Self.pass && $0["isExpired"].bool == false })
            #expect(try await Self.entitlements(client, key: key, user: "ana").isPremium)
        }
    }

    @Test("the catalog refuses unlocks without an entitlement, passes without days and lifetime unlocks with days")
    func catalogRules() throws {
        func tenant(_ product: Product) throws -> Catalog {
            let data = try Data(contentsOf: Harness.repository.appendingPathComponent("products.json"))
            var catalog = try JSONDecoder().decode(Catalog.self, from: data)
            catalog.tenants[0].products.append(product)
            return catalog
        }
        #expect(throws: CatalogError.self) { try tenant(Product(id: "u1", kind: .unlock, type: "Non-Consumable", title: "x")).validate() }
        #expect(throws: CatalogError.self) {
            try tenant(Product(id: "u2", kind: .unlock, type: "Non-Renewing Subscription", title: "x", entitlement: "e")).validate()
        }
        #expect(throws: CatalogError.self) {
            try tenant(Product(id: "u3", kind: .unlock, type: "Non-Consumable", title: "x", entitlement: "e", durationDays: 30)).validate()
        }
        #expect(throws: CatalogError.self) {
            try tenant(Product(id: "u4", kind: .unlock, type: "Consumable", title: "x", entitlement: "e")).validate()
        }
        #expect(throws: CatalogError.self) {
            try tenant(Product(id: "u5", kind: .credits, type: "Consumable", title: "x", credits: 5, durationDays: 3)).validate()
        }
        try tenant(Product(id: "u6", kind: .unlock, type: "Non-Renewing Subscription", title: "x", entitlement: "e", durationDays: 30)).validate()
    }
}

import AppleSignedData
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Synchronization
import Testing
import TestKit
import _CryptoExtras

/// Subscriptions end to end over HTTP: `ftchinese-test` (seed 003: records, notifications, the link
/// policy, FT Chinese's own routes) and `braindumpster-test` (seed 004: its shipped client's
/// verify-receipt, Firebase-style tokens from a JWKS).
@Suite("Subscriptions over HTTP")
struct SubscriptionsTests {
    static let ftc = "ftchinese-test"
    static let ftcBundle = "com.ft.ftchinese.mobile"
    static let monthly = "com.ft.ftchinese.mobile.subscription.member.monthly"
    static let brain = "braindumpster-test"
    static let brainBundle = "com.braindumpster.app"
    static let yearly = "brain_dumpster_yearly_premium"
    static let day: TimeInterval = 86_400

    /// A StoreKit 2 transaction of a subscription period.
    static func period(_ harness: Harness, transaction: String, original: String, product: String = monthly, bundle: String = ftcBundle,
                       start: Date, days: Double = 30, signed: Date? = nil, revoked: Date? = nil) -> TransactionPayload {
        var t = TransactionPayload.testPurchase(bundleId: bundle, productId: product, transactionId: transaction, originalTransactionId: original,
                                                type: .autoRenewableSubscription, purchaseDate: start, signedDate: signed ?? harness.clock.now(),
                                                expiresDate: start.addingTimeInterval(days * day))
        t.revocationDate = revoked.map(AppleTimestamp.init)
        return t
    }

    static func renewal(_ harness: Harness, original: String, autoRenew: Bool = true, retry: Bool? = nil, grace: Date? = nil, signed: Date? = nil) -> RenewalInfoPayload {
        RenewalInfoPayload(originalTransactionId: original, autoRenewProductId: monthly, productId: monthly, autoRenewStatus: autoRenew ? .on : .off,
                           isInBillingRetryPeriod: retry, gracePeriodExpiresDate: grace.map(AppleTimestamp.init), signedDate: AppleTimestamp(signed ?? harness.clock.now()),
                           environment: .sandbox)
    }

    static func notify(_ client: some TestClientProtocol, _ harness: Harness, _ type: AppleSignedData.NotificationType, subtype: NotificationSubtype? = nil,
                       transaction: TransactionPayload?, renewal: RenewalInfoPayload? = nil, signed: Date? = nil) async throws -> Reply {
        let payload = try harness.ca.signNotification(type: type, subtype: subtype, bundleId: ftcBundle, transaction: transaction, renewalInfo: renewal,
                                                      signedDate: signed ?? harness.clock.now())
        let reply = try await client.call(.post, "/api/apple/notifications/\(ftc)", auth: nil, json: ["signedPayload": payload])
        #expect(reply.status == .ok, "\(reply.json)")
        return reply
    }

    static func claim(_ client: some TestClientProtocol, _ harness: Harness, key: String, user: String, _ transaction: TransactionPayload) async throws -> Reply {
        try await client.call(.post, "/api/verify-purchase", auth: key, user: user,
                              json: ["productId": transaction.productId ?? "", "jwsRepresentation": try harness.ca.signTransaction(transaction)])
    }

    static func entitlements(_ client: some TestClientProtocol, key: String, user: String) async throws -> [String: Any] {
        let reply = try await client.call(.get, "/api/entitlements", auth: key, user: user)
        #expect(reply.status == .ok, "\(reply.json)")
        return reply.json
    }

    static func state(_ json: [String: Any], _ original: String) -> String? {
        ((json["entitlements"] as? [[String: Any]]) ?? []).first { $0["originalTransactionId"] as? String == original }?["state"] as? String
    }

    @Test("verify-purchase attaches a subscription to its buyer once; another account's claim of it is 409 and a cheat attempt")
    func attachOnce() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.ftc, .server), admin = try await harness.apiKey(Self.ftc, .admin)
        try await harness.app().test(.router) { client in
            let now = harness.clock.now()
            let first = Self.period(harness, transaction: "2000000100000001", original: "2000000100000001", start: now.addingTimeInterval(-3600))
            let bought = try await Self.claim(client, harness, key: key, user: "ana", first)
            #expect(bought.status == .ok, "\(bought.json)")
            let subscription = try #require(bought.json["subscription"] as? [String: Any])
            #expect(subscription["state"] as? String == "active")
            #expect(subscription["tier"] as? String == "standard" && subscription["cycle"] as? String == "month")
            #expect(subscription["inUse"] as? Bool == true, "the account's first subscription is the one it uses")
            #expect(bought.purchase?["transactionId"] as? String == "2000000100000001")

            let again = try await Self.claim(client, harness, key: key, user: "ana", first)
            #expect(again.status == .ok)
            #expect(try await harness.count("purchases") == 1)

            let ana = try await Self.entitlements(client, key: key, user: "ana")
            #expect(ana["isPremium"] as? Bool == true)
            let item = try #require((ana["entitlements"] as? [[String: Any]])?.first)
            #expect(item["entitlement"] as? String == "premium" && item["productId"] as? String == Self.monthly && item["environment"] as? String == "Sandbox")
            #expect(item["autoRenew"] == nil || item["autoRenew"] is NSNull, "a transaction alone does not say whether it renews")

            // Bob's device shows the same subscription (its renewal): it is Ana's.
            let renewal = Self.period(harness, transaction: "2000000100000002", original: "2000000100000001", start: now.addingTimeInterval(29 * Self.day))
            let stolen = try await Self.claim(client, harness, key: key, user: "bob", renewal)
            #expect(stolen.status == .conflict, "\(stolen.json)")
            #expect(stolen.errorCode == "linked_to_other_account")
            #expect(try await Self.entitlements(client, key: key, user: "bob")["isPremium"] as? Bool == false)
            let cheats = try await client.call(.get, "/api/admin/subscriptions/cheats", auth: admin)
            let cheat = try #require((cheats.json["items"] as? [[String: Any]])?.first)
            #expect(cheat["userId"] as? String == "bob" && cheat["ownerUserId"] as? String == "ana" && cheat["source"] as? String == "verify_purchase")

            // A consumable of another app's kind cannot pass as a subscription.
            let booking = try await client.call(.post, "/api/verify-purchase", auth: key, user: "ana",
                                                json: ["productId": Self.monthly, "jwsRepresentation": try harness.purchase(Self.monthly, transactionId: "2000000100000009", bundleId: Self.ftcBundle)])
            #expect(booking.status == .unprocessableContent && booking.errorCode == "product_not_supported", "\(booking.json)")
        }
    }

    @Test("notifications move a stored subscription: renew, fail into grace, grace and expiry follow the clock, EXPIRED, REFUND; late ones change nothing; events go out")
    func notificationsMoveState() async throws {
        let harness = try await Harness.make(webhookURL: "http://127.0.0.1:9/hooks", webhookTenants: [Self.ftc])
        defer { harness.close() }
        let key = try await harness.apiKey(Self.ftc, .server)
        try await harness.app().test(.router) { client in
            let t0 = harness.clock.now()
            let otid = "2000000200000001"
            // Apple tells Berth before the app does: the record waits for its user.
            let subscribed = Self.period(harness, transaction: otid, original: otid, start: t0.addingTimeInterval(-60))
            let early = try await Self.notify(client, harness, .subscribed, subtype: .initialBuy, transaction: subscribed, renewal: Self.renewal(harness, original: otid))
            #expect(early.json["outcome"] as? String == "subscription_active")
            let claimed = try await Self.claim(client, harness, key: key, user: "cy", Self.period(harness, transaction: otid, original: otid, start: t0.addingTimeInterval(-60),
                                                                                                 signed: t0.addingTimeInterval(-30)))
            #expect(claimed.status == .ok, "\(claimed.json)")
            #expect((claimed.json["subscription"] as? [String: Any])?["autoRenew"] as? Bool == true, "what the notification said is kept")

            harness.clock.advance(29 * Self.day)
            let renewed = Self.period(harness, transaction: "2000000200000002", original: otid, start: t0.addingTimeInterval(30 * Self.day - 60))
            #expect(try await Self.notify(client, harness, .didRenew, transaction: renewed).json["outcome"] as? String == "subscription_active")
            harness.clock.advance(31 * Self.day)   // t0 + 60 d: the renewed period ends now (t0 + 60 d − 60 s)
            let grace = t0.addingTimeInterval(63 * Self.day)
            let failed = try await Self.notify(client, harness, .didFailToRenew, subtype: .gracePeriod, transaction: renewed,
                                               renewal: Self.renewal(harness, original: otid, retry: true, grace: grace))
            #expect(failed.json["outcome"] as? String == "subscription_grace_period")
            var cy = try await Self.entitlements(client, key: key, user: "cy")
            #expect(Self.state(cy, otid) == "grace_period" && cy["isPremium"] as? Bool == true)
            harness.clock.advance(4 * Self.day)
            cy = try await Self.entitlements(client, key: key, user: "cy")
            #expect(Self.state(cy, otid) == "billing_retry" && cy["isPremium"] as? Bool == false, "the grace period ends by the clock")

            let stale = try await Self.notify(client, harness, .didChangeRenewalStatus, subtype: .autoRenewDisabled, transaction: renewed,
                                              renewal: Self.renewal(harness, original: otid, autoRenew: false, signed: t0), signed: t0)
            #expect(stale.json["outcome"] as? String == "subscription_stale", "a notification signed before the last one applied changes nothing")

            #expect(try await Self.notify(client, harness, .expired, subtype: .billingRetry, transaction: renewed,
                                          renewal: Self.renewal(harness, original: otid, autoRenew: false, retry: false)).json["outcome"] as? String == "subscription_expired")
            cy = try await Self.entitlements(client, key: key, user: "cy")
            #expect(Self.state(cy, otid) == "expired")

            // A refund revokes at once, before the period ends.
            let now = harness.clock.now()
            let other = "2000000200000010"
            let bought = Self.period(harness, transaction: other, original: other, start: now.addingTimeInterval(-60))
            #expect(try await Self.claim(client, harness, key: key, user: "cy", bought).status == .ok)
            #expect(try await Self.entitlements(client, key: key, user: "cy")["isPremium"] as? Bool == true)
            harness.clock.advance(60)
            let refunded = Self.period(harness, transaction: other, original: other, start: now.addingTimeInterval(-60), revoked: harness.clock.now())
            #expect(try await Self.notify(client, harness, .refund, transaction: refunded).json["outcome"] as? String == "subscription_revoked")
            cy = try await Self.entitlements(client, key: key, user: "cy")
            #expect(Self.state(cy, other) == "revoked" && cy["isPremium"] as? Bool == false)
            #expect(try await harness.rows("SELECT status FROM purchases WHERE transaction_id = ?", [other]).first?["status"] == "refunded")
            harness.clock.advance(60)
            let reversed = Self.period(harness, transaction: other, original: other, start: now.addingTimeInterval(-60))
            #expect(try await Self.notify(client, harness, .refundReversed, transaction: reversed).json["outcome"] as? String == "subscription_active")

            let events = try await harness.rows("SELECT payload FROM webhook_outbox WHERE event_type = 'subscription.updated'")
            #expect(events.count >= 7, "one event per change: \(events.count)")
            #expect(events.contains { ($0["payload"] ?? "")?.contains("\"state\":\"revoked\"") == true })
        }
    }
}

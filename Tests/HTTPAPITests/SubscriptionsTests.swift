import AppleSignedData
import Domain
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Synchronization
import TestKit
import Testing
import _CryptoExtras

@testable import HTTPAPI

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
    static func period(
        _ harness: Harness,
        transaction: String,
        original: String,
        product: String = monthly,
        bundle: String = ftcBundle,
        start: Date,
        days: Double = 30,
        signed: Date? = nil,
        revoked: Date? = nil
    ) -> TransactionPayload {
        var t = TransactionPayload.testPurchase(
            bundleId: bundle,
            productId: product,
            transactionId: transaction,
            originalTransactionId: original,
            type: .autoRenewableSubscription,
            purchaseDate: start,
            signedDate: signed ?? harness.clock.now(),
            expiresDate: start.addingTimeInterval(days * day)
        )
        t.revocationDate = revoked.map(AppleTimestamp.init)
        return t
    }

    static func renewal(
        _ harness: Harness,
        original: String,
        autoRenew: Bool = true,
        retry: Bool? = nil,
        grace: Date? = nil,
        signed: Date? = nil
    ) -> RenewalInfoPayload {
        RenewalInfoPayload(
            originalTransactionId: original,
            autoRenewProductId: monthly,
            productId: monthly,
            autoRenewStatus: autoRenew ? .on : .off,
            isInBillingRetryPeriod: retry,
            gracePeriodExpiresDate: grace.map(AppleTimestamp.init),
            signedDate: AppleTimestamp(signed ?? harness.clock.now()),
            environment: .sandbox
        )
    }

    static func notify(
        _ client: some TestClientProtocol,
        _ harness: Harness,
        _ type: AppleSignedData.NotificationType,
        subtype: NotificationSubtype? = nil,
        transaction: TransactionPayload?,
        renewal: RenewalInfoPayload? = nil,
        signed: Date? = nil
    ) async throws -> Reply {
        let payload = try harness.ca.signNotification(
            type: type,
            subtype: subtype,
            bundleId: ftcBundle,
            transaction: transaction,
            renewalInfo: renewal,
            signedDate: signed ?? harness.clock.now()
        )
        let reply = try await client.call(.post, "/api/apple/notifications/\(ftc)", auth: nil, json: ["signedPayload": .string(payload)])
        #expect(reply.status == .ok, "\(reply.json)")
        return reply
    }

    static func claim(
        _ client: some TestClientProtocol,
        _ harness: Harness,
        key: String,
        user: String,
        _ transaction: TransactionPayload
    ) async throws -> Reply {
        try await client.call(
            .post,
            "/api/verify-purchase",
            auth: key,
            user: user,
            json: ["productId": .string(transaction.productId ?? ""), "jwsRepresentation": try .string(harness.ca.signTransaction(transaction))]
        )
    }

    /// A user's `GET /api/entitlements`, read as the contract's `EntitlementsResponse`.
    static func entitlements(_ client: some TestClientProtocol, key: String, user: String) async throws -> EntitlementsResponse {
        let reply = try await client.call(.get, "/api/entitlements", auth: key, user: user)
        #expect(reply.status == .ok, "\(reply.json)")
        return try reply.decode()
    }

    static func state(_ response: EntitlementsResponse, _ original: String) -> String? {
        response.entitlements.first { $0.originalTransactionId == original }?.state
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
            let subscription = try #require(bought.json["subscription"].object)
            #expect(subscription["state"].string == "active")
            #expect(subscription["tier"].string == "standard" && subscription["cycle"].string == "month")
            #expect(subscription["inUse"].bool == true, "the account's first subscription is the one it uses")
            #expect(bought.purchase?["transactionId"].string == "2000000100000001")

            let again = try await Self.claim(client, harness, key: key, user: "ana", first)
            #expect(again.status == .ok)
            #expect(try await harness.count("purchases") == 1)

            let ana = try await Self.entitlements(client, key: key, user: "ana")
            #expect(ana.isPremium)
            let item = try #require(ana.entitlements.first)
            #expect(item.entitlement == "premium" && item.productId == Self.monthly && item.environment == .sandbox)
            #expect(item.autoRenew == nil, "a transaction alone does not say whether it renews")

            // Bob's device shows the same subscription (its renewal): it is Ana's.
            let renewal = Self.period(
                harness,
                transaction: "2000000100000002",
                original: "2000000100000001",
                start: now.addingTimeInterval(29 * Self.day)
            )
            let stolen = try await Self.claim(client, harness, key: key, user: "bob", renewal)
            #expect(stolen.status == .conflict, "\(stolen.json)")
            #expect(stolen.errorCode == "linked_to_other_account")
            #expect(try await Self.entitlements(client, key: key, user: "bob").isPremium == false)
            let cheats = try await client.call(.get, "/api/admin/subscriptions/cheats", auth: admin)
            let cheat = try #require((cheats.json["items"].array)?.first)
            #expect(
                cheat["userId"].string == "bob" && cheat["ownerUserId"].string == "ana" && cheat["source"].string == "verify_purchase"
            )

            // A consumable of another app's kind cannot pass as a subscription.
            let booking = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: key,
                user: "ana",
                json: [
                    "productId": .string(Self.monthly),
                    "jwsRepresentation": try .string(harness.purchase(Self.monthly, transactionId: "2000000100000009", bundleId: Self.ftcBundle)),
                ]
            )
            #expect(booking.status == .unprocessableContent && booking.errorCode == "product_not_supported", "\(booking.json)")
        }
    }

    @Test(
        "notifications move a stored subscription: renew, fail into grace, grace and expiry follow the clock, EXPIRED, REFUND; late ones change nothing; events go out"
    )
    func notificationsMoveState() async throws {
        let harness = try await Harness.make(webhookURL: "http://127.0.0.1:9/hooks", webhookTenants: [Self.ftc])
        defer { harness.close() }
        let key = try await harness.apiKey(Self.ftc, .server)
        try await harness.app().test(.router) { client in
            let t0 = harness.clock.now()
            let otid = "2000000200000001"
            // Apple tells Berth before the app does: the record waits for its user.
            let subscribed = Self.period(harness, transaction: otid, original: otid, start: t0.addingTimeInterval(-60))
            let early = try await Self.notify(
                client,
                harness,
                .subscribed,
                subtype: .initialBuy,
                transaction: subscribed,
                renewal: Self.renewal(harness, original: otid)
            )
            #expect(early.json["outcome"].string == "subscription_active")
            let claimed = try await Self.claim(
                client,
                harness,
                key: key,
                user: "cy",
                Self.period(
                    harness,
                    transaction: otid,
                    original: otid,
                    start: t0.addingTimeInterval(-60),
                    signed: t0.addingTimeInterval(-30)
                )
            )
            #expect(claimed.status == .ok, "\(claimed.json)")
            #expect(claimed.json["subscription"]["autoRenew"].bool == true, "what the notification said is kept")

            harness.clock.advance(29 * Self.day)
            let renewed = Self.period(harness, transaction: "2000000200000002", original: otid, start: t0.addingTimeInterval(30 * Self.day - 60))
            #expect(try await Self.notify(client, harness, .didRenew, transaction: renewed).json["outcome"].string == "subscription_active")
            harness.clock.advance(31 * Self.day)  // t0 + 60 d: the renewed period ends now (t0 + 60 d − 60 s)
            let grace = t0.addingTimeInterval(63 * Self.day)
            let failed = try await Self.notify(
                client,
                harness,
                .didFailToRenew,
                subtype: .gracePeriod,
                transaction: renewed,
                renewal: Self.renewal(harness, original: otid, retry: true, grace: grace)
            )
            #expect(failed.json["outcome"].string == "subscription_grace_period")
            var cy = try await Self.entitlements(client, key: key, user: "cy")
            #expect(Self.state(cy, otid) == "grace_period" && cy.isPremium == true)
            harness.clock.advance(4 * Self.day)
            cy = try await Self.entitlements(client, key: key, user: "cy")
            #expect(Self.state(cy, otid) == "billing_retry" && cy.isPremium == false, "the grace period ends by the clock")

            let stale = try await Self.notify(
                client,
                harness,
                .didChangeRenewalStatus,
                subtype: .autoRenewDisabled,
                transaction: renewed,
                renewal: Self.renewal(harness, original: otid, autoRenew: false, signed: t0),
                signed: t0
            )
            #expect(stale.json["outcome"].string == "subscription_stale", "a notification signed before the last one applied changes nothing")

            #expect(
                try await Self.notify(
                    client,
                    harness,
                    .expired,
                    subtype: .billingRetry,
                    transaction: renewed,
                    renewal: Self.renewal(harness, original: otid, autoRenew: false, retry: false)
                ).json["outcome"].string == "subscription_expired"
            )
            cy = try await Self.entitlements(client, key: key, user: "cy")
            #expect(Self.state(cy, otid) == "expired")

            // A refund revokes at once, before the period ends.
            let now = harness.clock.now()
            let other = "2000000200000010"
            let bought = Self.period(harness, transaction: other, original: other, start: now.addingTimeInterval(-60))
            #expect(try await Self.claim(client, harness, key: key, user: "cy", bought).status == .ok)
            #expect(try await Self.entitlements(client, key: key, user: "cy").isPremium == true)
            harness.clock.advance(60)
            let refunded = Self.period(harness, transaction: other, original: other, start: now.addingTimeInterval(-60), revoked: harness.clock.now())
            #expect(try await Self.notify(client, harness, .refund, transaction: refunded).json["outcome"].string == "subscription_revoked")
            cy = try await Self.entitlements(client, key: key, user: "cy")
            #expect(Self.state(cy, other) == "revoked" && cy.isPremium == false)
            #expect(try await harness.rows("SELECT status FROM purchases WHERE transaction_id = ?", [other]).first?["status"] == "refunded")
            harness.clock.advance(60)
            let reversed = Self.period(harness, transaction: other, original: other, start: now.addingTimeInterval(-60))
            #expect(
                try await Self.notify(client, harness, .refundReversed, transaction: reversed).json["outcome"].string == "subscription_active"
            )

            let events = try await harness.rows("SELECT payload FROM webhook_outbox WHERE event_type = 'subscription.updated'")
            #expect(events.count >= 7, "one event per change: \(events.count)")
            #expect(events.contains { ($0["payload"] ?? "")?.contains("\"state\":\"revoked\"") == true })
        }
    }
}

extension SubscriptionsTests {
    /// A base64 Sandbox receipt holding the periods of one subscription.
    static func receipt(
        _ harness: Harness,
        bundle: String = ftcBundle,
        product: String = monthly,
        original: String,
        periods: [(String, Date, Date)]
    ) throws -> String {
        var receipt = AppReceipt.testReceipt(bundleId: bundle, productId: product, transactionId: original, created: harness.clock.now())
        receipt.inAppPurchases = periods.map { id, start, end in
            var entry = AppReceipt.InAppPurchase()
            entry.quantity = 1
            entry.productId = product
            entry.transactionId = id
            entry.originalTransactionId = original
            entry.purchaseDate = AppleTimestamp(millisecondsSince1970: Int64(start.timeIntervalSince1970.rounded(.down)) * 1000)
            entry.originalPurchaseDate = entry.purchaseDate
            entry.subscriptionExpirationDate = AppleTimestamp(millisecondsSince1970: Int64(end.timeIntervalSince1970.rounded(.down)) * 1000)
            return entry
        }
        return Data(try harness.receiptCA.signReceipt(receipt)).base64EncodedString()
    }

    static func ftcCall(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ path: String,
        key: String?,
        ftcId: String? = nil,
        json: JSON? = nil,
        raw: String? = nil
    ) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let key { headers[.authorization] = "Bearer \(key)" }
        if let ftcId { headers[HTTPField.Name("X-Ftc-Id")!] = ftcId }
        var body: ByteBuffer?
        if let json { body = ByteBuffer(bytes: try json.data()) }
        if let raw { body = ByteBuffer(string: raw) }
        return try await client.execute(uri: "/ftc-test/api/sandbox" + path, method: method, headers: headers, body: body) { response in
            Reply(status: response.status, data: Data(response.body.readableBytesView))
        }
    }

    static func ftcError(_ reply: Reply) -> (field: String?, code: String?) {
        let error = reply.json["error"].object
        return (error?["field"].string, error?["code"].string)
    }

    @Test(
        "FT Chinese's routes answer with its shapes and codes: subs, link (policy, cheat), list with inUse, receipt, refresh, unlink with an archive"
    )
    func ftcRoutes() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.ftc, .server), admin = try await harness.apiKey(Self.ftc, .admin)
        try await harness.app().test(.router) { client in
            let now = harness.clock.now()
            let otid = "2000000300000001"
            let receipt = try Self.receipt(
                harness,
                original: otid,
                periods: [
                    (otid, now.addingTimeInterval(-40 * Self.day), now.addingTimeInterval(-10 * Self.day)),
                    ("2000000300000002", now.addingTimeInterval(-10 * Self.day), now.addingTimeInterval(20 * Self.day)),
                ]
            )
            let subs = try await Self.ftcCall(client, .post, "/apple/subs", key: key, json: ["receiptData": .string(receipt)])
            #expect(subs.status == .ok, "\(subs.json)")
            #expect(subs.json["originalTransactionId"].string == otid && subs.json["lastTransactionId"].string == "2000000300000002")
            #expect(subs.json["tier"].string == "standard" && subs.json["cycle"].string == "month" && subs.json["ftcUserId"].string == "")
            #expect(subs.json["environment"].string == "Sandbox")
            let expires = try #require(subs.json["expiresDateUtc"].string)
            #expect(!expires.contains("."), "whole seconds, as FT Chinese writes them: \(expires)")

            let verified = try await Self.ftcCall(client, .post, "/apple/verify-receipt", key: key, json: ["receiptData": .string(receipt)])
            #expect(verified.status == .ok && verified.json["status"].int == 0)
            #expect((verified.json["latest_receipt_info"].array)?.first?["transaction_id"].string == "2000000300000002")

            // Errors: 400 unparsable (message only), 422 missing_field with the field, 401 and 404 with a message.
            let unparsable = try await Self.ftcCall(client, .post, "/apple/link", key: key, raw: "{not json")
            #expect(unparsable.status == .badRequest && unparsable.json["message"].string != nil && unparsable.json["error"] == nil)
            let missing = try await Self.ftcCall(client, .post, "/apple/link", key: key, json: ["originalTxId": .string(otid)])
            #expect(missing.status == .unprocessableContent && Self.ftcError(missing) == ("ftcId", "missing_field"), "\(missing.json)")
            #expect(missing.json["message"].string == "Missing required field")
            let missingReceipt = try await Self.ftcCall(client, .post, "/apple/verify-receipt", key: key, json: [:])
            #expect(Self.ftcError(missingReceipt) == ("receiptData", "missing_field"))
            let bad = try await Self.ftcCall(client, .post, "/apple/verify-receipt", key: key, json: ["receiptData": "bm90IGEgcmVjZWlwdA=="])
            #expect(bad.status == .unprocessableContent && Self.ftcError(bad) == ("verification", "invalid"), "\(bad.json)")
            let anonymous = try await Self.ftcCall(client, .get, "/apple/subs/\(otid)", key: nil)
            #expect(anonymous.status == .unauthorized && anonymous.json["message"].string != nil && anonymous.json["error"] == nil)
            let badKey = try await Self.ftcCall(client, .get, "/apple/subs/\(otid)", key: "berth_nope")
            #expect(badKey.status == .unauthorized && badKey.json["message"].string != nil && badKey.json["success"] == nil, "\(badKey.json)")
            let unknown = try await Self.ftcCall(client, .get, "/apple/subs/999", key: key)
            #expect(unknown.status == .notFound && unknown.json["message"].string != nil)
            #expect(try await Self.ftcCall(client, .post, "/apple/link", key: key, json: ["ftcId": "f1", "originalTxId": "999"]).status == .notFound)

            let linked = try await Self.ftcCall(client, .post, "/apple/link", key: key, json: ["ftcId": "f1", "originalTxId": .string(otid)])
            #expect(linked.status == .ok, "\(linked.json)")
            #expect(
                linked.json["ftcId"].string == "f1" && linked.json["payMethod"].string == "apple"
                    && linked.json["appleSubsId"].string == otid
            )
            #expect((linked.json["expireDate"].string)?.count == 10 && linked.json.members?.keys.contains("stripeSubsId") == true)
            #expect(
                try await Self.ftcCall(client, .post, "/apple/link", key: key, json: ["ftcId": "f1", "originalTxId": .string(otid)]).status == .ok,
                "linking again syncs"
            )

            let cheat = try await Self.ftcCall(client, .post, "/apple/link", key: key, json: ["ftcId": "f2", "originalTxId": .string(otid)])
            #expect(cheat.status == .unprocessableContent && Self.ftcError(cheat) == ("originalTxId", "linked_to_other_ftc"), "\(cheat.json)")
            let cheats = try await client.call(.get, "/api/admin/subscriptions/cheats", auth: admin)
            #expect((cheats.json["items"].array)?.first?["userId"].string == "f2")

            let list = try await Self.ftcCall(client, .get, "/apple/subs?page=1&per_page=10", key: key, ftcId: "f1")
            #expect(list.json["total"].int == 1 && list.json["page"].int == 1 && list.json["limit"].int == 10)
            let row = try #require((list.json["data"].array)?.first)
            #expect(row["inUse"].bool == true && row["ftcUserId"].string == "f1")
            #expect(Self.ftcError(try await Self.ftcCall(client, .get, "/apple/subs", key: key)) == ("X-Ftc-Id", "missing_field"))

            let kept = try await Self.ftcCall(client, .get, "/apple/receipt/\(otid)", key: key)
            #expect(kept.json["receipt"].string == receipt, "the tenant keeps receipts")
            let refreshed = try await Self.ftcCall(client, .patch, "/apple/subs/\(otid)", key: key)
            #expect(refreshed.status == .ok && refreshed.json["ftcUserId"].string == "f1", "\(refreshed.json)")

            let wrongAccount = try await Self.ftcCall(client, .post, "/apple/unlink", key: key, json: ["ftcId": "f2", "originalTxId": .string(otid)])
            #expect(wrongAccount.status == .unprocessableContent && Self.ftcError(wrongAccount) == ("ftcId", "invalid"))
            #expect(
                try await Self.ftcCall(client, .post, "/apple/unlink", key: key, json: ["ftcId": "f1", "originalTxId": .string(otid)]).status
                    == .noContent
            )
            let unlinks = try await client.call(.get, "/api/admin/subscriptions/unlinks", auth: admin)
            let archive = try #require((unlinks.json["items"].array)?.first)
            #expect(archive["userId"].string == "f1" && (archive["membershipSnapshot"].string)?.contains(otid) == true)
            #expect(
                try await Self.ftcCall(client, .post, "/apple/link", key: key, json: ["ftcId": "f2", "originalTxId": .string(otid)]).status == .ok,
                "after the unlink another account may link it"
            )

            // The Production base of the same tenant refuses a Sandbox receipt.
            let production = try await client.execute(
                uri: "/ftc-test/api/v1/apple/subs",
                method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: ["receiptData": receipt]))
            ) { response in
                Reply(status: response.status, data: Data(response.body.readableBytesView))
            }
            #expect(production.status == .unprocessableContent && Self.ftcError(production) == ("verification", "invalid"))
        }
    }

    @Test("Berth's own link routes: a membership paid elsewhere blocks the link (has_valid_non_iap) until it expires; force switches subscriptions")
    func linkWithMemberships() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.ftc, .server)
        try await harness.app().test(.router) { client in
            let now = harness.clock.now()
            for (user, otid) in [("dee", "2000000400000001"), ("dee", "2000000400000002")] {
                // The second subscription: bought by an account that already uses the first.
                let reply = try await Self.claim(
                    client,
                    harness,
                    key: key,
                    user: user,
                    Self.period(harness, transaction: otid, original: otid, start: now)
                )
                #expect(reply.status == .ok)
            }
            let list = try await client.call(.get, "/api/subscriptions?page=1&per_page=5", auth: key, user: "dee")
            #expect(list.json["total"].int == 2)
            #expect(((list.json["data"].array) ?? []).filter { $0["inUse"].bool == true }.count == 1)
            let second = try await client.call(
                .post,
                "/api/subscriptions/link",
                auth: key,
                user: "dee",
                json: ["originalTransactionId": "2000000400000002"]
            )
            #expect(second.status == .unprocessableContent && second.errorCode == "linked_to_other_iap")
            let forced = try await client.call(
                .post,
                "/api/subscriptions/link",
                auth: key,
                user: "dee",
                json: ["originalTransactionId": "2000000400000002", "force": true]
            )
            #expect(forced.status == .ok && forced.json["originalTransactionId"].string == "2000000400000002", "\(forced.json)")

            // Eve pays elsewhere (recorded by the app's backend) until later than the subscription would run.
            let recorded = try await client.call(
                .put,
                "/api/admin/memberships/eve",
                auth: key,
                json: ["payMethod": "alipay", "tier": "premium", "cycle": "year", "expiresAt": "2099-01-01T00:00:00Z"]
            )
            #expect(recorded.status == .ok, "\(recorded.json)")
            let otid = "2000000400000003"
            #expect(
                try await Self.claim(client, harness, key: key, user: "eve", Self.period(harness, transaction: otid, original: otid, start: now))
                    .status == .ok
            )
            let refused = try await client.call(
                .post,
                "/api/subscriptions/link",
                auth: key,
                user: "eve",
                json: ["originalTransactionId": .string(otid)]
            )
            #expect(refused.status == .unprocessableContent && refused.errorCode == "has_valid_non_iap", "\(refused.json)")
            #expect(try await Self.entitlements(client, key: key, user: "eve").isPremium == true)
            let expired = try await client.call(
                .put,
                "/api/admin/memberships/eve",
                auth: key,
                json: ["payMethod": "alipay", "expiresAt": "2000-01-01T00:00:00Z"]
            )
            #expect(expired.status == .ok)
            let linked = try await client.call(
                .post,
                "/api/subscriptions/link",
                auth: key,
                user: "eve",
                json: ["originalTransactionId": .string(otid)]
            )
            #expect(linked.status == .ok && linked.json["payMethod"].string == "apple")
            #expect(
                try await client.call(.put, "/api/admin/memberships/eve", auth: key, json: ["expiresAt": "2099-01-01T00:00:00Z"]).errorCode
                    == "linked_to_other_iap",
                "an account using an Apple subscription keeps it until it is unlinked"
            )
            let appKey = try await harness.apiKey(Self.ftc, .client)
            #expect(
                try await client.call(.put, "/api/admin/memberships/eve", auth: appKey, user: "eve", json: ["expiresAt": "2099-01-01T00:00:00Z"])
                    .status == .forbidden,
                "the key shipped in the app cannot record memberships"
            )
            #expect(
                try await client.call(.post, "/api/subscriptions/unlink", auth: key, user: "dee", json: ["originalTransactionId": .string(otid)])
                    .errorCode
                    == "invalid"
            )
            #expect(
                try await client.call(.post, "/api/subscriptions/unlink", auth: key, user: "eve", json: ["originalTransactionId": .string(otid)])
                    .status
                    == .noContent
            )
            #expect(try await client.call(.get, "/api/subscriptions/\(otid)", auth: key, user: "eve").status == .notFound, "no longer hers")
        }
    }

    @Test("a page number past every listing is refused (Berth's list) or shows the last page (FT Chinese's), never a crash")
    func hugePages() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let app = try await harness.apiKey(Self.ftc, .client)
        try await harness.app().test(.router) { client in
            let refused = try await client.call(.get, "/api/subscriptions?page=9223372036854775807&per_page=200", auth: app, user: "li")
            #expect(refused.status == .badRequest && refused.errorCode == "invalid_query", "\(refused.json)")
            #expect(try await client.call(.get, "/api/subscriptions?page=51&per_page=200", auth: app, user: "li").status == .ok)
            let ftc = try await Self.ftcCall(client, .get, "/apple/subs?page=9223372036854775807", key: app, ftcId: "f-1")
            #expect(ftc.status == .ok && ftc.json["total"].int == 0, "\(ftc.json)")
        }
    }

    @Test("from the app, an ownerless subscription is linked only with the store's proof: a JWS on Berth's route, the receipt on FT Chinese's")
    func linkNeedsProof() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let app = try await harness.apiKey(Self.ftc, .client)
        try await harness.app().test(.router) { client in
            let now = harness.clock.now()
            // Apple reports two subscriptions before anyone claimed them: they have no owner yet.
            let first = Self.period(harness, transaction: "2000000900000001", original: "2000000900000001", start: now.addingTimeInterval(-60))
            let second = Self.period(harness, transaction: "2000000900000002", original: "2000000900000002", start: now.addingTimeInterval(-60))
            _ = try await Self.notify(client, harness, .subscribed, transaction: first)
            _ = try await Self.notify(client, harness, .subscribed, transaction: second)

            let bare = try await client.call(
                .post,
                "/api/subscriptions/link",
                auth: app,
                user: "mallory",
                json: ["originalTransactionId": "2000000900000001"]
            )
            #expect(bare.status == .forbidden && bare.errorCode == "proof_required", "a bare id links nothing from the app: \(bare.json)")
            let wrong = try await client.call(
                .post,
                "/api/subscriptions/link",
                auth: app,
                user: "mallory",
                json: ["originalTransactionId": "2000000900000001", "jwsRepresentation": try .string(harness.ca.signTransaction(second))]
            )
            #expect(wrong.status == .unprocessableContent && wrong.errorCode == "transaction_mismatch", "\(wrong.json)")
            let proven = try await client.call(
                .post,
                "/api/subscriptions/link",
                auth: app,
                user: "nia",
                json: ["originalTransactionId": "2000000900000001", "jwsRepresentation": try .string(harness.ca.signTransaction(first))]
            )
            #expect(proven.status == .ok && proven.json["payMethod"].string == "apple", "\(proven.json)")
            #expect(Self.state(try await Self.entitlements(client, key: app, user: "nia"), "2000000900000001") == "active")

            // FT Chinese's app links with the device's receipt.
            let receipt = try Self.receipt(
                harness,
                original: "2000000900000002",
                periods: [("2000000900000002", now.addingTimeInterval(-60), now.addingTimeInterval(30 * Self.day))]
            )
            let missing = try await Self.ftcCall(client, .post, "/apple/link", key: app, json: ["ftcId": "f-9", "originalTxId": "2000000900000002"])
            #expect(
                missing.status == .unprocessableContent && missing.json["error"]["field"].string == "receiptData",
                "\(missing.json)"
            )
            let linked = try await Self.ftcCall(
                client,
                .post,
                "/apple/link",
                key: app,
                json: ["ftcId": .string("f-9"), "originalTxId": .string("2000000900000002"), "receiptData": .string(receipt)]
            )
            #expect(linked.status == .ok && linked.json["appleSubsId"].string == "2000000900000002", "\(linked.json)")
            #expect(
                try await Self.ftcCall(client, .get, "/apple/receipt/2000000900000002", key: app).status == .forbidden,
                "stored receipts are for the backend"
            )
        }
    }
}

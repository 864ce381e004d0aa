import AppleSignedData
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import TestKit
import Testing

@testable import HTTPAPI

/// `POST /api/validator/{tenant}` with the bodies cordova-plugin-purchase (and its Capacitor build)
/// sends: `apple-sk2` (jwsRepresentation, transaction.id = product id) and `ios-appstore`
/// (appStoreReceipt, transaction.id = transaction id), always answered with HTTP 200.
@Suite("cordova-plugin-purchase validator")
struct CordovaValidatorTests {
    static let tenant = CreditsTests.stylist
    static let bundle = CreditsTests.stylistBundle

    /// The body the plugin builds for a StoreKit 2 transaction (trimmed of device details it adds).
    static func sk2Body(jws: String, product: String, user: JSON?) -> JSON {
        var body: JSON = [
            "id": .string(bundle), "type": "application",
            "products": [["type": "consumable", "id": .string(product), "offers": []]],
            "transaction": ["type": "apple-sk2", "id": .string(product), "jwsRepresentation": .string(jws)],
            "device": ["plugin": "cordova-plugin-purchase/13.12.1", "platform": "ios"],
        ]
        if let user { body["additionalData"] = ["applicationUsername": user] }
        return body
    }

    static func ok(_ reply: Reply) -> Bool { reply.json["ok"].bool == true }
    static func data(_ reply: Reply) -> JSON { reply.json["data"] }
    static func collection(_ reply: Reply) -> [JSON] { data(reply)["collection"].array ?? [] }

    @Test("a StoreKit 2 purchase validates once: ok with the purchase in collection; the same again is ok and adds nothing; another user is refused")
    func storeKit2() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            let jws = try harness.purchase(CreditsTests.popular, transactionId: "3100000000000001", bundleId: Self.bundle)
            let first = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: key,
                json: Self.sk2Body(jws: jws, product: CreditsTests.popular, user: "ana")
            )
            #expect(first.status == .ok)
            #expect(Self.ok(first), "\(first.json)")
            #expect(
                first.headers[HTTPField.Name("X-Berth-Answer-User")!] == nil && first.headers[HTTPField.Name("X-Berth-Signature")!] != nil,
                "the tenant signs (its shipped test key) and never sends the signer's internal note"
            )
            #expect(Self.data(first)["id"].string == Self.bundle)
            #expect(Self.data(first)["latest_receipt"].bool == true)
            let transaction = Self.data(first)["transaction"]
            #expect(transaction["type"].string == "apple-sk2")
            #expect(transaction["transaction_id"].string == "3100000000000001")
            let entry = Self.collection(first).first ?? [:]
            #expect(entry["id"].string == CreditsTests.popular)
            #expect(entry["transactionId"].string == "3100000000000001")
            #expect((entry["purchaseDate"].int ?? 0) > 1_600_000_000_000, "milliseconds since 1970")
            #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == 52, "50 credits + the signup bonus of 2")

            let again = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: key,
                json: Self.sk2Body(jws: jws, product: CreditsTests.popular, user: "ana")
            )
            #expect(Self.ok(again))
            #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == 52, "applied once")
            #expect(try await harness.count("purchases") == 1)

            // applicationUsername may be a number; another user replaying the transaction is refused.
            let stolen = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: key,
                json: Self.sk2Body(jws: jws, product: CreditsTests.popular, user: 42)
            )
            #expect(stolen.status == .ok, "the plugin reads refusals from HTTP 200 bodies")
            #expect(stolen.json["ok"].bool == false)
            #expect(stolen.json["code"].int == 6_777_007, "PAYMENT_INVALID")
            #expect(stolen.json["status"].int == 409)
            #expect(stolen.json["error"]["code"].string == "transaction_already_used")
            #expect(try await harness.count("replay_attempts") == 1)
        }
    }

    @Test(
        "a tampered signed transaction, a wrong key, another app's key and a missing user: HTTP 200 with ok false and the plugin's codes; nothing applied"
    )
    func refusals() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        let otherKey = try await harness.apiKey("zorya-test", .client)
        try await harness.app().test(.router) { client in
            let jws = try harness.purchase(CreditsTests.popular, transactionId: "3100000000000002", bundleId: Self.bundle)
            var parts = jws.split(separator: ".").map(String.init)
            // Flip the payload: the quantity, say, as a cheater would.
            var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            text += String(repeating: "=", count: (4 - text.count % 4) % 4)
            let payload = Data(base64Encoded: text) ?? Data()
            var object = try #require(try JSON.parse(payload).members)
            object["quantity"] = 100
            parts[1] = try JSONEncoder().encode(JSON.object(object)).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let tampered = parts.joined(separator: ".")
            let refused = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: key,
                json: Self.sk2Body(jws: tampered, product: CreditsTests.popular, user: "ana")
            )
            #expect(refused.status == .ok)
            #expect(refused.json["ok"].bool == false, "\(refused.json)")
            #expect(refused.json["code"].int == 6_777_017, "VERIFICATION_FAILED")
            #expect(refused.json["status"].int == 422)
            #expect((refused.json["message"].string)?.isEmpty == false)

            let wrongKey = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: "berth_nope",
                json: Self.sk2Body(jws: jws, product: CreditsTests.popular, user: "ana")
            )
            #expect(wrongKey.status == .ok)
            #expect(wrongKey.json["ok"].bool == false)
            #expect(wrongKey.json["code"].int == 6_777_005, "CLIENT_INVALID")
            #expect(wrongKey.json["status"].int == 401)

            let otherApp = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: otherKey,
                json: Self.sk2Body(jws: jws, product: CreditsTests.popular, user: "ana")
            )
            #expect(otherApp.json["ok"].bool == false)
            #expect(otherApp.json["status"].int == 403)

            let noUser = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: key,
                json: Self.sk2Body(jws: jws, product: CreditsTests.popular, user: nil)
            )
            #expect(noUser.json["ok"].bool == false)
            #expect(noUser.json["error"]["code"].string == "missing_user")

            let noKey = try await client.call(
                .post,
                "/api/validator/\(Self.tenant)",
                auth: nil,
                json: Self.sk2Body(jws: jws, product: CreditsTests.popular, user: "ana")
            )
            #expect(noKey.status == .ok)
            #expect(noKey.json["code"].int == 6_777_005)

            let notJSON = try await client.call(.post, "/api/validator/\(Self.tenant)", auth: key, raw: "{not json")
            #expect(notJSON.status == .ok)
            #expect(notJSON.json["ok"].bool == false)
            #expect(try await harness.count("purchases") == 0, "nothing was applied")
        }
    }

    @Test("an app receipt (ios-appstore) with the key in the URL, as a validator URL string carries it")
    func appReceipt() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            let receipt = try harness.receipt(CreditsTests.starter, transactionId: "3100000000000003", bundleId: Self.bundle)
            let body: JSON = [
                "id": .string(Self.bundle), "type": "application",
                "transaction": ["type": .string("ios-appstore"), "id": .string("3100000000000003"), "appStoreReceipt": .string(receipt)],
                "additionalData": ["applicationUsername": "ana"],
            ]
            let reply = try await client.call(.post, "/api/validator/\(Self.tenant)?key=\(key)", auth: nil, json: body)
            #expect(reply.status == .ok)
            #expect(Self.ok(reply), "\(reply.json)")
            #expect(Self.data(reply)["transaction"]["type"].string == "ios-appstore")
            #expect(Self.collection(reply).first?["id"].string == CreditsTests.starter, "the product comes from the receipt")
            #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == 12)

            // The application receipt itself (transaction.id = the bundle id): its newest purchase, already applied.
            var application = body
            application["transaction"] = ["type": "ios-appstore", "id": .string(Self.bundle), "appStoreReceipt": .string(receipt)]
            let again = try await client.call(.post, "/api/validator/\(Self.tenant)?key=\(key)", auth: nil, json: application)
            #expect(Self.ok(again), "\(again.json)")
            #expect(try await harness.count("purchases") == 1)

            let android: JSON = [
                "id": "x", "transaction": ["type": "android-playstore", "id": "GPA.1", "purchaseToken": "t"],
                "additionalData": ["applicationUsername": "ana"],
            ]
            let unsupported = try await client.call(.post, "/api/validator/\(Self.tenant)?key=\(key)", auth: nil, json: android)
            // An app without Google Play: the plugin's refusal, with Berth's code.
            #expect(unsupported.json["ok"].bool == false)
            #expect(unsupported.json["error"]["code"].string == "google_play_not_configured", "\(unsupported.json)")
        }
    }

    @Test("the application receipt at launch, before anything was bought: ok with an empty collection; a tampered one is refused")
    func emptyAppReceipt() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            var empty = AppReceipt.testReceipt(bundleId: Self.bundle, productId: "unused", created: harness.clock.now())
            empty.inAppPurchases = []
            let signed = try harness.receiptCA.signReceipt(empty)
            let body: JSON = [
                "id": .string(Self.bundle), "type": "application",
                "transaction": ["type": "ios-appstore", "id": .string(Self.bundle), "appStoreReceipt": .string(Data(signed).base64EncodedString())],
                "additionalData": ["applicationUsername": "ana"],
            ]
            let reply = try await client.call(.post, "/api/validator/\(Self.tenant)?key=\(key)", auth: nil, json: body)
            #expect(reply.status == .ok)
            #expect(Self.ok(reply), "\(reply.json)")
            #expect(Self.collection(reply).isEmpty)
            #expect(Self.data(reply)["id"].string == Self.bundle)
            let transaction = Self.data(reply)["transaction"].object
            #expect(transaction?["type"].string == "ios-appstore")
            #expect(transaction?["bundle_id"].string == Self.bundle)
            #expect(try await harness.count("purchases") == 0)

            // The same receipt with one byte of its signed content changed does not verify.
            var tampered = signed
            tampered[tampered.count / 2] ^= 0x01
            var forged = body
            forged["transaction"] = [
                "type": "ios-appstore", "id": .string(Self.bundle), "appStoreReceipt": .string(Data(tampered).base64EncodedString()),
            ]
            let refused = try await client.call(.post, "/api/validator/\(Self.tenant)?key=\(key)", auth: nil, json: forged)
            #expect(refused.status == .ok)
            #expect(refused.json["ok"].bool == false, "\(refused.json)")
            #expect(refused.json["code"].int == 6_777_017)
        }
    }
}

import AppleSignedData
import AppleStandIn
import Crypto
import Domain
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import TestKit
import Testing

@testable import HTTPAPI
@testable import UseCases

/// cordova-plugin-purchase 13.18 as it talks to a validator, step by step through launches and
/// purchases: the bodies its Apple adapter builds (StoreKit 1: the whole application receipt with
/// `transaction.id` the last transaction or `appstore.application`; StoreKit 2: the JWS with the
/// product id), and what it keeps of the answers (``PluginPicture``, its `owned()` rule). One app
/// sells a subscription, a credit pack and a lifetime unlock.
@Suite("cordova-plugin-purchase through launches and purchases")
struct CordovaPluginFlowTests {
    static let tenant = "ftchinese-test"
    static let bundle = "com.ft.ftchinese.mobile"
    static let monthly = SubscriptionsTests.monthly
    static let coins = "com.ft.ftchinese.mobile.coins10"
    static let lifetime = "com.ft.ftchinese.mobile.pro.lifetime"
    static let day: TimeInterval = 86_400

    /// What the plugin keeps from validator answers: `VerifiedReceipt`s keyed by platform and
    /// `data.id` (a new answer replaces the previous one), and `owned(product)`: the newest purchase
    /// of the product in any collection, unless `isExpired` or its `expiryDate` has passed.
    struct PluginPicture {
        var receipts: [String: [JSON]] = [:]

        mutating func keep(_ reply: Reply) {
            guard reply.json["ok"].bool == true, let data = reply.json["data"].object, let id = data["id"].string else { return }
            receipts["ios-appstore:" + id] = data["collection"].array ?? []
        }

        func owned(_ product: String, now: Date) -> Bool {
            var found: JSON?
            for collection in receipts.values {
                for purchase in collection where purchase["id"].string == product {
                    if (found?["purchaseDate"].int64 ?? 0) < (purchase["purchaseDate"].int64 ?? 1) {
                        found = purchase
                    }
                }
            }
            guard let found else { return false }
            if found["isExpired"].bool == true { return false }
            if let expiry = found["expiryDate"].int64 { return expiry > now.epochMilliseconds }
            return true
        }
    }

    static func make(tokensMatchUsers: Bool = false) async throws -> Harness {
        try await Harness.make(customize: { catalog in
            guard let index = catalog.tenants.firstIndex(where: { $0.id == tenant }),
                let stylist = catalog.tenants.first(where: { $0.id == CreditsTests.stylist })
            else { return }
            catalog.tenants[index].credits = stylist.credits
            catalog.tenants[index].products += [
                Product(id: coins, kind: .credits, type: "Consumable", title: "10 coins", credits: 10, creditType: "credits"),
                Product(id: lifetime, kind: .unlock, type: "Non-Consumable", title: "Pro forever", entitlement: "pro"),
            ]
            if tokensMatchUsers { catalog.tenants[index].appAccountTokenMatchesUserId = true }
        })
    }

    /// One receipt entry: (product, transaction, original transaction, purchase date, expiry for subscriptions).
    typealias Entry = (product: String, id: String, original: String, at: Date, expires: Date?)

    static func receipt(_ harness: Harness, _ entries: [Entry]) throws -> String {
        var receipt = AppReceipt.testReceipt(bundleId: bundle, productId: "unused", created: harness.clock.now())
        func stamp(_ date: Date) -> AppleTimestamp { AppleTimestamp(millisecondsSince1970: Int64(date.timeIntervalSince1970.rounded(.down)) * 1000) }
        receipt.originalApplicationVersion = "7"
        receipt.inAppPurchases = entries.map { entry in
            var purchase = AppReceipt.InAppPurchase()
            purchase.quantity = 1
            purchase.productId = entry.product
            purchase.transactionId = entry.id
            purchase.originalTransactionId = entry.original
            purchase.purchaseDate = stamp(entry.at)
            purchase.originalPurchaseDate = stamp(entry.at)
            purchase.subscriptionExpirationDate = entry.expires.map(stamp)
            return purchase
        }
        return Data(try harness.receiptCA.signReceipt(receipt)).base64EncodedString()
    }

    /// The body the plugin's validator posts for the application receipt (StoreKit 1 mode).
    static func storeKit1(_ receipt: String, transactionId: String, user: String) -> JSON {
        [
            "id": .string(bundle), "type": "application",
            "products": [
                ["type": "paid subscription", "id": .string(monthly), "offers": []], ["type": "consumable", "id": .string(coins), "offers": []],
            ],
            "transaction": ["type": "ios-appstore", "id": .string(transactionId), "appStoreReceipt": .string(receipt)],
            "additionalData": ["applicationUsername": .string(user), "obfuscatedUsername": .string(AccountTokens.cordovaPlugin(user))],
            "device": ["plugin": "cordova-plugin-purchase/13.18.0", "platform": "ios"],
        ]
    }

    /// The body for a StoreKit 2 transaction (`transaction.id` is the product id).
    static func storeKit2(_ jws: String, product: String, user: String) -> JSON {
        [
            "id": .string(bundle), "type": "application",
            "transaction": ["type": "apple-sk2", "id": .string(product), "jwsRepresentation": .string(jws)],
            "additionalData": ["applicationUsername": .string(user), "obfuscatedUsername": .string(AccountTokens.cordovaPlugin(user))],
            "device": ["plugin": "cordova-plugin-purchase/13.18.0", "platform": "ios"],
        ]
    }

    static func validate(_ client: some TestClientProtocol, key: String, _ body: JSON) async throws -> Reply {
        let reply = try await client.call(.post, "/api/validator/\(tenant)", auth: key, json: body)
        #expect(reply.status == .ok)
        return reply
    }

    static func entry(_ reply: Reply, transaction: String) -> JSON? {
        CordovaValidatorTests.collection(reply).first { $0["transactionId"].string == transaction }
    }

    @Test(
        "StoreKit 1: an empty receipt at launch, two unfinished packs in one receipt (both credited), a subscription, then a relaunch that still owns it"
    )
    func storeKit1() async throws {
        let harness = try await Self.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            var plugin = PluginPicture()
            let now = harness.clock.now()

            // First launch: the application receipt holds nothing yet.
            let empty = try await Self.validate(
                client,
                key: key,
                Self.storeKit1(try Self.receipt(harness, []), transactionId: "appstore.application", user: "ana")
            )
            #expect(CordovaValidatorTests.ok(empty), "\(empty.json)")
            #expect(CordovaValidatorTests.collection(empty).isEmpty)
            let application = CordovaValidatorTests.data(empty)["transaction"].object
            #expect(application?["original_application_version"].string == "7", "the plugin dates the install from it")
            plugin.keep(empty)
            let bonus = try await CreditsTests.balance(client, key: key, user: "ana")?.balance ?? 0

            // Two packs bought while offline: one receipt, the plugin names the last one and then
            // finishes both. Both are credited, once.
            let packs = try Self.receipt(
                harness,
                [
                    (Self.coins, "4100000000000001", "4100000000000001", now, nil),
                    (Self.coins, "4100000000000002", "4100000000000002", now.addingTimeInterval(5), nil),
                ]
            )
            let both = try await Self.validate(client, key: key, Self.storeKit1(packs, transactionId: "4100000000000002", user: "ana"))
            #expect(CordovaValidatorTests.ok(both), "\(both.json)")
            #expect(CordovaValidatorTests.data(both)["transaction"]["transaction_id"].string == "4100000000000002")
            #expect(
                Self.entry(both, transaction: "4100000000000001") != nil && Self.entry(both, transaction: "4100000000000002") != nil,
                "both packs this call applied are listed: \(CordovaValidatorTests.collection(both))"
            )
            #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == bonus + 20)
            plugin.keep(both)
            #expect(plugin.owned(Self.coins, now: now))
            // The same receipt again (the plugin retries after a timeout): nothing more.
            let retry = try await Self.validate(client, key: key, Self.storeKit1(packs, transactionId: "4100000000000002", user: "ana"))
            #expect(CordovaValidatorTests.ok(retry))
            #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == bonus + 20)
            #expect(try await harness.count("purchases") == 2)

            // A subscription (the packs were finished, so the receipt now holds only it).
            let subscription = try Self.receipt(
                harness,
                [(Self.monthly, "4200000000000001", "4200000000000001", now, now.addingTimeInterval(30 * Self.day))]
            )
            let subscribed = try await Self.validate(client, key: key, Self.storeKit1(subscription, transactionId: "4200000000000001", user: "ana"))
            #expect(CordovaValidatorTests.ok(subscribed), "\(subscribed.json)")
            let record = try #require(Self.entry(subscribed, transaction: "4200000000000001"))
            #expect(record["id"].string == Self.monthly)
            #expect(
                record["expiryDate"].int64 == Int64(now.addingTimeInterval(30 * Self.day).timeIntervalSince1970.rounded(.down))
                    * 1000
            )
            #expect(record["isExpired"].bool == false)
            #expect(record["cancelationReason"].string == "", "not cancelled, in the plugin's words")
            plugin.keep(subscribed)
            #expect(plugin.owned(Self.monthly, now: now))

            // Relaunch: a fresh plugin validates the application receipt; it still owns the subscription.
            var relaunched = PluginPicture()
            let launch = try await Self.validate(client, key: key, Self.storeKit1(subscription, transactionId: "appstore.application", user: "ana"))
            #expect(CordovaValidatorTests.ok(launch), "\(launch.json)")
            relaunched.keep(launch)
            #expect(relaunched.owned(Self.monthly, now: now))
            #expect(!relaunched.owned(Self.coins, now: now), "finished packs are not held after a relaunch")
            #expect(try await harness.count("purchases") == 3)

            // The subscription lapses: still listed, expired, not cancelled; no longer owned.
            harness.clock.advance(31 * Self.day)
            let later = harness.clock.now()
            let lapsed = try await Self.validate(client, key: key, Self.storeKit1(subscription, transactionId: "appstore.application", user: "ana"))
            let expired = try #require(Self.entry(lapsed, transaction: "4200000000000001"))
            #expect(expired["isExpired"].bool == true)
            #expect(expired["cancelationReason"].string == "")
            relaunched.keep(lapsed)
            #expect(!relaunched.owned(Self.monthly, now: later))
        }
    }

    @Test("StoreKit 2: a subscription, a lifetime unlock and a credit pack in one launch; every answer still lists what the user owns")
    func storeKit2() async throws {
        let harness = try await Self.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            var plugin = PluginPicture()
            let now = harness.clock.now()
            let period = SubscriptionsTests.period(harness, transaction: "4300000000000001", original: "4300000000000001", start: now)
            let subscribed = try await Self.validate(
                client,
                key: key,
                Self.storeKit2(try harness.ca.signTransaction(period), product: Self.monthly, user: "bo")
            )
            #expect(CordovaValidatorTests.ok(subscribed), "\(subscribed.json)")
            plugin.keep(subscribed)
            #expect(plugin.owned(Self.monthly, now: now))

            let unlock = TransactionPayload.testPurchase(
                bundleId: Self.bundle,
                productId: Self.lifetime,
                transactionId: "4300000000000002",
                type: .nonConsumable,
                purchaseDate: now,
                signedDate: now
            )
            let unlocked = try await Self.validate(
                client,
                key: key,
                Self.storeKit2(try harness.ca.signTransaction(unlock), product: Self.lifetime, user: "bo")
            )
            #expect(CordovaValidatorTests.ok(unlocked), "\(unlocked.json)")
            plugin.keep(unlocked)

            let pack = TransactionPayload.testPurchase(
                bundleId: Self.bundle,
                productId: Self.coins,
                transactionId: "4300000000000003",
                purchaseDate: now,
                signedDate: now
            )
            let credited = try await Self.validate(
                client,
                key: key,
                Self.storeKit2(try harness.ca.signTransaction(pack), product: Self.coins, user: "bo")
            )
            #expect(CordovaValidatorTests.ok(credited), "\(credited.json)")
            plugin.keep(credited)
            // The last answer replaced the others in the plugin: it must still hold all three.
            #expect(plugin.owned(Self.monthly, now: now), "buying credits must not make the subscription look not owned")
            #expect(plugin.owned(Self.lifetime, now: now))
            #expect(plugin.owned(Self.coins, now: now))
            #expect(Set(CordovaValidatorTests.collection(credited).compactMap { $0["id"].string }) == [Self.monthly, Self.lifetime, Self.coins])
            #expect(Self.entry(credited, transaction: "4300000000000002")?["expiryDate"].isNull != false, "a lifetime unlock has no expiry")
            // Another user's picture holds none of it.
            var other = PluginPicture()
            let pack2 = TransactionPayload.testPurchase(
                bundleId: Self.bundle,
                productId: Self.coins,
                transactionId: "4300000000000004",
                purchaseDate: now,
                signedDate: now
            )
            other.keep(
                try await Self.validate(client, key: key, Self.storeKit2(try harness.ca.signTransaction(pack2), product: Self.coins, user: "cy"))
            )
            #expect(!other.owned(Self.monthly, now: now) && !other.owned(Self.lifetime, now: now))
        }
    }

    @Test(
        "the plugin's default obfuscator: a tenant that ties appAccountToken to users accepts the token the plugin derives from the user, and only for that user"
    )
    func obfuscatedToken() async throws {
        #expect(AccountTokens.cordovaPlugin("hello") == "5d41402a-bc4b-3a76-8971-9d911017c592", "the plugin's own test vector (md5toUUID)")
        #expect(AccountTokens.cordovaPlugin("") == "")
        let harness = try await Self.make(tokensMatchUsers: true)
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            let token = try #require(UUID(uuidString: AccountTokens.cordovaPlugin("cleo")))
            let pack = TransactionPayload.testPurchase(
                bundleId: Self.bundle,
                productId: Self.coins,
                transactionId: "4400000000000001",
                appAccountToken: token,
                signedDate: harness.clock.now()
            )
            let jws = try harness.ca.signTransaction(pack)
            let stolen = try await Self.validate(client, key: key, Self.storeKit2(jws, product: Self.coins, user: "dan"))
            #expect(stolen.json["ok"].bool == false)
            #expect(stolen.json["error"]["code"].string == "account_token_mismatch")
            let own = try await Self.validate(client, key: key, Self.storeKit2(jws, product: Self.coins, user: "cleo"))
            #expect(CordovaValidatorTests.ok(own), "\(own.json)")
            #expect(try await harness.count("purchases") == 1)
        }
    }
}

/// No paid consumable lost at launch: the plugin, holding two unfinished transactions, posts only
/// the last one to the validator and then finishes both.
extension CordovaPluginFlowTests {
    static func pack(_ harness: Harness, _ id: String, user: String?) throws -> (payload: TransactionPayload, jws: String) {
        let payload = TransactionPayload.testPurchase(
            bundleId: bundle,
            productId: coins,
            transactionId: id,
            appAccountToken: user.flatMap { UUID(uuidString: AccountTokens.cordovaPlugin($0)) },
            signedDate: harness.clock.now()
        )
        return (payload, try harness.ca.signTransaction(payload))
    }

    static func balance(_ client: some TestClientProtocol, _ harness: Harness, user: String) async throws -> Int? {
        let server = try await harness.apiKey(tenant, .server)
        let account = try await CreditsTests.balance(client, key: server, user: user)
        return account.map { Int($0.balance) }
    }

    @Test(
        "with Apple's notifications: the transaction the plugin never posted reaches its user, whether ONE_TIME_CHARGE arrives before the validator call or after it"
    )
    func launchLossThroughNotifications() async throws {
        let harness = try await Self.make()
        defer { harness.close() }
        let key = try await harness.apiKey(Self.tenant, .client)
        try await harness.app().test(.router) { client in
            func notify(_ payload: TransactionPayload) async throws -> String? {
                try await client.call(
                    .post,
                    "/api/apple/notifications/\(Self.tenant)",
                    auth: nil,
                    json: [
                        "signedPayload": try .string(harness.ca.signNotification(type: .oneTimeCharge, bundleId: Self.bundle, transaction: payload))
                    ]
                )
                .json["outcome"].string
            }
            // Without the App Store Server API key, the operator is told what Berth cannot recover.
            let admin = try await harness.apiKey(Self.tenant, .admin)
            let app = try await client.call(.get, "/api/admin/app", auth: admin).json["app"].object
            let notices = app?["notices"].array
            #expect(notices?.map { $0["code"].string } == ["no_app_store_server_api"], "\(String(describing: app))")
            #expect((notices?.first?["message"].string)?.contains("apple.serverAPI") == true)
            // Before: the notification of the first pack waits; the plugin's call with the second applies both.
            let first = try Self.pack(harness, "4500000000000001", user: "nia"), second = try Self.pack(harness, "4500000000000002", user: "nia")
            #expect(try await notify(first.payload) == "unclaimed_purchase")
            #expect(CordovaValidatorTests.ok(try await Self.validate(client, key: key, Self.storeKit2(second.jws, product: Self.coins, user: "nia"))))
            #expect(try await Self.balance(client, harness, user: "nia") == 22, "2 free + both packs")
            // After: the validator call records the user's token; Apple's later notification of the first pack goes to them at once.
            let third = try Self.pack(harness, "4500000000000003", user: "omar"), fourth = try Self.pack(harness, "4500000000000004", user: "omar")
            #expect(
                CordovaValidatorTests.ok(try await Self.validate(client, key: key, Self.storeKit2(fourth.jws, product: Self.coins, user: "omar")))
            )
            #expect(try await notify(third.payload) == "applied_to_token_user")
            #expect(try await Self.balance(client, harness, user: "omar") == 22)
        }
    }

    @Test(
        "with the App Store Server API: the validation reads the customer's history and applies the transaction the plugin never posted; at most once per user in 10 minutes"
    )
    func launchLossThroughHistory() async throws {
        let apiKey = P256.Signing.PrivateKey()
        let standIn = AppleStandIn(apiKey: apiKey.publicKey, issuerId: "issuer-1", bundleId: Self.bundle)
        try await Application(router: standIn.router()).test(.live) { apple in
            let harness = try await Harness.make(
                appleStandIn: (try #require(apple.port), apiKey.pemRepresentation),
                customize: { catalog in
                    guard let index = catalog.tenants.firstIndex(where: { $0.id == Self.tenant }),
                        let stylist = catalog.tenants.first(where: { $0.id == CreditsTests.stylist })
                    else { return }
                    catalog.tenants[index].credits = stylist.credits
                    catalog.tenants[index].products += [
                        Product(id: Self.coins, kind: .credits, type: "Consumable", title: "10 coins", credits: 10, creditType: "credits")
                    ]
                }
            )
            defer { harness.close() }
            let key = try await harness.apiKey(Self.tenant, .client)
            try await harness.app().test(.router) { client in
                let admin = try await harness.apiKey(Self.tenant, .admin)
                let app = try await client.call(.get, "/api/admin/app", auth: admin).json["app"].object
                #expect((app?["notices"].array)?.isEmpty == true, "with the key nothing is left unrecoverable: \(String(describing: app))")
                // The first pack was bought before the user signed in (no token); the plugin posts only the second.
                let first = try Self.pack(harness, "4600000000000001", user: nil), second = try Self.pack(harness, "4600000000000002", user: "pia")
                standIn.state.withLock { $0.historyPages = [[first.jws, second.jws]] }
                #expect(
                    CordovaValidatorTests.ok(try await Self.validate(client, key: key, Self.storeKit2(second.jws, product: Self.coins, user: "pia")))
                )
                #expect(try await Self.balance(client, harness, user: "pia") == 22, "2 free + both packs")
                #expect(try await harness.rows("SELECT user_id FROM purchases WHERE transaction_id = '4600000000000001'").first?["user_id"] == "pia")
                let reads = { standIn.requests.count { $0.path.contains("/inApps/v2/history/") } }
                #expect(reads() == 1)
                // Another validation soon after does not ask Apple again; ten minutes later it does.
                let third = try Self.pack(harness, "4600000000000003", user: "pia")
                #expect(
                    CordovaValidatorTests.ok(try await Self.validate(client, key: key, Self.storeKit2(third.jws, product: Self.coins, user: "pia")))
                )
                #expect(reads() == 1)
                harness.clock.advance(601)
                let fourth = try Self.pack(harness, "4600000000000004", user: "pia")
                #expect(
                    CordovaValidatorTests.ok(try await Self.validate(client, key: key, Self.storeKit2(fourth.jws, product: Self.coins, user: "pia")))
                )
                #expect(reads() == 2)
                // A transaction of someone else's put on a named user by the public key (no token of theirs) opens no history.
                let foreign = try Self.pack(harness, "4600000000000005", user: nil)
                harness.clock.advance(601)
                #expect(
                    CordovaValidatorTests.ok(
                        try await Self.validate(client, key: key, Self.storeKit2(foreign.jws, product: Self.coins, user: "quin"))
                    )
                )
                #expect(reads() == 2)
            }
        }
    }
}

import AppleSignedData
import BerthApp
import Domain
import Foundation
import GooglePlayAPI
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOFoundationCompat
import PlayStandIn
import TestKit
import Testing
import UseCases
import _CryptoExtras

@testable import BerthWorkers
@testable import HTTPAPI

/// Google Play end to end, over real HTTP on loopback: Berth with the shipped `aistylist-test` and
/// `braindumpster-test` tenants pointed at the Play stand-in (token endpoint, Play Developer API and
/// push key set), purchases registered with the stand-in and pushes signed as Pub/Sub signs them.
@Suite("Google Play")
struct GooglePlayTests {
    static let credits = "com.aiimagestylist.credits.popular"
    static let stylist = "com.aiimagestylist.app"
    static let yearly = "brain_dumpster_yearly_premium"
    static let brain = "com.braindumpster.app"

    struct Rig: Sendable {
        var harness: Harness
        var kit: PlayTestKit
        var standIn: PlayStandIn
        var client: any TestClientProtocol
        var stylistKey: String
        var brainKey: String

        /// Berth's Play jobs as another instance would run them (its own lease owner).
        func jobs(owner: String) -> PlayJobs {
            PlayJobs(
                store: harness.services.store,
                tenants: harness.services.tenants,
                receive: ReceivePlayNotification(store: harness.services.store, kinds: .all, clock: harness.clock, logger: harness.services.logger),
                clock: harness.clock,
                logger: harness.services.logger,
                owner: owner
            )
        }

        func verify(_ key: String, user: String, product: String, token: String) async throws -> Reply {
            try await client.call(
                .post,
                "/api/verify-purchase",
                auth: key,
                user: user,
                json: ["productId": .string(product), "purchaseToken": .string(token)]
            )
        }

        /// Sends a push as the stand-in's CLI prints it.
        func push(_ tenant: String, _ push: PlayTestKit.Push) async throws -> Reply {
            var headers: HTTPFields = [.contentType: "application/json", .authorization: push.authorization]
            headers[.userAgent] = "APIs-Google"
            return try await client.execute(
                uri: "/api/google/notifications/\(tenant)",
                method: .post,
                headers: headers,
                body: ByteBuffer(data: try JSONEncoder().encode(push.body))
            ) { response in
                Reply(status: response.status, data: Data(response.body.readableBytesView), headers: response.headers)
            }
        }

        func balance(_ user: String) async throws -> Int? {
            let reply = try await client.call(.get, "/api/credits", auth: stylistKey, user: user)
            return ((reply.json["credits"].array)?.first?["available"].int)
        }

        func premium(_ user: String) async throws -> Bool? {
            try await client.call(.get, "/api/entitlements", auth: brainKey, user: user).json["isPremium"].bool
        }
    }

    /// One service account and push key for every test (RSA key generation is the costly part), copied
    /// into each test's own TestKit directory.
    static let keys: Result<URL, any Error> = Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-play-keys-\(UUID().uuidString)")
        _ = try PlayTestKit.initialize(directory)
        return directory
    }

    /// Berth (background jobs off: the tests run them as instances would) and the stand-in.
    /// - Parameter tiesAccounts: `aistylist-test` ties purchases to accounts (`appAccountTokenMatchesUserId`).
    /// - Parameters:
    ///   - customize, environment, clock: more of the catalog, environment and clock (the month-of-money test adds the card rail).
    static func withPlay(
        tiesAccounts: Bool = false,
        customize more: (@Sendable (inout Catalog) -> Void)? = nil,
        environment extra: [String: String] = [:],
        clock: TestClock = TestClock(),
        _ body: @Sendable (Rig) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-play-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for file in ["service-account.json", "push-signing-key.pem"] {
            try FileManager.default.copyItem(at: try Self.keys.get().appendingPathComponent(file), to: directory.appendingPathComponent(file))
        }
        let kit = try PlayTestKit.initialize(directory)
        let standIn = PlayStandIn(kit: kit)
        try await Application(router: standIn.router()).test(.live) { play in
            let harness = try await Harness.make(
                customize: { catalog in
                    if tiesAccounts, let index = catalog.tenants.firstIndex(where: { $0.id == "aistylist-test" }) {
                        catalog.tenants[index].appAccountTokenMatchesUserId = true
                    }
                    more?(&catalog)
                },
                environment: [
                    "PLAY_TEST_SERVICE_ACCOUNT": directory.appendingPathComponent("service-account.json").path,
                    "PLAY_TEST_BASE_URL": "http://127.0.0.1:\(try #require(play.port))",
                ].merging(extra) { first, _ in first },
                clock: clock
            )
            defer { harness.close() }
            var services = harness.services
            services.playJobsInterval = nil
            services.cardPaymentJobsInterval = nil
            try await buildApplication(services: services, server: ServerConfiguration(host: "127.0.0.1", port: 0)).test(.live) { client in
                try await body(
                    Rig(
                        harness: harness,
                        kit: kit,
                        standIn: standIn,
                        client: client,
                        stylistKey: try await harness.apiKey("aistylist-test", .client),
                        brainKey: try await harness.apiKey("braindumpster-test", .client)
                    )
                )
            }
        }
    }

    @Test(
        "a credit pack bought on Android: credited once, a replay by another user refused (409), consumed exactly once though Google fails twice and Berth restarts, a voided purchase claws the credits back"
    )
    func creditPackOnAndroid() async throws {
        try await Self.withPlay { rig in
            let token = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false, accountId: "mai").token
            let bought = try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: token)
            #expect(bought.status == .ok, "\(bought.json)")
            #expect(bought.json["creditsAdded"].int == 50 && bought.json["newBalance"].int == 52)
            #expect(bought.purchase?["store"].string == "google_play" && bought.purchase?["environment"].string == "Sandbox")
            #expect(bought.purchase?["transactionId"].string == token)
            // The same user again: the same answer, nothing added.
            let again = try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: token)
            #expect(again.status == .ok && again.json["newBalance"].int == 52)
            // Another user with Mai's token: refused and recorded.
            let replay = try await rig.verify(rig.stylistKey, user: "tom", product: Self.credits, token: token)
            #expect(
                replay.status == .conflict && replay.errorCode == "transaction_already_used" && replay.errorField == "purchaseToken",
                "\(replay.json)"
            )
            #expect(try await rig.balance("tom") == 2)

            // What Berth owes Google: one consumption, written with the credits.
            let owed = try await rig.harness.services.store.read { try $0.play.acknowledgements(tenantId: "aistylist-test", purchaseToken: token) }
            #expect(owed.map(\.action) == [.consume] && owed.first?.status == .pending)
            // The alert gauges count it as owed (not yet overdue).
            await BackgroundJobs.playGauges(rig.jobs(owner: "gauges"), metrics: rig.harness.services.metrics)
            let exposition = rig.harness.services.metrics.render().split(separator: "\n")
            let owedLine = exposition.first { $0.hasPrefix("berth_play_unacknowledged{") && $0.contains("aistylist-test") }
            let overdueLine = exposition.first { $0.hasPrefix("berth_play_unacknowledged_overdue{") && $0.contains("aistylist-test") }
            #expect(owedLine.map { $0.hasSuffix(" 1") || $0.hasSuffix(" 1.0") } == true, "\(exposition.filter { $0.contains("berth_play") })")
            #expect(overdueLine.map { $0.hasSuffix(" 0") || $0.hasSuffix(" 0.0") } == true, "\(exposition.filter { $0.contains("berth_play") })")
            // Google fails the first two tries; the first instance dies after its first; another carries on.
            rig.standIn.fail("consume", count: 2)
            #expect(await rig.jobs(owner: "instance-1").acknowledgeDue() == 1)
            let second = rig.jobs(owner: "instance-2")
            #expect(await second.acknowledgeDue() == 0)  // not due yet: the backoff
            rig.harness.clock.advance(3)
            #expect(await second.acknowledgeDue() == 1)
            rig.harness.clock.advance(5)
            #expect(await second.acknowledgeDue() == 1)
            rig.harness.clock.advance(3600)
            #expect(await second.acknowledgeDue() == 0)
            let record = try #require(rig.kit.record(token))
            #expect(record.consumed && record.consumeCalls == 1, "\(record)")
            let done = try #require(
                try await rig.harness.services.store.read { try $0.play.acknowledgements(tenantId: "aistylist-test", purchaseToken: token) }.first
            )
            #expect(done.status == .done && done.attempts == 3)

            // Google refunds it: the push (and its redelivery) takes the 50 credits back once.
            let push = try rig.kit.notify(package: Self.stylist, token: token, type: "VOIDED_PURCHASE")
            let voided = try await rig.push("aistylist-test", push)
            #expect(voided.status == .ok && voided.json["outcome"].string == "credits_refunded", "\(voided.json)")
            let redelivered = try await rig.push("aistylist-test", push)
            #expect(redelivered.status == .ok && redelivered.json["duplicate"].bool == true)
            #expect(try await rig.balance("mai") == 2)
            // The sweep finds the same void and applies nothing twice.
            #expect(await rig.jobs(owner: "instance-2").sweepVoided(force: true) <= 1)
            #expect(try await rig.balance("mai") == 2)
        }
    }

    @Test("V4: a pending purchase stays with the first user who sent it: a second user's sending is refused 409 and audited")
    func pendingPurchaseKeepsFirstSender() async throws {
        try await Self.withPlay { rig in
            var record = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false)
            record.purchaseState = 2
            try rig.kit.save(record)
            let victim = try await rig.verify(rig.stylistKey, user: "hoa", product: Self.credits, token: record.token)
            #expect(victim.status == .conflict && victim.errorCode == "purchase_pending", "\(victim.json)")
            let attacker = try await rig.verify(rig.stylistKey, user: "eve", product: Self.credits, token: record.token)
            #expect(attacker.status == .conflict && attacker.errorCode == "transaction_already_used", "\(attacker.json)")
            let again = try await rig.verify(rig.stylistKey, user: "hoa", product: Self.credits, token: record.token)
            #expect(again.errorCode == "purchase_pending", "the first sender keeps it: \(again.json)")
            let audit = try await rig.harness.services.store.read { tx in
                try tx.audit.audit(tenantId: "aistylist-test", page: Page(limit: 50, offset: 0)).items
            }
            #expect(audit.contains { $0.actor == "user:eve" && $0.action == "replay.detected" }, "the second sender is audited as a replay")
            let paid = try await rig.push(
                "aistylist-test",
                try rig.kit.notify(package: Self.stylist, token: record.token, type: "ONE_TIME_PRODUCT_PURCHASED")
            )
            #expect(paid.json["outcome"].string == "pending_purchase_applied", "\(paid.json)")
            let hoa = try #require(try await rig.balance("hoa"))
            let eve = try await rig.balance("eve") ?? 0
            #expect(hoa > eve, "the buyer got the credits: hoa \(hoa), eve \(eve)")
        }
    }

    @Test(
        "a one-time purchase sent while Google waited for payment (409 purchase_pending) is applied to its user when Google tells of the payment, once"
    )
    func pendingPurchaseCompletes() async throws {
        try await Self.withPlay { rig in
            var record = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false)
            record.purchaseState = 2
            try rig.kit.save(record)
            let waiting = try await rig.verify(rig.stylistKey, user: "ana", product: Self.credits, token: record.token)
            #expect(waiting.status == .conflict && waiting.errorCode == "purchase_pending", "\(waiting.json)")
            let before = try await rig.balance("ana") ?? 0

            // The payment goes through; Google pushes ONE_TIME_PRODUCT_PURCHASED. The app is closed by now.
            let paid = try await rig.push(
                "aistylist-test",
                try rig.kit.notify(package: Self.stylist, token: record.token, type: "ONE_TIME_PRODUCT_PURCHASED")
            )
            #expect(paid.status == .ok && paid.json["outcome"].string == "pending_purchase_applied", "\(paid.json)")
            let after = try #require(try await rig.balance("ana"))
            #expect(after > before, "\(before) → \(after)")
            #expect(await rig.jobs(owner: "a").acknowledgeDue() == 1, "what Berth owes Google for it is owed too")

            // The app sends it again later: already hers, nothing more. Nobody else can take it.
            let again = try await rig.verify(rig.stylistKey, user: "ana", product: Self.credits, token: record.token)
            #expect(again.status == .ok, "\(again.json)")
            #expect(try await rig.balance("ana") == after)
            #expect(try await rig.verify(rig.stylistKey, user: "eve", product: Self.credits, token: record.token).status == .conflict)
            // Google's push delivered twice changes nothing.
            let twice = try await rig.push(
                "aistylist-test",
                try rig.kit.notify(package: Self.stylist, token: record.token, type: "ONE_TIME_PRODUCT_PURCHASED")
            )
            #expect(twice.status == .ok && twice.json["outcome"].string == "recorded", "\(twice.json)")
            #expect(try await rig.balance("ana") == after)
        }
    }

    @Test("a refund whose push was lost is found by the voided-purchases sweep, once")
    func voidedSweep() async throws {
        try await Self.withPlay { rig in
            let token = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false).token
            #expect(try await rig.verify(rig.stylistKey, user: "lan", product: Self.credits, token: token).status == .ok)
            #expect(try await rig.balance("lan") == 52)
            _ = try rig.kit.notify(package: Self.stylist, token: token, type: "VOIDED_PURCHASE")  // the push is never delivered
            let jobs = rig.jobs(owner: "sweeper")
            #expect(await jobs.sweepVoided(force: true) == 1)
            #expect(try await rig.balance("lan") == 2)
            #expect(await jobs.sweepVoided(force: true) == 0)
            #expect(await jobs.sweepVoided() == 0)  // not due again before its interval
            // A purchase voided before anyone claimed it never grants anything.
            let early = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false).token
            _ = try rig.kit.notify(package: Self.stylist, token: early, type: "VOIDED_PURCHASE")
            let refused = try await rig.verify(rig.stylistKey, user: "lan", product: Self.credits, token: early)
            #expect(refused.status != .ok && refused.json["newBalance"] == nil, "\(refused.json)")
            #expect(try await rig.balance("lan") == 2)
            // A subscription refunded without a push: the sweep revokes it.
            let yearly = try rig.kit.purchase(package: Self.brain, productId: Self.yearly, subscription: true, periodDays: 365).token
            #expect(try await rig.verify(rig.brainKey, user: "lan", product: Self.yearly, token: yearly).status == .ok)
            #expect(try await rig.premium("lan") == true)
            _ = try rig.kit.notify(package: Self.brain, token: yearly, type: "VOIDED_PURCHASE")
            // This sweep finds it and the early one above (remembered as revoked, as Apple's refunds of unclaimed transactions are).
            #expect(await jobs.sweepVoided(force: true) == 2)
            let revoked = try await rig.client.call(.get, "/api/entitlements", auth: rig.brainKey, user: "lan")
            #expect(revoked.json["isPremium"].bool == false, "\(revoked.json)")
            #expect((try revoked.decode(EntitlementsResponse.self)).entitlements.first?.state == "revoked", "\(revoked.json)")
        }
    }

    @Test(
        "a subscription bought on Android: premium from Google's state, acknowledged once, a renewal push extends it, another account cannot take it, expiry ends it"
    )
    func subscriptionOnAndroid() async throws {
        try await Self.withPlay { rig in
            let token = try rig.kit.purchase(
                package: Self.brain,
                productId: Self.yearly,
                subscription: true,
                basePlanId: "yearly",
                accountId: "ana",
                periodDays: 365
            ).token
            let bought = try await rig.verify(rig.brainKey, user: "ana", product: Self.yearly, token: token)
            #expect(bought.status == .ok, "\(bought.json)")
            let subscription = try #require(bought.json["subscription"].object)
            #expect(subscription["state"].string == "active" && subscription["originalTransactionId"].string == token)
            let firstExpiry = try #require(subscription["expiresAt"].string)
            let held = try await rig.client.call(.get, "/api/entitlements", auth: rig.brainKey, user: "ana")
            #expect(held.json["isPremium"].bool == true)
            #expect((try held.decode(EntitlementsResponse.self)).entitlements.first?.source == "google_play_subscription", "\(held.json)")

            #expect(await rig.jobs(owner: "a").acknowledgeDue() == 1)
            #expect(rig.kit.record(token)?.acknowledgeCalls == 1)
            #expect(await rig.jobs(owner: "a").acknowledgeDue() == 0)

            let renewed = try await rig.push(
                "braindumpster-test",
                try rig.kit.notify(package: Self.brain, token: token, type: "SUBSCRIPTION_RENEWED")
            )
            #expect(renewed.status == .ok && renewed.json["outcome"].string == "subscription_active", "\(renewed.json)")
            let after = try await rig.client.call(.get, "/api/entitlements", auth: rig.brainKey, user: "ana")
            let expiry = try #require((after.json["entitlements"].array)?.first?["expiresAt"].string)
            let extended = try #require(APITimeText.parse(expiry)).timeIntervalSince(try #require(APITimeText.parse(firstExpiry)))
            #expect(abs(extended - 365 * 86_400) < 5, "\(firstExpiry) → \(expiry) \(after.json)")

            let taken = try await rig.verify(rig.brainKey, user: "eve", product: Self.yearly, token: token)
            #expect(taken.status == .conflict, "\(taken.json)")
            #expect(try await rig.premium("eve") == false)

            let expired = try await rig.push(
                "braindumpster-test",
                try rig.kit.notify(package: Self.brain, token: token, type: "SUBSCRIPTION_EXPIRED")
            )
            #expect(expired.json["outcome"].string == "subscription_expired", "\(expired.json)")
            #expect(try await rig.premium("ana") == false)
        }
    }

    @Test(
        "linkedPurchaseToken: a resubscription or plan change ends the old subscription at once, and the new one is the old owner's even when Google's push comes first"
    )
    func linkedPurchaseTokenChain() async throws {
        try await Self.withPlay { rig in
            let old = try rig.kit.purchase(package: Self.brain, productId: Self.yearly, subscription: true, basePlanId: "yearly", periodDays: 365)
                .token
            #expect(try await rig.verify(rig.brainKey, user: "ana", product: Self.yearly, token: old).status == .ok)

            // On her phone Ana changes plan: Google issues a new token that names the old one, and pushes it before the app calls Berth.
            let new = try rig.kit.purchase(
                package: Self.brain,
                productId: Self.yearly,
                subscription: true,
                basePlanId: "yearly",
                periodDays: 365,
                linkedPurchaseToken: old
            ).token
            let pushed = try await rig.push("braindumpster-test", try rig.kit.notify(package: Self.brain, token: new, type: "SUBSCRIPTION_PURCHASED"))
            #expect(pushed.status == .ok && pushed.json["outcome"].string == "subscription_active", "\(pushed.json)")

            let listed = try await rig.client.call(.get, "/api/subscriptions", auth: rig.brainKey, user: "ana")
            let states = Dictionary(
                uniqueKeysWithValues: ((listed.json["data"].array) ?? []).compactMap { item in
                    (item["originalTransactionId"].string).map { ($0, item["state"].string ?? "") }
                }
            )
            #expect(states == [old: "upgraded", new: "active"], "\(listed.json)")
            let held = try await rig.client.call(.get, "/api/entitlements", auth: rig.brainKey, user: "ana")
            let answer = try held.decode(EntitlementsResponse.self)
            #expect(answer.isPremium)
            #expect(answer.entitlements.filter { $0.state == "active" }.map(\.originalTransactionId) == [new], "\(held.json)")
            #expect(answer.membership?.originalTransactionId == new)

            // The app sends the new token for Ana: hers already. Nobody else can take it.
            #expect(try await rig.verify(rig.brainKey, user: "ana", product: Self.yearly, token: new).status == .ok)
            #expect(try await rig.verify(rig.brainKey, user: "eve", product: Self.yearly, token: new).status == .conflict)
            // Google expiring the old token later changes nothing for Ana.
            _ = try await rig.push("braindumpster-test", try rig.kit.notify(package: Self.brain, token: old, type: "SUBSCRIPTION_EXPIRED"))
            #expect(try await rig.premium("ana") == true)
        }
    }

    @Test("each Google Play renewal is a purchase of its order id, once; voiding a renewal refunds that period's row, not the first purchase")
    func renewalsArePurchases() async throws {
        try await Self.withPlay { rig in
            let admin = try await rig.harness.apiKey("braindumpster-test", .admin)
            func rows() async throws -> [String: String] {
                let listed = try await rig.client.call(.get, "/api/admin/purchases?userId=ana&limit=50", auth: admin)
                return Dictionary(
                    uniqueKeysWithValues: ((listed.json["items"].array) ?? []).compactMap { row in
                        (row["transactionId"].string).map { ($0, row["status"].string ?? "") }
                    }
                )
            }
            let token = try rig.kit.purchase(package: Self.brain, productId: Self.yearly, subscription: true, basePlanId: "yearly", periodDays: 30)
                .token
            #expect(try await rig.verify(rig.brainKey, user: "ana", product: Self.yearly, token: token).status == .ok)
            let order = try #require(rig.kit.record(token)?.orderId)
            #expect(try await rows() == [token: "applied"])

            #expect(
                try await rig.push("braindumpster-test", try rig.kit.notify(package: Self.brain, token: token, type: "SUBSCRIPTION_RENEWED")).status
                    == .ok
            )
            #expect(try await rows() == [token: "applied", "\(order)..0": "applied"])
            // Google tells again of the same period (another message, same state): no second row.
            #expect(
                try await rig.push("braindumpster-test", try rig.kit.notify(package: Self.brain, token: token, type: "SUBSCRIPTION_CANCELED")).status
                    == .ok
            )
            #expect(try await rows().count == 2)
            #expect(
                try await rig.push("braindumpster-test", try rig.kit.notify(package: Self.brain, token: token, type: "SUBSCRIPTION_RENEWED")).status
                    == .ok
            )
            #expect(try await rows() == [token: "applied", "\(order)..0": "applied", "\(order)..1": "applied"])

            // Google refunds the latest period.
            let voided = try await rig.push("braindumpster-test", try rig.kit.notify(package: Self.brain, token: token, type: "VOIDED_PURCHASE"))
            #expect(voided.status == .ok, "\(voided.json)")
            #expect(try await rows() == [token: "applied", "\(order)..0": "applied", "\(order)..1": "refunded"])
        }
    }

    @Test("linkedPurchaseToken when the app calls first: the old subscription ends as the new token is verified")
    func linkedPurchaseTokenVerifiedFirst() async throws {
        try await Self.withPlay { rig in
            let old = try rig.kit.purchase(package: Self.brain, productId: Self.yearly, subscription: true, basePlanId: "yearly", periodDays: 365)
                .token
            #expect(try await rig.verify(rig.brainKey, user: "bo", product: Self.yearly, token: old).status == .ok)
            let new = try rig.kit.purchase(
                package: Self.brain,
                productId: Self.yearly,
                subscription: true,
                basePlanId: "yearly",
                periodDays: 30,
                linkedPurchaseToken: old
            ).token
            let verified = try await rig.verify(rig.brainKey, user: "bo", product: Self.yearly, token: new)
            #expect(verified.status == .ok, "\(verified.json)")
            let oldState = try await rig.client.call(.get, "/api/subscriptions/\(old)", auth: rig.brainKey, user: "bo")
            #expect(oldState.json["state"].string == "upgraded", "\(oldState.json)")
            let membership = try await rig.client.call(.get, "/api/entitlements", auth: rig.brainKey, user: "bo").json["membership"].object
            #expect(membership?["originalTransactionId"].string == new, "\(membership ?? [:])")
        }
    }

    @Test("the same user with an iOS and an Android subscription to one entitlement keeps it while either is live")
    func iosAndAndroid() async throws {
        try await Self.withPlay { rig in
            let now = rig.harness.clock.now()
            // iOS: a period that ends in two days.
            var period = TransactionPayload.testPurchase(
                bundleId: Self.brain,
                productId: Self.yearly,
                transactionId: "2000000111",
                originalTransactionId: "2000000111",
                type: .autoRenewableSubscription,
                purchaseDate: now,
                signedDate: now,
                expiresDate: now.addingTimeInterval(2 * 86_400)
            )
            period.environment = .sandbox
            let jws = try rig.harness.ca.signTransaction(period)
            let ios = try await rig.client.call(
                .post,
                "/api/verify-purchase",
                auth: rig.brainKey,
                user: "kim",
                json: ["productId": .string(Self.yearly), "jwsRepresentation": .string(jws)]
            )
            #expect(ios.status == .ok, "\(ios.json)")
            // Android: a year.
            let token = try rig.kit.purchase(package: Self.brain, productId: Self.yearly, subscription: true, periodDays: 365).token
            #expect(try await rig.verify(rig.brainKey, user: "kim", product: Self.yearly, token: token).status == .ok)
            let both = try await rig.client.call(.get, "/api/entitlements", auth: rig.brainKey, user: "kim")
            #expect(
                Set(try both.decode(EntitlementsResponse.self).entitlements.compactMap(\.source)) == [
                    "app_store_subscription", "google_play_subscription",
                ],
                "\(both.json)"
            )
            // The iOS period ends: Android keeps the entitlement.
            rig.harness.clock.advance(3 * 86_400)
            #expect(try await rig.premium("kim") == true)
            // Android ends too: no entitlement left.
            _ = try await rig.push(
                "braindumpster-test",
                try rig.kit.notify(package: Self.brain, token: token, type: "SUBSCRIPTION_EXPIRED", now: rig.harness.clock.now())
            )
            #expect(try await rig.premium("kim") == false)
        }
    }

    @Test(
        "pushes that are not Google's for this endpoint are refused and change nothing: no token, a forged signature, another audience, another service account, another app"
    )
    func pushAuthentication() async throws {
        try await Self.withPlay { rig in
            let token = try rig.kit.purchase(package: Self.brain, productId: Self.yearly, subscription: true).token
            #expect(try await rig.verify(rig.brainKey, user: "ana", product: Self.yearly, token: token).status == .ok)
            let genuine = try rig.kit.notify(package: Self.brain, token: token, type: "SUBSCRIPTION_CANCELED")
            var unsigned = genuine
            unsigned.authorization = ""
            // The same claims and key id, signed by a key that is not in Google's set.
            let forger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let parts = try #require(RS256JWT.parts(String(genuine.authorization.dropFirst(7))))
            var forged = genuine
            forged.authorization = "Bearer " + (try RS256JWT.sign(claims: parts.claims, kid: parts.kid, key: forger))
            var otherAudience = genuine
            otherAudience.authorization = "Bearer " + (try rig.kit.pushToken(audience: "https://example.com/push"))
            var otherAccount = genuine
            otherAccount.authorization = "Bearer " + (try rig.kit.pushToken(audience: Self.brain, email: "someone@evil.iam.gserviceaccount.com"))
            for (name, push) in [("unsigned", unsigned), ("forged", forged), ("audience", otherAudience), ("account", otherAccount)] {
                let reply = try await rig.push("braindumpster-test", push)
                #expect(reply.status == .unauthorized, "\(name): \(reply.status) \(reply.json)")
            }
            // Another app's genuine push at this endpoint: its package is not this tenant's.
            let stylistToken = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false).token
            let foreign = try rig.kit.notify(package: Self.stylist, token: stylistToken, type: "ONE_TIME_PRODUCT_PURCHASED", audience: Self.brain)
            #expect(try await rig.push("braindumpster-test", foreign).status == .unprocessableContent)
            // Google's token on a body that is not a Pub/Sub push of a developer notification: 400.
            var junk = genuine
            junk.body.message?.data = Data("not a notification".utf8).base64EncodedString()
            let malformed = try await rig.push("braindumpster-test", junk)
            #expect(malformed.status == .badRequest && malformed.errorCode == "malformed", "\(malformed.json)")
            // A tenant without Play takes no pushes.
            #expect(try await rig.push("seaboo-test", genuine).status == .notFound)
            // Nothing was applied: the record still renews; the genuine push then does apply.
            let subscriptions = try await rig.client.call(.get, "/api/entitlements", auth: rig.brainKey, user: "ana")
            #expect((try subscriptions.decode(EntitlementsResponse.self)).entitlements.first?.autoRenew == true, "\(subscriptions.json)")
            let applied = try await rig.push("braindumpster-test", genuine)
            #expect(applied.status == .ok && applied.json["duplicate"].bool == false, "\(applied.json)")
            let after = try await rig.client.call(.get, "/api/entitlements", auth: rig.brainKey, user: "ana")
            #expect((try after.decode(EntitlementsResponse.self)).entitlements.first?.autoRenew == false, "\(after.json)")
        }
    }

    @Test("refusals: an unknown token (422), Google down (503, nothing written), a tenant without Play (422), a token of another product (422)")
    func refusals() async throws {
        try await Self.withPlay { rig in
            let unknown = try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: "not-a-token-google-issued")
            #expect(
                unknown.status == .unprocessableContent && unknown.errorCode == "purchase_token_invalid" && unknown.errorField == "purchaseToken",
                "\(unknown.json)"
            )
            let token = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false).token
            rig.standIn.fail("get", count: 1)
            let down = try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: token)
            #expect(down.status == .serviceUnavailable && down.errorCode == "google_play_unavailable", "\(down.json)")
            #expect(try await rig.balance("mai") == 2)
            let package = try await rig.client.call(
                .post,
                "/api/verify-purchase",
                auth: rig.stylistKey,
                user: "mai",
                json: ["productId": .string(Self.credits), "purchaseToken": .string(token), "packageName": "com.other.app"]
            )
            #expect(
                package.status == .unprocessableContent && package.errorCode == "invalid_field" && package.errorField == "packageName",
                "\(package.json)"
            )
            let other = try await rig.verify(rig.stylistKey, user: "mai", product: "com.aiimagestylist.credits.starter", token: token)
            #expect(other.status == .unprocessableContent && other.errorCode == "purchase_token_invalid", "\(other.json)")
            let seaboo = try await rig.client.call(
                .post,
                "/api/verify-purchase",
                auth: rig.harness.serverKey,
                user: "mai",
                json: ["productId": "it.seaboo.rental.basic", "purchaseToken": .string(token), "bookingId": 1]
            )
            #expect(seaboo.status != .ok, "\(seaboo.json)")
            #expect(try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: token).status == .ok)
        }
    }

    @Test(
        "obfuscatedExternalAccountId binds a purchase to its user where the app ties purchases to accounts: the user id or cordova's md5 of it; another account's or none refused"
    )
    func accountBinding() async throws {
        try await Self.withPlay(tiesAccounts: true) { rig in
            for (user, accountId) in [("mai", "mai"), ("lan", AccountTokens.cordovaPluginHex("lan"))] {
                let token = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false, accountId: accountId).token
                let bought = try await rig.verify(rig.stylistKey, user: user, product: Self.credits, token: token)
                #expect(bought.status == .ok && bought.json["newBalance"].int == 52, "\(user): \(bought.json)")
            }
            let mais = try rig.kit.purchase(
                package: Self.stylist,
                productId: Self.credits,
                subscription: false,
                accountId: AccountTokens.cordovaPluginHex("mai")
            ).token
            let other = try await rig.verify(rig.stylistKey, user: "tom", product: Self.credits, token: mais)
            #expect(
                other.status == .unprocessableContent && other.errorCode == "account_token_mismatch" && other.errorField == "purchaseToken",
                "\(other.json)"
            )
            let anonymous = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false).token
            let missing = try await rig.verify(rig.stylistKey, user: "tom", product: Self.credits, token: anonymous)
            #expect(missing.status == .unprocessableContent && missing.errorCode == "account_token_missing", "\(missing.json)")
            #expect(try await rig.balance("tom") == 2)
            // Mai's purchase is still hers to claim.
            #expect(try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: mais).json["newBalance"].int == 102)
        }
    }

    @Test("cordova-plugin-purchase's android-playstore transaction goes through the validator and answers the plugin's shape")
    func cordovaValidator() async throws {
        try await Self.withPlay { rig in
            let record = try rig.kit.purchase(
                package: Self.stylist,
                productId: Self.credits,
                subscription: false,
                accountId: AccountTokens.cordovaPluginHex("mai")
            )
            let original =
                #"{"orderId":"\#(record.orderId)","packageName":"\#(Self.stylist)","productId":"\#(Self.credits)","purchaseTime":1,"purchaseState":0,"purchaseToken":"\#(record.token)","quantity":1,"acknowledged":false}"#
            let body: JSON = [
                "id": .string(Self.credits), "type": "consumable",
                "transaction": [
                    "type": .string("android-playstore"), "id": .string(record.orderId), "purchaseToken": .string(record.token),
                    "signature": .string("c2lnbmF0dXJl"),
                    "receipt": .string(original),
                ],
                "additionalData": ["applicationUsername": "mai"],
            ]
            let reply = try await rig.client.call(.post, "/api/validator/aistylist-test", auth: rig.stylistKey, json: body)
            #expect(reply.status == .ok && reply.json["ok"].bool == true, "\(reply.json)")
            let data = try #require(reply.json["data"].object)
            let transaction = try #require(data["transaction"].object)
            #expect(transaction["type"].string == "android-playstore" && transaction["bundle_id"].string == Self.stylist)
            #expect(transaction["transaction_id"].string == record.token)
            let collection = try #require(data["collection"].array)
            #expect(collection.contains { $0["platform"].string == "android-playstore" && $0["id"].string == Self.credits }, "\(collection)")
            #expect(try await rig.balance("mai") == 52)
            // Another user replaying it through the validator: the plugin's refusal shape.
            var replay = body
            replay["additionalData"] = ["applicationUsername": "tom"]
            let refused = try await rig.client.call(.post, "/api/validator/aistylist-test", auth: rig.stylistKey, json: replay)
            #expect(refused.status == .ok && refused.json["ok"].bool == false && refused.json["code"].int == 6_777_007, "\(refused.json)")
        }
    }
}

extension GooglePlayTests {
    @Test(
        "T6: a captured push token with a forged void of another customer's purchase revokes nothing (Google does not confirm it); Google's own void is applied"
    )
    func forgedVoidNotBelieved() async throws {
        try await Self.withPlay { rig in
            let tokenA = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false, accountId: "mai").token
            let tokenB = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false, accountId: "lan").token
            #expect(try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: tokenA).status == .ok)
            #expect(try await rig.verify(rig.stylistKey, user: "lan", product: Self.credits, token: tokenB).status == .ok)
            // A genuine push about A; its Authorization header is captured.
            let genuine = try rig.kit.notify(package: Self.stylist, token: tokenA, type: "ONE_TIME_PRODUCT_PURCHASED")
            #expect(try await rig.push("aistylist-test", genuine).status == .ok)
            // The same header on a forged body voiding B.
            var notification = DeveloperNotification(packageName: Self.stylist, eventTime: Date())
            notification.voidedPurchaseNotification = .init(purchaseToken: tokenB, orderId: nil, productType: 2)
            var forged = genuine
            forged.body = PubSubPush(
                message: .init(
                    data: try JSONEncoder().encode(notification).base64EncodedString(),
                    messageId: "forged-1",
                    publishTime: RFC3339.string(Date())
                ),
                subscription: genuine.body.subscription ?? "projects/x/subscriptions/y"
            )
            let replayed = try await rig.push("aistylist-test", forged)
            #expect(replayed.status == .ok && replayed.json["outcome"].string == "void_unconfirmed", "\(replayed.json)")
            #expect(try await rig.balance("lan") == 52, "Google never voided B")
            // More forged voids within the minute cost Google nothing (V3): Google's answers are kept a minute.
            let callsBefore = rig.standIn.requestCount
            for n in 2...20 {
                var again = forged
                again.body.message?.messageId = "forged-\(n)"
                let answer = try await rig.push("aistylist-test", again)
                #expect(answer.status == .serviceUnavailable && answer.headers[.retryAfter] != nil, "\(answer.status)")
            }
            #expect(rig.standIn.requestCount == callsBefore, "no call to Google for the repeats")
            #expect(try await rig.balance("lan") == 52)
            // Google voids B for real: within the minute Pub/Sub is told to retry; once Berth may ask
            // again, the redelivered push is confirmed and applied.
            let real = try rig.kit.notify(package: Self.stylist, token: tokenB, type: "VOIDED_PURCHASE")
            let early = try await rig.push("aistylist-test", real)
            #expect(early.status == .serviceUnavailable, "\(early.json)")
            rig.harness.clock.advance(61)
            let voided = try await rig.push("aistylist-test", real)
            #expect(voided.json["outcome"].string == "credits_refunded", "\(voided.json)")
            #expect(try await rig.balance("lan") == 2)
        }
    }

    @Test("T11: a Play answer without purchaseState is not paid; tokens of only dots are refused before Google is asked")
    func strictPlayAnswers() async throws {
        try await Self.withPlay { rig in
            let token = try rig.kit.purchase(package: Self.stylist, productId: Self.credits, subscription: false, accountId: "mai").token
            rig.standIn.omitPurchaseState = true
            let unsaid = try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: token)
            #expect(unsaid.status == .unprocessableContent && unsaid.errorCode == "purchase_token_invalid", "\(unsaid.json)")
            #expect(try await rig.balance("mai") == 2)
            rig.standIn.omitPurchaseState = false
            #expect(try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: token).status == .ok)
            let before = rig.standIn.requestCount
            for dots in [".", ".."] {
                let reply = try await rig.verify(rig.stylistKey, user: "mai", product: Self.credits, token: dots)
                #expect(reply.status == .unprocessableContent, "\(dots): \(reply.json)")
            }
            #expect(rig.standIn.requestCount == before, "Google was not asked about a path of dots")
        }
    }
}

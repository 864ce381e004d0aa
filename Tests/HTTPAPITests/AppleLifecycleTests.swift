import AppleSignedData
import AppleStandIn
import BerthApp
import Crypto
import Domain
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Synchronization
import TestKit
import Testing
import UseCases

@testable import HTTPAPI

/// A purchase's life after the claim, against the Apple stand-in: refund defence (consent, Send
/// Consumption Information V2 from the credit ledger), the notification-history safety net, Family
/// Sharing, restore, Set App Account Token and renewal-date extensions.
@Suite("Apple lifecycle: notification history, refund defence, Family Sharing, restore, owners, renewal extensions")
struct AppleLifecycleTests {
    static let tenant = CreditsTests.stylist
    static let bundle = CreditsTests.stylistBundle

    /// A harness whose test tenants use a live Apple stand-in (for `bundle`'s bearer tokens) as their App Store Server API.
    static func withStandIn(
        bundle: String,
        customize: (@Sendable (inout Catalog) -> Void)? = nil,
        _ body: @Sendable (AppleStandIn, Harness) async throws -> Void
    ) async throws {
        let apiKey = P256.Signing.PrivateKey()
        let standIn = AppleStandIn(apiKey: apiKey.publicKey, issuerId: "issuer-1", bundleId: bundle)
        try await Application(router: standIn.router()).test(.live) { apple in
            let harness = try await Harness.make(appleStandIn: (try #require(apple.port), apiKey.pemRepresentation), customize: customize)
            defer { harness.close() }
            try await body(standIn, harness)
        }
    }

    @Test(
        "a consumption request for a half-spent credit pack sends 50 % with the recorded consent (V2 body, the tenant's refund preference); without consent nothing is sent"
    )
    func halfSpentPack() async throws {
        try await Self.withStandIn(
            bundle: Self.bundle,
            customize: { catalog in
                guard let index = catalog.tenants.firstIndex(where: { $0.id == Self.tenant }) else { return }
                catalog.tenants[index].apple.refundPreference = .auto
            }
        ) { standIn, harness in
            let key = try await harness.apiKey(Self.tenant, .server)
            try await harness.app().test(.router) { client in
                // The signup bonus (2 credits) is granted at the first read and spent first.
                #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == 2)
                let bonus = try await CreditsTests.reserve(client, key: key, user: "ana", body: ["amount": 2])
                _ = try await CreditsTests.settle(client, key: key, user: "ana", reservation: bonus, "commit")
                harness.clock.advance(60)
                let transaction = TransactionPayload.testPurchase(
                    bundleId: Self.bundle,
                    productId: CreditsTests.popular,
                    transactionId: "3000000000000501",
                    purchaseDate: harness.clock.now()
                )
                let bought = try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: key,
                    user: "ana",
                    json: ["productId": .string(CreditsTests.popular), "jwsRepresentation": try .string(harness.ca.signTransaction(transaction))]
                )
                #expect(bought.json["newBalance"].int == 50)
                // 25 of the pack's 50 spent.
                let spend = try await CreditsTests.reserve(client, key: key, user: "ana", body: ["amount": 25])
                _ = try await CreditsTests.settle(client, key: key, user: "ana", reservation: spend, "commit")

                func request() async throws -> Reply {
                    try await client.call(
                        .post,
                        "/api/apple/notifications/\(Self.tenant)",
                        auth: nil,
                        json: [
                            "signedPayload": try .string(
                                harness.ca.signNotification(
                                    type: .consumptionRequest,
                                    bundleId: Self.bundle,
                                    transaction: transaction
                                )
                            )
                        ]
                    )
                }
                #expect(try await request().json["outcome"].string == "consumption_requested")
                #expect(!standIn.requests.contains { $0.path.contains("/consumption/") }, "no consent recorded: Apple is told nothing")

                let never = try await client.call(.get, "/api/consumption-consent", auth: key, user: "ana")
                #expect(never.status == .ok && never.json["consented"].bool == false && never.json["recordedAt"] == nil)
                let given = try await client.call(
                    .put,
                    "/api/consumption-consent",
                    auth: key,
                    user: "ana",
                    json: ["consented": true, "textVersion": "refund-terms-2026-11"]
                )
                #expect(given.status == .ok && given.json["consented"].bool == true, "\(given.json)")
                #expect(
                    try await client.call(.put, "/api/consumption-consent", auth: key, user: "ana", json: ["consented": true]).status == .badRequest
                )

                #expect(try await request().json["outcome"].string == "consumption_requested")
                let sent = try #require(
                    standIn.requests.first { $0.method == "PUT" && $0.path == "/sandbox/inApps/v2/transactions/consumption/3000000000000501" }
                )
                let body = try #require(try JSON.parse(Data((sent.body ?? "").utf8)).object)
                #expect(body["customerConsented"].bool == true && body["deliveryStatus"].string == "DELIVERED")
                #expect(body["consumptionPercentage"].int == 50_000, "half of the pack's lot is spent: \(body)")
                #expect(body["refundPreference"].string == "GRANT_PRORATED" && body["sampleContentProvided"].bool == false)
                #expect(body["consumptionStatus"] == nil && body["playTime"] == nil, "the V2 body, not the deprecated V1 fields")

                // The user withdraws consent: the next request is not answered.
                _ = try await client.call(
                    .put,
                    "/api/consumption-consent",
                    auth: key,
                    user: "ana",
                    json: ["consented": false, "textVersion": "refund-terms-2026-11"]
                )
                let before = standIn.requests.count { $0.path.contains("/consumption/") }
                _ = try await request()
                #expect(standIn.requests.count { $0.path.contains("/consumption/") } == before)
                let audit = try await client.call(.get, "/api/admin/audit", auth: try await harness.apiKey(Self.tenant, .admin))
                #expect(
                    (audit.json["items"].array ?? []).filter { $0["action"].string == "consumption_consent.recorded" }.count == 2
                )
            }
        }
    }

    @Test(
        "notifications dropped while Berth was down are recovered by the history job and applied once; a failed reading keeps its mark and the next one recovers"
    )
    func historyRecovers() async throws {
        try await Self.withStandIn(bundle: Self.bundle) { standIn, harness in
            let key = try await harness.apiKey(Self.tenant, .server)
            let runtime = try #require(harness.services.tenants.tenant(id: Self.tenant))
            let history = harness.services.appleHistory
            try await harness.app().test(.router) { client in
                let transaction = TransactionPayload.testPurchase(
                    bundleId: Self.bundle,
                    productId: CreditsTests.popular,
                    transactionId: "3000000000000601"
                )
                let bought = try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: key,
                    user: "ana",
                    json: ["productId": .string(CreditsTests.popular), "jwsRepresentation": try .string(harness.ca.signTransaction(transaction))]
                )
                #expect(bought.json["newBalance"].int == 52)

                // Apple refunds the pack while Berth is down: its POST never arrives, the history keeps it.
                var refunded = transaction
                refunded.revocationDate = AppleTimestamp(harness.clock.now())
                refunded.revocationReason = .other
                let refund = try harness.ca.signNotification(
                    type: .refund,
                    bundleId: Self.bundle,
                    transaction: refunded,
                    signedDate: harness.clock.now()
                )
                // A notification Berth did receive is in the history too.
                let other = TransactionPayload.testPurchase(bundleId: Self.bundle, productId: CreditsTests.popular, transactionId: "3000000000000602")
                let declined = try harness.ca.signNotification(
                    type: .refundDeclined,
                    bundleId: Self.bundle,
                    transaction: other,
                    signedDate: harness.clock.now()
                )
                #expect(
                    try await client.call(.post, "/api/apple/notifications/\(Self.tenant)", auth: nil, json: ["signedPayload": .string(declined)])
                        .status
                        == .ok
                )
                standIn.state.withLock { $0.notificationHistory["sandbox"] = [declined, refund] }
                harness.clock.advance(60)

                // Apple's API is down for the first reading: nothing applied, the mark stays.
                standIn.state.withLock { $0.forced["sandbox"] = Array(repeating: AppleStandIn.Canned(status: 500, body: "{}"), count: 4) }
                let failed = await history.read(runtime, environment: .sandbox)
                #expect(failed.failed && failed.recovered == 0)
                #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == 52)
                standIn.state.withLock { $0.forced["sandbox"] = [] }

                let first = await history.read(runtime, environment: .sandbox)
                #expect(!first.failed && first.seen == 2 && first.recovered == 1 && first.refused == 0, "\(first)")
                #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == 2, "the missed refund took the pack back")

                harness.clock.advance(3600)
                let second = await history.read(runtime, environment: .sandbox)
                #expect(!second.failed && second.recovered == 0, "applied once: \(second)")
                #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == 2)
                let late = try await client.call(
                    .post,
                    "/api/apple/notifications/\(Self.tenant)",
                    auth: nil,
                    json: ["signedPayload": .string(refund)]
                )
                #expect(late.json["duplicate"].bool == true, "Apple's own retry, arriving after the recovery, changes nothing")

                // The second reading started at the first one's end, less the overlap, and went on in pages.
                let readings = standIn.requests.filter { $0.path == "/sandbox/inApps/v1/notifications/history" }.compactMap(\.body)
                    .compactMap { (try? JSON.parse($0))?.object }
                let starts = readings.compactMap { $0["startDate"].int64 }
                let firstEnd = Int64((harness.clock.now().addingTimeInterval(-3600).timeIntervalSince1970 * 1000).rounded(.down))
                #expect(starts.last == firstEnd - 600_000, "\(starts)")
            }
        }
    }

    @Test(
        "a consumption answer Apple's API failed to take is tried again by the background round until it is sent; one per request, none past Apple's 12-hour window"
    )
    func durableConsumptionAnswers() async throws {
        try await Self.withStandIn(bundle: Self.bundle) { standIn, harness in
            let key = try await harness.apiKey(Self.tenant, .server)
            let tenants = harness.services.tenants
            let answers = harness.services.consumptionAnswers
            try await harness.app().test(.router) { client in
                let transaction = TransactionPayload.testPurchase(
                    bundleId: Self.bundle,
                    productId: CreditsTests.popular,
                    transactionId: "3000000000000701",
                    purchaseDate: harness.clock.now()
                )
                #expect(
                    try await client.call(
                        .post,
                        "/api/verify-purchase",
                        auth: key,
                        user: "ana",
                        json: ["productId": .string(CreditsTests.popular), "jwsRepresentation": try .string(harness.ca.signTransaction(transaction))]
                    ).status == .ok
                )
                #expect(
                    try await client.call(
                        .put,
                        "/api/consumption-consent",
                        auth: key,
                        user: "ana",
                        json: ["consented": true, "textVersion": "refund-terms-2026-11"]
                    ).status == .ok
                )
                func consumptionCalls() -> [AppleStandIn.Recorded] {
                    standIn.requests.filter { $0.method == "PUT" && $0.path.contains("/consumption/") }
                }
                func rows() async throws -> [[String: String?]] {
                    try await harness.rows(
                        "SELECT status, attempts, notification_uuid FROM consumption_answers WHERE transaction_id = ? ORDER BY requested_at DESC",
                        ["3000000000000701"]
                    )
                }

                // Apple's API answers 500 to every try of the first attempt (the client's own retries included).
                standIn.state.withLock { $0.forced["sandbox"] = Array(repeating: AppleStandIn.Canned(status: 500, body: "{}"), count: 8) }
                let request = try harness.ca.signNotification(
                    type: .consumptionRequest,
                    bundleId: Self.bundle,
                    transaction: transaction,
                    signedDate: harness.clock.now()
                )
                #expect(
                    try await client.call(.post, "/api/apple/notifications/\(Self.tenant)", auth: nil, json: ["signedPayload": .string(request)])
                        .status == .ok
                )
                let tried = consumptionCalls().count
                #expect(tried >= 1)
                #expect(try await rows().map { $0["status"] ?? nil } == ["pending"], "owed, not lost")
                standIn.state.withLock { $0.forced["sandbox"] = [] }
                // Apple sends the request again: still one answer owed, and nothing tried before it is due.
                #expect(
                    try await client.call(.post, "/api/apple/notifications/\(Self.tenant)", auth: nil, json: ["signedPayload": .string(request)])
                        .status == .ok
                )
                #expect(try await rows().count == 1 && consumptionCalls().count == tried)
                #expect(await answers.runDue(tenants: tenants).isEmpty, "due 30 s after the failure")
                harness.clock.advance(31)
                let round = await answers.runDue(tenants: tenants)
                #expect(round.map(\.outcome) == [.sent] && round.first?.tenantId == Self.tenant)
                #expect(consumptionCalls().count == tried + 1)
                #expect(try await rows().map { $0["status"] ?? nil } == ["sent"])
                let body = try #require(try JSON.parse(Data((consumptionCalls().last?.body ?? "").utf8)).object)
                #expect(body["customerConsented"].bool == true && body["deliveryStatus"].string == "DELIVERED")
                harness.clock.advance(3600)
                #expect(await answers.runDue(tenants: tenants).isEmpty, "sent once")

                // A request whose window closes before another try fits: expired, not retried forever.
                standIn.state.withLock { $0.forced["sandbox"] = Array(repeating: AppleStandIn.Canned(status: 500, body: "{}"), count: 8) }
                let closing = try harness.ca.signNotification(
                    type: .consumptionRequest,
                    bundleId: Self.bundle,
                    transaction: transaction,
                    signedDate: harness.clock.now().addingTimeInterval(-(12 * 3600 - 10))
                )
                #expect(
                    try await client.call(.post, "/api/apple/notifications/\(Self.tenant)", auth: nil, json: ["signedPayload": .string(closing)])
                        .status == .ok
                )
                standIn.state.withLock { $0.forced["sandbox"] = [] }
                #expect(try await rows().map { $0["status"] ?? nil } == ["sent", "expired"])
                // One the history job recovers after its window: expired without a call.
                let before = consumptionCalls().count
                let stale = try harness.ca.signNotification(
                    type: .consumptionRequest,
                    bundleId: Self.bundle,
                    transaction: transaction,
                    signedDate: harness.clock.now().addingTimeInterval(-13 * 3600)
                )
                #expect(
                    try await client.call(.post, "/api/apple/notifications/\(Self.tenant)", auth: nil, json: ["signedPayload": .string(stale)]).status
                        == .ok
                )
                let finalRows = try await rows()
                #expect(
                    finalRows.map { $0["status"] ?? nil } == ["sent", "expired", "expired"] && consumptionCalls().count == before,
                    "\(finalRows) \(consumptionCalls().count) \(before)"
                )
                harness.clock.advance(3600)
                #expect(await answers.runDue(tenants: tenants).isEmpty)
            }
        }
    }

    @Test(
        "Family Sharing: a family member's FAMILY_SHARED subscription gives them the entitlement (even with the purchaser's appAccountToken on it); FAMILY_REVOKE removes it from them only"
    )
    func familySharing() async throws {
        let harness = try await Harness.make(customize: { catalog in
            // The purchaser's token travels on the shared transaction: it names the purchaser, not the member.
            guard let index = catalog.tenants.firstIndex(where: { $0.id == SubscriptionsTests.brain }) else { return }
            catalog.tenants[index].appAccountTokenMatchesUserId = true
        })
        defer { harness.close() }
        let key = try await harness.apiKey(SubscriptionsTests.brain, .server)
        try await harness.app().test(.router) { client in
            let now = harness.clock.now()
            let alice = UUID()
            var bought = SubscriptionsTests.period(
                harness,
                transaction: "2000000800000001",
                original: "2000000800000001",
                product: SubscriptionsTests.yearly,
                bundle: SubscriptionsTests.brainBundle,
                start: now.addingTimeInterval(-86_400),
                days: 365
            )
            // The app's ids are text here: the token is the one cordova-plugin-purchase derives from alice's id.
            let aliceToken = AccountTokens.cordovaPlugin(alice.uuidString.lowercased())
            bought.appAccountToken = aliceToken
            #expect(try await SubscriptionsTests.claim(client, harness, key: key, user: alice.uuidString.lowercased(), bought).status == .ok)

            // The family member's device holds its own transaction of the same subscription.
            var shared = SubscriptionsTests.period(
                harness,
                transaction: "2000000800000002",
                original: "2000000800000002",
                product: SubscriptionsTests.yearly,
                bundle: SubscriptionsTests.brainBundle,
                start: now.addingTimeInterval(-86_400),
                days: 365
            )
            shared.inAppOwnershipType = .familyShared
            shared.appAccountToken = aliceToken
            let member = try await SubscriptionsTests.claim(client, harness, key: key, user: "bob", shared)
            #expect(member.status == .ok, "\(member.json)")
            var entitlements = try await SubscriptionsTests.entitlements(client, key: key, user: "bob")
            #expect(entitlements.isPremium)
            #expect(entitlements.entitlements.first?.originalTransactionId == "2000000800000002")
            #expect(entitlements.entitlements.first?.familyShared == true, "the member's answer says it is shared")
            let purchaser = try await SubscriptionsTests.entitlements(client, key: key, user: alice.uuidString.lowercased())
            #expect(purchaser.entitlements.first != nil && purchaser.entitlements.first?.familyShared == nil, "the purchaser's is her own")
            let listed = try await client.call(.get, "/api/subscriptions", auth: key, user: "bob")
            #expect((listed.json["data"].array)?.first?["familyShared"].bool == true, "\(listed.json)")
            // The purchaser's token still names the purchaser (Apple's later notifications with it go to alice).
            let tokenOwner = try await harness.rows("SELECT user_id FROM account_tokens WHERE token = ?", [aliceToken])
            #expect(tokenOwner.map { $0["user_id"] ?? nil } == [alice.uuidString.lowercased()], "\(tokenOwner)")

            // The purchaser stops sharing: Apple revokes the member's transaction (FAMILY_REVOKE).
            var revoked = shared
            revoked.revocationDate = AppleTimestamp(harness.clock.now())
            revoked.revocationType = .familyRevoke
            revoked.signedDate = AppleTimestamp(harness.clock.now().addingTimeInterval(1))
            let notice = try harness.ca.signNotification(
                type: .revoke,
                bundleId: SubscriptionsTests.brainBundle,
                transaction: revoked,
                signedDate: harness.clock.now().addingTimeInterval(1)
            )
            let applied = try await client.call(
                .post,
                "/api/apple/notifications/\(SubscriptionsTests.brain)",
                auth: nil,
                json: ["signedPayload": .string(notice)]
            )
            #expect(applied.status == .ok, "\(applied.json)")
            entitlements = try await SubscriptionsTests.entitlements(client, key: key, user: "bob")
            #expect(!entitlements.isPremium, "\(entitlements)")
            #expect(
                try await SubscriptionsTests.entitlements(client, key: key, user: alice.uuidString.lowercased()).isPremium,
                "the purchaser keeps hers"
            )
        }
    }

    @Test(
        "win-back offers: the ids Apple's renewal info lists reach the subscription and the entitlements answer, and leave them when a later renewal info omits them"
    )
    func winBackOffers() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(SubscriptionsTests.brain, .server)
        try await harness.app().test(.router) { client in
            let now = harness.clock.now()
            // A yearly subscription that lapsed yesterday.
            let lapsed = SubscriptionsTests.period(
                harness,
                transaction: "2000000810000001",
                original: "2000000810000001",
                product: SubscriptionsTests.yearly,
                bundle: SubscriptionsTests.brainBundle,
                start: now.addingTimeInterval(-366 * 86_400),
                days: 365
            )
            #expect(try await SubscriptionsTests.claim(client, harness, key: key, user: "cleo", lapsed).status == .ok)
            func notify(_ offers: [String]?, at offset: TimeInterval) async throws {
                var renewal = RenewalInfoPayload.testRenewal(for: lapsed, autoRenew: false, signedDate: now.addingTimeInterval(offset))
                renewal.eligibleWinBackOfferIds = offers
                let notice = try harness.ca.signNotification(
                    type: .didChangeRenewalStatus,
                    subtype: .autoRenewDisabled,
                    bundleId: SubscriptionsTests.brainBundle,
                    transaction: lapsed,
                    renewalInfo: renewal,
                    signedDate: now.addingTimeInterval(offset)
                )
                let applied = try await client.call(
                    .post,
                    "/api/apple/notifications/\(SubscriptionsTests.brain)",
                    auth: nil,
                    json: ["signedPayload": .string(notice)]
                )
                #expect(applied.status == .ok, "\(applied.json)")
            }
            func offers() async throws -> (listed: [String]?, entitlements: [String]?) {
                let listed = try await client.call(.get, "/api/subscriptions", auth: key, user: "cleo")
                let entitlements = try await SubscriptionsTests.entitlements(client, key: key, user: "cleo")
                return (
                    (listed.json["data"].array)?.first?["eligibleWinBackOfferIds"].strings,
                    entitlements.entitlements.first?.eligibleWinBackOfferIds
                )
            }
            #expect(try await offers() == (nil, nil), "none before Apple says")
            try await notify(["winback.yearly.50", "winback.yearly.3m"], at: 10)
            #expect(try await offers() == (["winback.yearly.50", "winback.yearly.3m"], ["winback.yearly.50", "winback.yearly.3m"]))
            try await notify(nil, at: 20)
            #expect(try await offers() == (nil, nil), "a later renewal info without the field: no offer any more")
        }
    }

    @Test(
        "restore: the customer's App Store history, read from a transaction the caller proves is theirs, applies what Berth lacks, once; others' purchases stay theirs"
    )
    func restorePurchases() async throws {
        try await Self.withStandIn(bundle: Self.bundle) { standIn, harness in
            let key = try await harness.apiKey(Self.tenant, .server)
            try await harness.app().test(.router) { client in
                func pack(_ id: String) -> TransactionPayload {
                    TransactionPayload.testPurchase(bundleId: Self.bundle, productId: CreditsTests.popular, transactionId: id)
                }
                func buy(_ user: String, _ transaction: TransactionPayload) async throws -> Reply {
                    try await client.call(
                        .post,
                        "/api/verify-purchase",
                        auth: key,
                        user: user,
                        json: ["productId": .string(CreditsTests.popular), "jwsRepresentation": try .string(harness.ca.signTransaction(transaction))]
                    )
                }
                #expect(try await buy("ana", pack("3000000000000701")).json["newBalance"].int == 52)
                #expect(try await buy("bob", pack("3000000000000703")).status == .ok)
                // 702 was paid but the app never reached Berth (it crashed, the user reinstalled).
                let history = try [pack("3000000000000701"), pack("3000000000000702"), pack("3000000000000703")].map {
                    try harness.ca.signTransaction($0)
                }
                standIn.state.withLock { $0.historyPages = [Array(history.prefix(2)), [history[2]]] }

                let restored = try await client.call(
                    .post,
                    "/api/restore-purchases",
                    auth: key,
                    user: "ana",
                    json: ["transactionId": "3000000000000701"]
                )
                #expect(restored.status == .ok, "\(restored.json)")
                let outcomes = Dictionary(
                    uniqueKeysWithValues: (restored.json["items"].array ?? []).compactMap { item in
                        (item["transactionId"].string).map { ($0, item["outcome"].string ?? "") }
                    }
                )
                #expect(outcomes == ["3000000000000701": "known", "3000000000000702": "restored", "3000000000000703": "known"], "\(restored.json)")
                #expect(restored.json["restored"].int == 1)
                #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == 102)
                #expect(try await CreditsTests.balance(client, key: key, user: "bob")?.balance == 52, "bob's pack stays bob's")
                #expect(try await harness.count("replay_attempts") == 0, "a restore records no replay")

                let again = try await client.call(
                    .post,
                    "/api/restore-purchases",
                    auth: key,
                    user: "ana",
                    json: ["jwsRepresentation": try .string(harness.ca.signTransaction(pack("3000000000000702")))]
                )
                #expect(again.status == .ok && again.json["restored"].int == 0, "\(again.json)")
                #expect(try await CreditsTests.balance(client, key: key, user: "ana")?.balance == 102, "applied once")

                let foreign = try await client.call(
                    .post,
                    "/api/restore-purchases",
                    auth: key,
                    user: "eve",
                    json: ["transactionId": "3000000000000703"]
                )
                #expect(
                    foreign.status == .forbidden && Self.code(foreign) == "proof_required",
                    "a transaction id proves nothing unless it is the caller's"
                )
                #expect(try await client.call(.post, "/api/restore-purchases", auth: key, user: "eve", json: [:]).status == .badRequest)
                // T7: a signed transaction someone else holds (a support ticket, a log) is not the caller's proof.
                let leaked = try await client.call(
                    .post,
                    "/api/restore-purchases",
                    auth: key,
                    user: "eve",
                    json: ["jwsRepresentation": try .string(harness.ca.signTransaction(pack("3000000000000702")))]
                )
                #expect(leaked.status == .forbidden && Self.code(leaked) == "proof_required", "\(leaked.json)")
                var evesOwn = pack("3000000000000704")
                evesOwn.appAccountToken = AccountTokens.cordovaPlugin("eve")
                let tokenProof = try await client.call(
                    .post,
                    "/api/restore-purchases",
                    auth: key,
                    user: "eve",
                    json: ["jwsRepresentation": try .string(harness.ca.signTransaction(evesOwn))]
                )
                #expect(tokenProof.status == .ok, "a transaction bought with the caller's token proves the history is theirs: \(tokenProof.json)")
            }
        }
    }

    static func code(_ reply: Reply) -> String? { reply.json["error"]["code"].string }

    @Test(
        "a link tells Apple the owner (Set App Account Token): the user id itself where the app's ids are UUIDs, else the token cordova-plugin-purchase derives from it (a UUID-looking text id included)",
        arguments: [false, true]
    )
    func linkSetsAppAccountToken(uuidIds: Bool) async throws {
        try await Self.withStandIn(
            bundle: SubscriptionsTests.brainBundle,
            customize: { catalog in
                guard uuidIds, let index = catalog.tenants.firstIndex(where: { $0.id == SubscriptionsTests.brain }) else { return }
                catalog.tenants[index].userIdFormat = .uuid
            }
        ) { standIn, harness in
            let key = try await harness.apiKey(SubscriptionsTests.brain, .server)
            try await harness.app().test(.router) { client in
                let now = harness.clock.now()
                let owner = UUID().uuidString.lowercased()
                let carol = uuidIds ? UUID().uuidString.lowercased() : "carol"
                for (user, otid) in [(owner, "2000000810000001"), (carol, "2000000810000002")] {
                    let period = SubscriptionsTests.period(
                        harness,
                        transaction: otid,
                        original: otid,
                        product: SubscriptionsTests.yearly,
                        bundle: SubscriptionsTests.brainBundle,
                        start: now.addingTimeInterval(-86_400),
                        days: 365
                    )
                    #expect(try await SubscriptionsTests.claim(client, harness, key: key, user: user, period).status == .ok)
                    let linked = try await client.call(
                        .post,
                        "/api/subscriptions/link",
                        auth: key,
                        user: user,
                        json: ["originalTransactionId": .string(otid)]
                    )
                    #expect(linked.status == .ok, "\(linked.json)")
                }
                let sets = standIn.requests.filter { $0.method == "PUT" && $0.path.hasSuffix("/appAccountToken") }
                let bodies = Dictionary(uniqueKeysWithValues: sets.map { ($0.path, $0.body ?? "") })
                let ownerToken = uuidIds ? owner : AccountTokens.cordovaPlugin(owner)
                let carolToken = uuidIds ? carol : AccountTokens.cordovaPlugin(carol)
                #expect(
                    bodies["/sandbox/inApps/v1/transactions/2000000810000001/appAccountToken"] == #"{"appAccountToken":"\#(ownerToken)"}"#,
                    "\(bodies)"
                )
                #expect(bodies["/sandbox/inApps/v1/transactions/2000000810000002/appAccountToken"] == #"{"appAccountToken":"\#(carolToken)"}"#)
            }
        }
    }

    @Test("an operator's attribution tells Apple the owner too: an unapplied App Store payment applied to a user sets that user's appAccountToken")
    func attributionSetsAppAccountToken() async throws {
        try await Self.withStandIn(bundle: Self.bundle) { standIn, harness in
            let key = try await harness.apiKey(Self.tenant, .server)
            let admin = try await harness.apiKey(Self.tenant, .admin)
            try await harness.app().test(.router) { client in
                // The app sends the starter pack's transaction as another product: refused, and the payment kept for an operator.
                let transaction = TransactionPayload.testPurchase(
                    bundleId: Self.bundle,
                    productId: CreditsTests.starter,
                    transactionId: "3000000000000801",
                    purchaseDate: harness.clock.now()
                )
                let refused = try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: key,
                    user: "ana",
                    json: ["productId": .string(CreditsTests.popular), "jwsRepresentation": try .string(harness.ca.signTransaction(transaction))]
                )
                let kept = try #require(refused.json["unappliedPayment"].object, "\(refused.json)")
                let id = try #require(kept["id"].int64)
                #expect(!standIn.requests.contains { $0.path.hasSuffix("/appAccountToken") })
                // The operator finds it was Dora's.
                let applied = try await client.call(.post, "/api/admin/unapplied-payments/\(id)/apply", auth: admin, json: ["userId": "dora"])
                #expect(applied.status == .ok, "\(applied.json)")
                let sets = standIn.requests.filter { $0.method == "PUT" && $0.path.hasSuffix("/appAccountToken") }
                #expect(sets.map(\.path) == ["/sandbox/inApps/v1/transactions/3000000000000801/appAccountToken"])
                #expect(sets.first?.body == #"{"appAccountToken":"\#(AccountTokens.cordovaPlugin("dora"))"}"#, "\(sets.map(\.body))")
            }
        }
    }

    @Test(
        "renewal-date extension: one subscription (its expiry moves at once, audited) and every subscriber of a product (request, then its status); bad input refused"
    )
    func renewalExtension() async throws {
        try await Self.withStandIn(bundle: SubscriptionsTests.brainBundle) { standIn, harness in
            let key = try await harness.apiKey(SubscriptionsTests.brain, .server)
            let admin = try await harness.apiKey(SubscriptionsTests.brain, .admin)
            try await harness.app().test(.router) { client in
                let now = harness.clock.now()
                let otid = "2000000820000001"
                let period = SubscriptionsTests.period(
                    harness,
                    transaction: otid,
                    original: otid,
                    product: SubscriptionsTests.yearly,
                    bundle: SubscriptionsTests.brainBundle,
                    start: now.addingTimeInterval(-355 * 86_400),
                    days: 365
                )
                #expect(try await SubscriptionsTests.claim(client, harness, key: key, user: "ana", period).status == .ok)
                let expiry = try #require(period.expiresDate)
                standIn.state.withLock { $0.expiries[otid] = expiry.millisecondsSince1970 }

                let extended = try await client.call(
                    .post,
                    "/api/admin/subscriptions/\(otid)/extend",
                    auth: admin,
                    json: ["days": 7, "reasonCode": 3]
                )
                #expect(extended.status == .ok, "\(extended.json)")
                let expected = expiry.date.addingTimeInterval(7 * 86_400)
                let expiresAt = try #require(extended.json["expiresAt"].string)
                #expect(APITimeText.parse(expiresAt).map { abs($0.timeIntervalSince(expected)) < 1 } == true, "\(expiresAt) vs \(expected)")
                let held = try await SubscriptionsTests.entitlements(client, key: key, user: "ana")
                let item = held.entitlements.first
                #expect(item?.expiresAt.map { abs($0.date.timeIntervalSince(expected)) < 1 } == true)
                let sent = standIn.requests.first { $0.path == "/sandbox/inApps/v1/subscriptions/extend/\(otid)" }
                let body = try #require(try JSON.parse(Data((sent?.body ?? "").utf8)).object)
                #expect(
                    body["extendByDays"].int == 7 && body["extendReasonCode"].int == 3
                        && (body["requestIdentifier"].string).flatMap { UUID(uuidString: $0) } != nil
                )
                let audit = try await client.call(.get, "/api/admin/audit", auth: admin)
                #expect((audit.json["items"].array ?? []).contains { $0["action"].string == "subscription.renewal_extended" })

                #expect(try await client.call(.post, "/api/admin/subscriptions/\(otid)/extend", auth: admin, json: ["days": 0]).status == .badRequest)
                #expect(
                    try await client.call(.post, "/api/admin/subscriptions/\(otid)/extend", auth: admin, json: ["days": 91]).status == .badRequest
                )
                #expect(
                    try await client.call(.post, "/api/admin/subscriptions/2000000829999999/extend", auth: admin, json: ["days": 3]).status
                        == .notFound
                )
                #expect(
                    try await client.call(.post, "/api/admin/subscriptions/\(otid)/extend", auth: key, user: "ana", json: ["days": 3]).status
                        == .forbidden
                )

                let mass = try await client.call(
                    .post,
                    "/api/admin/subscriptions/extend-all",
                    auth: admin,
                    json: ["productId": .string(SubscriptionsTests.yearly), "days": 5, "storefronts": ["ITA"]]
                )
                #expect(mass.status == .accepted, "\(mass.json)")
                let identifier = try #require(mass.json["requestIdentifier"].string)
                let massBody = standIn.requests.first { $0.path == "/sandbox/inApps/v1/subscriptions/extend/mass" }?.body ?? ""
                #expect(massBody.contains(identifier) && massBody.contains(SubscriptionsTests.yearly) && massBody.contains("ITA"))
                let status = try await client.call(
                    .get,
                    "/api/admin/subscriptions/extend-all/\(SubscriptionsTests.yearly)/\(identifier)",
                    auth: admin
                )
                #expect(
                    status.status == .ok && status.json["complete"].bool == true && status.json["succeededCount"].int == 1,
                    "\(status.json)"
                )
                #expect(
                    try await client.call(.post, "/api/admin/subscriptions/extend-all", auth: admin, json: ["productId": "nope", "days": 5]).status
                        == .unprocessableContent
                )
            }
        }
    }
}

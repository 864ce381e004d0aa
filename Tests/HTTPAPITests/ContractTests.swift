import AppStoreAPI
import AppleSignedData
import Crypto
import Domain
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import TestKit
import Testing
import UseCases
import Yams

/// The contract next to the service (contract/openapi.yaml, contract/examples) holds for the
/// server's real responses. Run with BERTH_WRITE_EXAMPLES=1 to refresh the examples from a real run.
@Suite("Contract: real responses match contract/examples and contract/openapi.yaml")
struct ContractTests {
    static let contract = Harness.repository.appendingPathComponent("contract")

    struct Exchange: Sendable {
        var example: String
        var schema: String
        var data: Data
    }

    final class Recorder: Sendable {
        private let exchanges = Mutex<[Exchange]>([])

        func record(_ example: String, _ schema: String, _ reply: Reply) {
            exchanges.withLock { $0.append(Exchange(example: example, schema: schema, data: reply.data)) }
        }

        func recordRequest(_ example: String, _ schema: String, _ body: JSON) throws {
            let data = try body.data(sortedKeys: true)
            exchanges.withLock { $0.append(Exchange(example: example, schema: schema, data: data)) }
        }

        var all: [Exchange] { exchanges.withLock { $0 } }
    }

    func validator() throws -> SchemaValidator {
        let text = try String(contentsOf: Self.contract.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text).flatMap(JSON.init(foundation:)))
        return SchemaValidator(schemas: try #require(document["components"]["schemas"].members))
    }

    /// Drives one realistic session and records every request and response worth an example.
    func recordSession() async throws -> [Exchange] {
        let harness = try await UnlocksTests.make()
        defer { harness.close() }
        let recorder = Recorder()
        try await harness.app().test(.router) { client in
            let record = recorder.record, recordRequest = recorder.recordRequest
            let key = harness.serverKey, admin = harness.adminKey
            record("HealthResponse", "HealthResponse", try await client.call(.get, "/healthz", auth: nil))
            record("ProductsResponse", "ProductsResponse", try await client.call(.get, "/api/products", auth: key, user: "alice"))
            record("ResourcesResponse", "ResourcesResponse", try await client.call(.get, "/api/resources", auth: key, user: "alice"))

            let start = Harness.day(3, from: harness.clock.now())
            let rental: JSON = ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(8 * 3600)))]
            try recordRequest("CreateBookingRequest.rental", "CreateBookingRequest", rental)
            let created = try await client.call(.post, "/api/bookings", auth: key, user: "alice", json: rental)
            record("BookingResponse.created", "BookingResponse", created)
            let bookingId = try #require(created.booking?["id"].int)

            harness.clock.advance(1)  // listings are newest first: keep their order deterministic
            let experience: JSON = [
                "resourceId": "sunset-cruise", "slot": .string(iso(Harness.local(4, hour: 17, minute: 30, from: harness.clock.now()))), "seats": 2,
            ]
            try recordRequest("CreateBookingRequest.experience", "CreateBookingRequest", experience)
            let sunset = try await client.call(.post, "/api/bookings", auth: key, user: "alice", json: experience)
            record("BookingResponse.experience", "BookingResponse", sunset)

            let taken = try await client.call(.post, "/api/bookings", auth: key, user: "bob", json: rental)
            record("ErrorResponse.slot_taken", "ErrorResponse", taken)

            let jws = try harness.purchase("it.seaboo.rental.basic", transactionId: "2000000000004242")
            let verify: JSON = [
                "bookingId": .int(bookingId), "productId": "it.seaboo.rental.basic", "transactionId": "2000000000004242",
                "jwsRepresentation": .string(jws),
            ]
            try recordRequest("VerifyPurchaseRequest", "VerifyPurchaseRequest", verify)
            record(
                "VerifyPurchaseResponse",
                "VerifyPurchaseResponse",
                try await client.call(.post, "/api/verify-purchase", auth: key, user: "alice", json: verify)
            )

            let mismatch = verify.merging(["productId": "it.seaboo.rental.premium"])
            record(
                "ErrorResponse.product_mismatch",
                "ErrorResponse",
                try await client.call(.post, "/api/verify-purchase", auth: key, user: "alice", json: mismatch)
            )

            let bobStart = Harness.day(5, from: harness.clock.now())
            let bobBooking = try await client.call(
                .post,
                "/api/bookings",
                auth: key,
                user: "bob",
                json: ["resourceId": "gozzo-5m", "start": .string(iso(bobStart)), "end": .string(iso(bobStart.addingTimeInterval(3600)))]
            )
            let replay = verify.merging(["bookingId": bobBooking.booking?["id"] ?? 0])
            record(
                "ErrorResponse.transaction_already_used",
                "ErrorResponse",
                try await client.call(.post, "/api/verify-purchase", auth: key, user: "bob", json: replay)
            )

            record("BookingListResponse", "BookingListResponse", try await client.call(.get, "/api/bookings?limit=1", auth: key, user: "alice"))

            let confirm: JSON = ["reason": "paid in cash at the harbour"]
            try recordRequest("AdminConfirmRequest", "AdminConfirmRequest", confirm)
            let sunsetId = try #require(sunset.booking?["id"].int)
            harness.clock.advance(1)
            record(
                "BookingResponse.manual_confirm",
                "BookingResponse",
                try await client.call(.post, "/api/admin/bookings/\(sunsetId)/confirm", auth: admin, json: confirm)
            )
            harness.clock.advance(1)
            let cancel: JSON = ["reason": "storm warning"]
            try recordRequest("AdminCancelRequest", "AdminCancelRequest", cancel)
            record(
                "BookingResponse.cancelled",
                "BookingResponse",
                try await client.call(.post, "/api/admin/bookings/\(sunsetId)/cancel", auth: admin, json: cancel)
            )

            let localSlot: JSON = [
                "resourceId": "sunset-cruise",
                "slot": .string(String(iso(Harness.day(6, hour: 17, from: harness.clock.now()).addingTimeInterval(1800)).prefix(16))), "seats": 1,
            ]
            try recordRequest("CreateBookingRequest.local_slot", "CreateBookingRequest", localSlot)
            let local = try await client.call(.post, "/api/bookings", auth: key, user: "alice", json: localSlot)
            #expect(local.status == .created, "\(String(decoding: local.data, as: UTF8.self))")
            let reference = try #require(created.booking?["reference"].string)
            record("SearchResponse", "SearchResponse", try await client.call(.get, "/api/admin/search?q=\(reference.lowercased())", auth: admin))
            // bob: a booking and nothing else (his replay was refused): every entry on the test clock, one shape each run.
            record("TimelineResponse", "TimelineResponse", try await client.call(.get, "/api/admin/customers/bob/timeline", auth: admin))
            // Up to a day after the test clock: the purchases signed meanwhile (at the real time) are in the period, every run.
            let overviewTo = iso(harness.clock.now().addingTimeInterval(86_400))
            record(
                "OverviewResponse",
                "OverviewResponse",
                try await client.call(.get, "/api/admin/overview?interval=week&to=\(overviewTo)", auth: admin)
            )
            record("PurchaseListResponse", "PurchaseListResponse", try await client.call(.get, "/api/admin/purchases?limit=1", auth: admin))
            record("ReplayListResponse", "ReplayListResponse", try await client.call(.get, "/api/admin/replays?limit=1", auth: admin))
            record("AuditListResponse", "AuditListResponse", try await client.call(.get, "/api/admin/audit?limit=2", auth: admin))
            record("AppResponse", "AppResponse", try await client.call(.get, "/api/admin/app", auth: admin))
            // Alice's booking, paid through the App Store, cancelled by the operator: money owed to her.
            harness.clock.advance(1)
            _ = try await client.call(.post, "/api/admin/bookings/\(bookingId)/cancel", auth: admin, json: ["reason": "storm"])
            record("OwedListResponse", "OwedListResponse", try await client.call(.get, "/api/admin/owed", auth: admin))
            let sunsetDay = String(iso(Harness.day(6, hour: 17, from: harness.clock.now())).prefix(10))
            record(
                "ManifestResponse",
                "ManifestResponse",
                try await client.call(.get, "/api/admin/manifest?date=\(sunsetDay)&resourceId=sunset-cruise", auth: admin)
            )
            let resolveOwed: JSON = ["how": "customer_told", "note": "told her to ask Apple for the refund"]
            try recordRequest("ResolveOwedRequest", "ResolveOwedRequest", resolveOwed)
            record(
                "ResolveOwedResponse",
                "ResolveOwedResponse",
                try await client.call(.post, "/api/admin/owed/\(bookingId)/resolve", auth: admin, json: resolveOwed)
            )
            // The inventory: a boat added, its August price, retired.
            let boat: JSON = ["id": "rib-9m", "kind": "rental", "name": "RIB 9 m", "pricePerDayMinor": 12_000, "units": 1]
            try recordRequest("CatalogResource.rental", "CatalogResource", boat)
            record(
                "InventoryItemResponse.created",
                "InventoryItemResponse",
                try await client.call(.post, "/api/admin/resources", auth: admin, json: boat)
            )
            record(
                "InventoryItemResponse.changed",
                "InventoryItemResponse",
                try await client.call(.patch, "/api/admin/resources/rib-9m", auth: admin, json: ["pricePerDayMinor": 14_000])
            )
            record(
                "InventoryItemResponse.retired",
                "InventoryItemResponse",
                try await client.call(.post, "/api/admin/resources/rib-9m/retire", auth: admin)
            )
            record("InventoryListResponse", "InventoryListResponse", try await client.call(.get, "/api/admin/resources", auth: admin))
            // A storm closes the sunset cruise's day (the booking made above is inside).
            let closure: JSON = ["resourceId": "sunset-cruise", "from": .string(sunsetDay), "to": .string(sunsetDay), "reason": "storm: port closed"]
            try recordRequest("CreateClosureRequest", "CreateClosureRequest", closure)
            record("Closure", "Closure", try await client.call(.post, "/api/admin/closures", auth: admin, json: closure))
            record("ClosureListResponse", "ClosureListResponse", try await client.call(.get, "/api/admin/closures", auth: admin))
            let closureId = try #require(
                (try await client.call(.get, "/api/admin/closures", auth: admin).json["closures"].array)?.first?["id"].int
            )
            try recordRequest("ResolveClosureRequest", "ResolveClosureRequest", ["action": "cancel"])
            record(
                "ResolveClosureResponse",
                "ResolveClosureResponse",
                try await client.call(.post, "/api/admin/closures/\(closureId)/resolve", auth: admin, json: ["action": "cancel"])
            )
            // The season: an August price, a customer's move, a cancellation quoted and done, a closure resolved by move.
            let season: JSON = [
                "from": .string(sunsetDay), "to": .string(sunsetDay), "weekdays": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
                "pricePerSeatMinor": 5_000,
            ]
            try recordRequest("PriceRule", "PriceRule", season)
            record(
                "InventoryItemResponse.priced",
                "InventoryItemResponse",
                try await client.call(.post, "/api/admin/resources/sunset-cruise/prices", auth: admin, json: season)
            )
            let cruiseDay = String(iso(Harness.day(9, hour: 17, from: harness.clock.now())).prefix(10))
            let trip = try await client.call(
                .post,
                "/api/bookings",
                auth: key,
                user: "carol",
                json: ["resourceId": "sunset-cruise", "slot": "\(cruiseDay)T17:30", "seats": 1]
            )
            let tripId = try #require(trip.booking?["id"].int, "\(trip.json)")
            let nextCruiseDay = String(iso(Harness.day(10, hour: 17, from: harness.clock.now())).prefix(10))
            let moveTrip: JSON = ["slot": "\(nextCruiseDay)T17:30"]
            try recordRequest("MoveBookingRequest", "MoveBookingRequest", moveTrip)
            record(
                "MoveBookingResponse.moved",
                "MoveBookingResponse",
                try await client.call(.post, "/api/bookings/\(tripId)/move", auth: key, user: "carol", json: moveTrip)
            )
            record(
                "CancellationQuote",
                "CancellationQuote",
                try await client.call(.get, "/api/bookings/\(tripId)/cancellation", auth: key, user: "carol")
            )
            record(
                "CancelBookingResponse",
                "CancelBookingResponse",
                try await client.call(.post, "/api/bookings/\(tripId)/cancel", auth: key, user: "carol")
            )
            let stormTrip = try await client.call(
                .post,
                "/api/bookings",
                auth: key,
                user: "dino",
                json: ["resourceId": "sunset-cruise", "slot": "\(cruiseDay)T17:30", "seats": 1]
            )
            let stormTripId = try #require(stormTrip.booking?["id"].int, "\(stormTrip.json)")
            let stormy = try await client.call(
                .post,
                "/api/admin/closures",
                auth: admin,
                json: ["resourceId": "sunset-cruise", "from": .string(cruiseDay), "to": .string(cruiseDay), "reason": "storm"]
            )
            let stormId = try #require(stormy.json["id"].int, "\(stormy.json)")
            let resolveByMove: JSON = ["action": "move", "moves": [["bookingId": .int(stormTripId), "slot": "\(nextCruiseDay)T17:30"]]]
            try recordRequest("ResolveClosureRequest.move", "ResolveClosureRequest", resolveByMove)
            record(
                "ResolveClosureResponse.moved",
                "ResolveClosureResponse",
                try await client.call(.post, "/api/admin/closures/\(stormId)/resolve", auth: admin, json: resolveByMove)
            )
            try await recordKeys(client, harness, recorder, admin: admin)
            record("ErrorResponse.unauthenticated", "ErrorResponse", try await client.call(.get, "/api/bookings", auth: nil))

            var entry = AppReceipt.InAppPurchase()
            entry.quantity = 1
            entry.productId = "club.yearly"
            entry.transactionId = "2000000000005151"
            entry.originalTransactionId = "2000000000005151"
            entry.purchaseDate = AppleTimestamp(millisecondsSince1970: (harness.clock.now().epochMilliseconds / 1000) * 1000)
            entry.subscriptionExpirationDate = AppleTimestamp(
                millisecondsSince1970: (harness.clock.now().epochMilliseconds / 1000 + 365 * 86_400) * 1000
            )
            let receipt = AppReceipt(
                receiptType: "ProductionSandbox",
                bundleId: "it.seaboo.app",
                applicationVersion: "7",
                creationDate: entry.purchaseDate,
                inAppPurchases: [entry]
            )
            let verifyReceipt: JSON = [
                "receiptData": .string(Data(try harness.receiptCA.signReceipt(receipt)).base64EncodedString()), "userId": "firebase-uid-1",
                "deviceInfo": ["model": "iPhone15,3", "osVersion": "iOS 18.0"], "appVersion": "1.0 (7)", "bundleId": "it.seaboo.app",
            ]
            try recordRequest("VerifyReceiptRequest", "VerifyReceiptRequest", verifyReceipt)
            record(
                "VerifyReceiptResponse.premium",
                "VerifyReceiptResponse",
                try await client.call(.post, "/api/verify-receipt", auth: key, json: verifyReceipt)
            )
            record(
                "VerifyReceiptResponse.malformed",
                "VerifyReceiptResponse",
                try await client.call(.post, "/api/verify-receipt", auth: key, json: ["receiptData": "MIIT"])
            )

            let notification = try harness.ca.signNotification(
                type: .test,
                uuid: UUID(uuidString: "5E09DCFC-205E-4EA1-9883-96676F394992")!,
                bundleId: "it.seaboo.app"
            )
            record(
                "NotificationAck",
                "NotificationAck",
                try await client.call(.post, "/api/apple/notifications/seaboo-test", auth: nil, json: ["signedPayload": .string(notification)])
            )
            record("NotificationListResponse", "NotificationListResponse", try await client.call(.get, "/api/admin/notifications", auth: admin))
            try await recordCredits(client, harness, recorder)
            try await recordSubscriptions(client, harness, recorder)
            try await recordValidator(client, harness, recorder)
        }
        // A tenant with answerSigning publishes its key.
        let signing = try await SignedAnswerTests.harness(P256.Signing.PrivateKey())
        defer { signing.close() }
        try await signing.app().test(.router) { client in
            recorder.record(
                "AnswerSigningKey",
                "AnswerSigningKey",
                try await client.call(.get, "/api/answer-signing/\(SignedAnswerTests.tenant)", auth: nil)
            )
        }
        return recorder.all
    }

    /// API keys: an operator creates a client key for the app, rotates it and revokes the old one;
    /// the client key cannot link a subscription without a proof.
    func recordKeys(_ client: some TestClientProtocol, _ harness: Harness, _ recorder: Recorder, admin: String) async throws {
        let record = recorder.record, recordRequest = recorder.recordRequest
        let create: JSON = ["role": "client", "name": "iOS app 2.3"]
        try recordRequest("CreateKeyRequest", "CreateKeyRequest", create)
        let created = try await client.call(.post, "/api/admin/keys", auth: admin, json: create)
        record("IssuedKeyResponse", "IssuedKeyResponse", created)
        let id = try #require(created.json["key"]["id"].int)
        let secret = try #require(created.json["secret"].string)
        _ = try await client.call(.get, "/api/resources", auth: secret)
        harness.clock.advance(1)  // the listing is newest first: the successor, then the key it replaced
        let rotate: JSON = ["overlapSeconds": 86_400]
        try recordRequest("RotateKeyRequest", "RotateKeyRequest", rotate)
        record(
            "IssuedKeyResponse.rotated",
            "IssuedKeyResponse",
            try await client.call(.post, "/api/admin/keys/\(id)/rotate", auth: admin, json: rotate)
        )
        record("KeyResponse.revoked", "KeyResponse", try await client.call(.post, "/api/admin/keys/\(id)/revoke", auth: admin))
        record("KeyListResponse", "KeyListResponse", try await client.call(.get, "/api/admin/keys", auth: admin))
        let app = try await harness.apiKey("seaboo-test", .client)
        record(
            "ErrorResponse.proof_required",
            "ErrorResponse",
            try await client.call(.post, "/api/subscriptions/link", auth: app, user: "alice", json: ["originalTransactionId": "2000000000000001"])
        )
    }

    /// The subscriptions part: FT Chinese's test tenant (Berth's routes and its own), Braindumpster's.
    func recordSubscriptions(_ client: some TestClientProtocol, _ harness: Harness, _ recorder: Recorder) async throws {
        let record = recorder.record, recordRequest = recorder.recordRequest
        let key = try await harness.apiKey(SubscriptionsTests.ftc, .server)
        let now = harness.clock.now()
        let otid = "2000000700000001"
        let period = SubscriptionsTests.period(harness, transaction: otid, original: otid, start: now.addingTimeInterval(-60))
        let buy: JSON = ["productId": .string(SubscriptionsTests.monthly), "jwsRepresentation": try .string(harness.ca.signTransaction(period))]
        try recordRequest("VerifyPurchaseRequest.subscription", "VerifyPurchaseRequest", buy)
        record(
            "SubscriptionPurchaseResponse",
            "SubscriptionPurchaseResponse",
            try await client.call(.post, "/api/verify-purchase", auth: key, user: "mei", json: buy)
        )
        record(
            "ErrorResponse.linked_to_other_account",
            "ErrorResponse",
            try await client.call(.post, "/api/verify-purchase", auth: key, user: "lin", json: buy)
        )
        let lifetime = UnlocksTests.transaction(harness, UnlocksTests.lifetime, id: "2000000700000002", at: now.addingTimeInterval(-30))
        let unlock: JSON = ["productId": .string(UnlocksTests.lifetime), "jwsRepresentation": try .string(harness.ca.signTransaction(lifetime))]
        try recordRequest("VerifyPurchaseRequest.unlock", "VerifyPurchaseRequest", unlock)
        record(
            "UnlockPurchaseResponse",
            "UnlockPurchaseResponse",
            try await client.call(.post, "/api/verify-purchase", auth: key, user: "mei", json: unlock)
        )
        record("EntitlementsResponse", "EntitlementsResponse", try await client.call(.get, "/api/entitlements", auth: key, user: "mei"))
        record("SubscriptionPage", "SubscriptionPage", try await client.call(.get, "/api/subscriptions?page=1&per_page=20", auth: key, user: "mei"))
        let membership: JSON = ["payMethod": "alipay", "tier": "premium", "cycle": "year", "expiresAt": "2099-01-01T00:00:00Z"]
        try recordRequest("MembershipRequest", "MembershipRequest", membership)
        record("MembershipDTO", "MembershipDTO", try await client.call(.put, "/api/admin/memberships/kai", auth: key, json: membership))
        let kais = "2000000700000004"
        _ = try await SubscriptionsTests.claim(
            client,
            harness,
            key: key,
            user: "kai",
            SubscriptionsTests.period(harness, transaction: kais, original: kais, start: now)
        )
        let link: JSON = ["originalTransactionId": .string(kais), "force": false]
        try recordRequest("LinkRequest", "LinkRequest", link)
        record(
            "ErrorResponse.has_valid_non_iap",
            "ErrorResponse",
            try await client.call(.post, "/api/subscriptions/link", auth: key, user: "kai", json: link)
        )

        let other = "2000000700000002"
        let receipt = try SubscriptionsTests.receipt(
            harness,
            original: other,
            periods: [(other, now.addingTimeInterval(-60), now.addingTimeInterval(30 * 86_400))]
        )
        record(
            "FTCSubscription",
            "FTCSubscription",
            try await SubscriptionsTests.ftcCall(client, .post, "/apple/subs", key: key, json: ["receiptData": .string(receipt)])
        )
        record(
            "FTCMembership",
            "FTCMembership",
            try await SubscriptionsTests.ftcCall(client, .post, "/apple/link", key: key, json: ["ftcId": "f-1", "originalTxId": .string(other)])
        )
        record(
            "FTCError.linked_to_other_ftc",
            "FTCError",
            try await SubscriptionsTests.ftcCall(
                client,
                .post,
                "/apple/link",
                key: key,
                json: ["ftcId": "f-2", "originalTxId": .string(other)]
            )
        )
        record(
            "FTCError.missing_field",
            "FTCError",
            try await SubscriptionsTests.ftcCall(client, .post, "/apple/unlink", key: key, json: ["ftcId": "f-1"])
        )
        record("FTCError.not_found", "FTCError", try await SubscriptionsTests.ftcCall(client, .get, "/apple/subs/404", key: key))
        record(
            "FTCSubscriptionList",
            "FTCSubscriptionList",
            try await SubscriptionsTests.ftcCall(client, .get, "/apple/subs?page=1&per_page=10", key: key, ftcId: "f-1")
        )

        let brainKey = try await harness.apiKey(SubscriptionsTests.brain, .server)
        let brainReceipt = try BraindumpsterTests.receipt(harness, original: "2000000700000003", start: now.addingTimeInterval(-60), days: 365)
        record(
            "VerifyReceiptResponse.subscription",
            "VerifyReceiptResponse",
            try await BraindumpsterTests.verify(client, auth: brainKey, user: "firebase-uid-9", receipt: brainReceipt)
        )
        record(
            "VerifyReceiptResponse.unauthenticated",
            "VerifyReceiptResponse",
            try await BraindumpsterTests.verify(client, auth: "berth_revoked", receipt: brainReceipt)
        )
    }

    /// cordova-plugin-purchase's validator on the AI stylist's test tenant: a StoreKit 2 purchase,
    /// the launch-time application receipt with nothing bought yet, and a replay by another user.
    func recordValidator(_ client: some TestClientProtocol, _ harness: Harness, _ recorder: Recorder) async throws {
        let record = recorder.record, recordRequest = recorder.recordRequest
        let tenant = CordovaValidatorTests.tenant, bundle = CordovaValidatorTests.bundle
        let key = try await harness.apiKey(tenant, .client)
        let jws = try harness.purchase(CreditsTests.starter, transactionId: "3000000000009101", bundleId: bundle)
        let purchase = CordovaValidatorTests.sk2Body(jws: jws, product: CreditsTests.starter, user: "ana")
        try recordRequest("ValidatorRequest", "ValidatorRequest", purchase)
        record("ValidatorResponse.ok", "ValidatorResponse", try await client.call(.post, "/api/validator/\(tenant)", auth: key, json: purchase))
        record(
            "ValidatorResponse.refused",
            "ValidatorResponse",
            try await client.call(
                .post,
                "/api/validator/\(tenant)",
                auth: key,
                json: CordovaValidatorTests.sk2Body(jws: jws, product: CreditsTests.starter, user: "bo")
            )
        )
        var empty = AppReceipt.testReceipt(bundleId: bundle, productId: "none", created: harness.clock.now())
        empty.inAppPurchases = []
        let launch: JSON = [
            "id": .string(bundle), "type": "application",
            "transaction": [
                "type": "ios-appstore", "id": .string(bundle),
                "appStoreReceipt": .string(Data(try harness.receiptCA.signReceipt(empty)).base64EncodedString()),
            ],
            "additionalData": ["applicationUsername": "ana"],
        ]
        record(
            "ValidatorResponse.empty",
            "ValidatorResponse",
            try await client.call(.post, "/api/validator/\(tenant)?key=\(key)", auth: nil, json: launch)
        )
    }

    /// The credits part of the session, on the AI stylist's test tenant.
    func recordCredits(_ client: some TestClientProtocol, _ harness: Harness, _ recorder: Recorder) async throws {
        let record = recorder.record, recordRequest = recorder.recordRequest
        let key = try await harness.apiKey("aistylist-test", .server), admin = try await harness.apiKey("aistylist-test", .admin)
        let pack = "com.aiimagestylist.credits.popular"
        record("ProductsResponse.credits", "ProductsResponse", try await client.call(.get, "/api/products?tenant=aistylist-test", auth: nil))
        record("CreditsResponse", "CreditsResponse", try await client.call(.get, "/api/credits", auth: key, user: "ana"))
        harness.clock.advance(1)  // the bonus lot first, then the pack's
        let buy: JSON = [
            "productId": .string(pack),
            "jwsRepresentation": try .string(harness.purchase(pack, transactionId: "3000000000009001", bundleId: "com.aiimagestylist.app")),
        ]
        try recordRequest("VerifyPurchaseRequest.credits", "VerifyPurchaseRequest", buy)
        record(
            "CreditPurchaseResponse",
            "CreditPurchaseResponse",
            try await client.call(.post, "/api/verify-purchase", auth: key, user: "ana", json: buy)
        )
        harness.clock.advance(1)
        let reserve: JSON = ["amount": 1, "reference": "generation-8f2c", "profileId": "profile-1"]
        try recordRequest("ReserveCreditsRequest", "ReserveCreditsRequest", reserve)
        let held = try await client.call(.post, "/api/credits/reservations", auth: key, user: "ana", json: reserve)
        record("ReservationResponse.held", "ReservationResponse", held)
        let id = try #require(held.json["reservation"]["id"].int)
        record(
            "ReservationResponse.committed",
            "ReservationResponse",
            try await client.call(.post, "/api/credits/reservations/\(id)/commit", auth: key, user: "ana")
        )
        record(
            "ErrorResponse.insufficient_credits",
            "ErrorResponse",
            try await client.call(.post, "/api/credits/reservations", auth: key, user: "ana", json: ["amount": 500])
        )
        record(
            "CreditTransactionsResponse",
            "CreditTransactionsResponse",
            try await client.call(.get, "/api/credits/transactions?limit=2", auth: key, user: "ana")
        )
        record("CreditLotsResponse", "CreditLotsResponse", try await client.call(.get, "/api/credits/lots", auth: key, user: "ana"))
        record(
            "EligibilityResponse",
            "EligibilityResponse",
            try await client.call(.get, "/api/credits/purchase-eligibility?productId=\(pack)", auth: key, user: "ana")
        )
        let product: JSON = [
            "productId": "com.aiimagestylist.credits.mega", "credits": 500, "title": "Mega", "description": "500 credits", "priceMinor": 3999,
            "displayOrder": 4,
        ]
        try recordRequest("CreditProductRequest", "CreditProductRequest", product)
        record(
            "CreditProductResponse",
            "CreditProductResponse",
            try await client.call(.post, "/api/admin/credit-products", auth: admin, json: product)
        )
        let adjustment: JSON = ["userId": "ana", "amount": 5, "reason": "generation failed after commit (ticket 4411)"]
        try recordRequest("AdjustmentRequest", "AdjustmentRequest", adjustment)
        record(
            "AdjustmentResponse",
            "AdjustmentResponse",
            try await client.call(.post, "/api/admin/credits/adjustments", auth: admin, json: adjustment)
        )
        record("LedgerListResponse", "LedgerListResponse", try await client.call(.get, "/api/admin/credits/ledger?limit=2", auth: admin))
        record("CreditStatsResponse", "CreditStatsResponse", try await client.call(.get, "/api/admin/credits/stats", auth: admin))
        record("LedgerCheckResponse", "LedgerCheckResponse", try await client.call(.get, "/api/admin/credits/check", auth: admin))
        record("AppResponse.credits", "AppResponse", try await client.call(.get, "/api/admin/app", auth: admin))
    }

    @Test("every real response and request validates against its OpenAPI schema and has its example's shape")
    func responsesMatchContract() async throws {
        let validator = try validator()
        let exchanges = try await recordSession()
        #expect(exchanges.count == 103)
        let examples = Self.contract.appendingPathComponent("examples")
        if ProcessInfo.processInfo.environment["BERTH_WRITE_EXAMPLES"] == "1" {
            for exchange in exchanges {
                let object = try JSONSerialization.jsonObject(with: exchange.data)
                let pretty = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
                try (pretty + Data("\n".utf8)).write(to: examples.appendingPathComponent("\(exchange.example).json"))
            }
        }
        for exchange in exchanges {
            let real = try JSON.parse(exchange.data)
            #expect(validator.validate(real, against: exchange.schema) == [], "real \(exchange.example)")
            let exampleURL = examples.appendingPathComponent("\(exchange.example).json")
            let example = try JSON.parse(try Data(contentsOf: exampleURL))
            #expect(validator.validate(example, against: exchange.schema) == [], "example \(exchange.example)")
            #expect(real.shape == example.shape, "\(exchange.example): the real response's fields differ from the example's")
        }
    }

    @Test("every example file is used by the contract test and names a schema")
    func noStrayExamples() throws {
        let validator = try validator()
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.contract.appendingPathComponent("examples").path).filter {
            $0.hasSuffix(".json")
        }
        #expect(files.count == 103)
        for file in files {
            let schema = String(file.split(separator: ".").first ?? "")
            #expect(validator.schemas[schema] != nil, "\(file) names no schema")
        }
    }

    @Test("every error code Berth can produce is listed in contract/berth.ts")
    func errorCodesInContract() throws {
        let typescript = try String(contentsOf: Self.contract.appendingPathComponent("berth.ts"), encoding: .utf8)
        let codes =
            (ErrorCode.all + PurchaseSources.standard.all.flatMap(\.errorCodes)).map(\.rawValue) + SignedDataError.Code.all.map(\.rawValue)
            + AppStoreAPIError.Code.all.map(\.rawValue)
        #expect(codes.count > 60)
        let missing = Set(codes).filter { !typescript.contains("\"\($0)\"") }.sorted()
        #expect(missing.isEmpty, "codes missing from contract/berth.ts: \(missing)")
    }

    @Test("no error code is written as a free string: every DomainError and APIError names an ErrorCode member")
    func noFreeStringCodes() throws {
        let pattern = try NSRegularExpression(pattern: #"\b(APIError|DomainError)\(\s*\.[a-zA-Z]+,\s*""#)
        let sources = Harness.repository.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        var offenders: [String] = []
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            if pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil { offenders.append(file) }
        }
        #expect(files.count > 50, "the scan must see the sources")
        #expect(offenders.isEmpty, "string codes in \(offenders)")
    }

    @Test("the validator refuses what the schema forbids")
    func validatorCatchesDifferences() throws {
        let validator = try validator()
        let bad = try JSON.parse(Data(#"{"success": true, "error": {"code": "X y", "message": 1}, "extra": 1}"#.utf8))
        let problems = validator.validate(bad, against: "ErrorResponse")
        #expect(problems.count >= 4, "\(problems)")
        let booking = try JSON.parse(Data(#"{"booking": {"id": 1.5}}"#.utf8))
        #expect(!validator.validate(booking, against: "BookingResponse").isEmpty)
    }
}

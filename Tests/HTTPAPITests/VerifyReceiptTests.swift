import AppleSignedData
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import SQLStore
import Synchronization
import TestKit
import Testing

@Suite("POST /api/verify-receipt (existing iOS clients)")
struct VerifyReceiptTests {
    func subscriptionReceipt(_ harness: Harness, expires: Date, bundle: String = "it.seaboo.app") throws -> String {
        var entry = AppReceipt.InAppPurchase()
        entry.quantity = 1
        entry.productId = "club.yearly"
        entry.transactionId = TestIDs.transactionId()
        entry.originalTransactionId = entry.transactionId
        entry.purchaseDate = AppleTimestamp(millisecondsSince1970: (harness.clock.now().epochMilliseconds / 1000 - 86_400) * 1000)
        entry.subscriptionExpirationDate = AppleTimestamp(millisecondsSince1970: Int64(expires.timeIntervalSince1970) * 1000)
        let receipt = AppReceipt(
            receiptType: "ProductionSandbox",
            bundleId: bundle,
            applicationVersion: "7",
            creationDate: AppleTimestamp(millisecondsSince1970: (harness.clock.now().epochMilliseconds / 1000) * 1000),
            inAppPurchases: [entry]
        )
        return Data(try harness.receiptCA.signReceipt(receipt)).base64EncodedString()
    }

    @Test("an active subscription answers 200 with isPremium; only the receipt's hash is stored")
    func premium() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let expires = harness.clock.now().addingTimeInterval(30 * 86_400)
            let receipt = try subscriptionReceipt(harness, expires: expires)
            let reply = try await client.call(
                .post,
                "/api/verify-receipt",
                auth: harness.serverKey,
                json: [
                    "receiptData": .string(receipt), "userId": "firebase-uid-1", "deviceInfo": ["model": "iPhone15,3"], "appVersion": "1.0 (7)",
                    "bundleId": "it.seaboo.app",
                ]
            )
            #expect(reply.status == .ok, "\(reply.json)")
            #expect(reply.json["success"].bool == true)
            #expect(reply.json["isPremium"].bool == true)
            #expect(reply.json["productId"].string == "club.yearly")
            #expect(reply.json["environment"].string == "sandbox")
            #expect((reply.json["expirationDate"].string)?.hasPrefix(String(expires.formatted(.iso8601).prefix(16))) == true)
            #expect(reply.json["message"].string != nil)

            let stored = try await harness.rows("SELECT receipt_sha256, user_id, is_premium FROM receipt_checks")
            #expect(stored.count == 1)
            #expect(stored[0]["receipt_sha256"]??.count == 64)
            #expect(stored[0]["user_id"] == "firebase-uid-1")
            let dump = try await harness.rows("SELECT * FROM receipt_checks").map { row in row.values.map { $0 ?? "" }.joined(separator: "|") }
            #expect(!dump.joined().contains(String(receipt.prefix(40))))
        }
    }

    @Test("an expired subscription is verified but not premium")
    func expired() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let receipt = try subscriptionReceipt(harness, expires: harness.clock.now().addingTimeInterval(-3600))
            let reply = try await client.call(.post, "/api/verify-receipt", auth: harness.serverKey, json: ["receiptData": .string(receipt)])
            #expect(reply.status == .ok)
            #expect(reply.json["success"].bool == true)
            #expect(reply.json["isPremium"].bool == false)
        }
    }

    @Test("bad receipts are 4xx (do not retry) in the clients' shape with Berth's error object")
    func refusals() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let foreign = try subscriptionReceipt(harness, expires: harness.clock.now().addingTimeInterval(3600), bundle: "com.other")
            let good = try subscriptionReceipt(harness, expires: harness.clock.now().addingTimeInterval(3600))
            let cases: [(JSON, HTTPResponse.Status, String)] = [
                (["receiptData": "not base64"], .badRequest, "malformed"),
                (["receiptData": "MIIT"], .badRequest, "malformed"),
                ([:], .badRequest, "missing_field"),
                (["receiptData": .string(foreign)], .unprocessableContent, "wrong_bundle"),
                (["receiptData": .string(good), "bundleId": "com.other"], .unprocessableContent, "wrong_bundle"),
            ]
            for (body, status, code) in cases {
                let reply = try await client.call(.post, "/api/verify-receipt", auth: harness.serverKey, json: body)
                #expect(reply.status == status, "\(body) → \(reply.json)")
                #expect(reply.json["success"].bool == false)
                #expect(reply.json["isPremium"].bool == false)
                #expect(reply.json["message"].string != nil)
                #expect(reply.errorCode == code)
            }
            let anonymous = try await client.call(.post, "/api/verify-receipt", auth: nil, json: ["receiptData": .string(good)])
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.json["isPremium"].bool == false)
        }
    }

    @Test("a temporary failure (the database is gone) is a 5xx the client retries, never a 200")
    func temporaryFailure() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let receipt = try subscriptionReceipt(harness, expires: harness.clock.now().addingTimeInterval(3600))
        let token = try await harness.userToken("dana")  // a JWT: authentication needs no database
        try harness.database.close()
        try await harness.app().test(.router) { client in
            let reply = try await client.call(.post, "/api/verify-receipt", auth: token, json: ["receiptData": .string(receipt)])
            #expect(reply.status == .serviceUnavailable)
            #expect(reply.errorCode == "temporarily_unavailable")
            #expect(reply.json["success"].bool == false)
        }
    }

    @Test(
        "S9: refused receipts leave no row (junk cannot grow the database); user ids over 200 UTF-8 bytes are refused however few graphemes they are"
    )
    func refusedReceiptsLeaveNoRow() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            for index in 0..<30 {
                let reply = try await client.call(
                    .post,
                    "/api/verify-receipt",
                    auth: harness.serverKey,
                    user: "junk-\(index)",
                    json: ["receiptData": index % 2 == 0 ? "AAAA" : "not base64 at all \(index)"]
                )
                #expect(reply.status == .badRequest || reply.status == .unprocessableContent, "\(reply.status) \(reply.json)")
            }
            #expect(try await harness.count("receipt_checks") == 0)
            // 200 letters each with 180 combining marks: 200 graphemes, 72,200 bytes.
            let huge = String(repeating: "a" + String(repeating: "\u{0301}", count: 180), count: 200)
            let refused = try await client.call(.post, "/api/verify-receipt", auth: harness.serverKey, user: huge, json: ["receiptData": "AAAA"])
            #expect(refused.status == .badRequest && refused.errorCode == "invalid_user_id", "\(refused.status) \(refused.json)")
            let bodyUser = try await client.call(
                .post,
                "/api/verify-receipt",
                auth: harness.serverKey,
                json: ["receiptData": "AAAA", "userId": .string(String(repeating: "a\u{0301}", count: 70))]
            )
            #expect(bodyUser.status == .badRequest, "the body's userId too (70 graphemes, 210 bytes): \(bodyUser.status) \(bodyUser.json)")
        }
    }

    @Test("verification endpoints are rate limited per user with 429 and Retry-After")
    func rateLimited() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            for _ in 0..<60 {
                _ = try await client.call(.post, "/api/verify-receipt", auth: harness.serverKey, user: "greedy", json: ["receiptData": "MIIT"])
            }
            let limited = try await client.execute(
                uri: "/api/verify-receipt",
                method: .post,
                headers: [.authorization: "Bearer \(harness.serverKey)", HTTPField.Name("X-User-Id")!: "greedy"],
                body: ByteBuffer(string: #"{"receiptData": "MIIT"}"#)
            ) { response in response }
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter] == "1")
            let other = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "patient",
                json: ["bookingId": 1, "productId": "x", "jwsRepresentation": "a.b.c"]
            )
            #expect(other.status != .tooManyRequests)
            let limitedPurchase = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "greedy",
                json: ["bookingId": 1, "productId": "x", "jwsRepresentation": "a.b.c"]
            )
            #expect(limitedPurchase.errorCode == "rate_limited")
            harness.clock.advance(2)
            let later = try await client.call(.post, "/api/verify-receipt", auth: harness.serverKey, user: "greedy", json: ["receiptData": "MIIT"])
            #expect(later.status == .badRequest)
        }
    }
}

/// Collects every log line (message and metadata) at trace level.
final class LogCapture: Sendable {
    let lines = Mutex<[String]>([])

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            capture.lines.withLock { $0.append("\(event.message) \(all)") }
        }
    }

    var logger: Logger { Logger(label: "berth.capture") { _ in Handler(capture: self) } }
}

@Suite("Logs")
struct LogHygieneTests {
    @Test("logs of verifications, refusals and replays contain no JWS and no receipt, only hash prefixes")
    func noSecretsInLogs() async throws {
        let capture = LogCapture()
        let harness = try await Harness.make(logger: capture.logger)
        defer { harness.close() }
        let secretsBox = Mutex<[String]>([])
        try await harness.app().test(.router) { client in
            let start = Harness.day(3, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "alice",
                body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
            )
            let jws = try harness.purchase("it.seaboo.rental.basic")
            let receipt = try harness.receipt("it.seaboo.rental.basic", transactionId: "2000000000000321")
            let forged = try TestCA.generate().signTransaction(.testPurchase(bundleId: "it.seaboo.app", productId: "it.seaboo.rental.basic"))
            secretsBox.withLock { $0 = [jws, receipt, forged] }
            let bookingId = try #require(booking["id"].int)
            for proof in [["jwsRepresentation": jws], ["jwsRepresentation": forged], ["receipt": receipt], ["jwsRepresentation": jws]] {
                var body: JSON = ["bookingId": .int(bookingId), "productId": "it.seaboo.rental.basic"]
                for (key, value) in proof { body[key] = .string(value) }
                _ = try await client.call(.post, "/api/verify-purchase", auth: harness.serverKey, user: "alice", json: body)
            }
            _ = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: harness.serverKey,
                user: "bob",
                json: ["bookingId": booking["id"], "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            _ = try await client.call(.post, "/api/verify-receipt", auth: harness.serverKey, json: ["receiptData": .string(receipt)])
            _ = try await client.call(
                .post,
                "/api/verify-receipt",
                auth: harness.serverKey,
                json: ["receiptData": .string(String(receipt.dropLast(8)))]
            )
        }
        let lines = capture.lines.withLock { $0 }
        let secrets = secretsBox.withLock { $0 }
        #expect(secrets.count == 3)
        #expect(lines.count > 3, "the scenario must log something to be a meaningful check")
        #expect(lines.contains { $0.contains("sha256") })
        for secret in secrets {
            let fragments = [String(secret.prefix(32)), String(secret.suffix(32)), String(secret.dropFirst(secret.count / 2).prefix(32))]
            for fragment in fragments {
                #expect(!lines.contains { $0.contains(fragment) }, "a log line contains part of a JWS or receipt")
            }
        }
    }
}

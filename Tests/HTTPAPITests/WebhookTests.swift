import AppleSignedData
import BerthApp
import BerthWorkers
import Crypto
import Foundation
import HTTPAPI
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import SQLStore
import Synchronization
import TestKit
import Testing
import UseCases

/// A tenant backend receiving webhooks: records them, answers `failures` times 503 first.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var event: String
        var signature: String
        var body: String
    }

    let state = Mutex<(failures: Int, received: [Received])>((0, []))

    var received: [Received] { state.withLock { $0.received } }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/hooks") { request, _ -> Response in
            var request = request
            let body = String(buffer: try await request.collectBody(upTo: 1 << 20))
            let fail = self.state.withLock { state -> Bool in
                if state.failures > 0 {
                    state.failures -= 1
                    return true
                }
                state.received.append(
                    Received(
                        event: request.headers[HTTPField.Name("Berth-Event")!] ?? "",
                        signature: request.headers[HTTPField.Name("Berth-Signature")!] ?? "",
                        body: body
                    )
                )
                return false
            }
            return Response(status: fail ? .serviceUnavailable : .ok)
        }
        return router
    }

    /// Recomputes the signature as a tenant would.
    static func isValid(_ received: Received, secret: String) -> Bool {
        let parts = Dictionary(
            uniqueKeysWithValues: received.signature.split(separator: ",").compactMap { part -> (String, String)? in
                let pair = part.split(separator: "=", maxSplits: 1)
                return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
            }
        )
        guard let timestamp = parts["t"], let signature = parts["v1"] else { return false }
        let expected = HMAC<SHA256>.authenticationCode(for: Data("\(timestamp).\(received.body)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return expected.map { String(format: "%02x", $0) }.joined() == signature
    }
}

@Suite("Outbound webhooks")
struct WebhookTests {
    @Test("a refund reaches the tenant as signed booking.refunded; a receiver that is down is retried; nothing is lost across a restart")
    func refundWebhook() async throws {
        let receiver = WebhookReceiver()
        try await Application(router: receiver.router()).test(.live) { hooks in
            let harness = try await Harness.make(webhookURL: "http://127.0.0.1:\(hooks.port!)/hooks")
            defer { harness.close() }
            let transaction = TransactionPayload.testPurchase(
                bundleId: "it.seaboo.app",
                productId: "it.seaboo.rental.basic",
                transactionId: "2000000000008001"
            )
            // The router alone: no delivery service runs until the "restart" below.
            try await Application(router: buildRouter(services: harness.services)).test(.router) { client in
                let start = Harness.day(3, from: harness.clock.now())
                let booking = try await createBooking(
                    client,
                    harness,
                    user: "alice",
                    body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
                )
                let paid = try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: harness.serverKey,
                    user: "alice",
                    json: [
                        "bookingId": booking["id"], "productId": "it.seaboo.rental.basic",
                        "jwsRepresentation": try .string(harness.ca.signTransaction(transaction)),
                    ]
                )
                #expect(paid.status == .ok)
                let refund = try await client.call(
                    .post,
                    "/api/apple/notifications/seaboo-test",
                    auth: nil,
                    json: [
                        "signedPayload": try .string(harness.ca.signNotification(type: .refund, bundleId: "it.seaboo.app", transaction: transaction))
                    ]
                )
                #expect(refund.json["outcome"].string == "booking_refunded")
            }

            // The process "restarts" before any delivery: a new database connection and deliverer on the same file.
            try harness.database.close()
            let setup = BerthSetup(
                catalogURL: harness.directory.appendingPathComponent("products.json"),
                databasePath: harness.directory.appendingPathComponent("berth.sqlite").path,
                migrationsURL: Harness.repository.appendingPathComponent("migrations"),
                environment: ["SEABOO_TEST_WEBHOOK_SECRET": Harness.webhookSecret]
            )
            var logger = Logger(label: "restart")
            logger.logLevel = .warning
            let (catalog, database) = try await setup.prepareStore(logger: logger, now: harness.clock.now())
            let services = try await setup.services(
                catalog: catalog,
                store: database,
                clock: harness.clock,
                httpClient: Harness.outbound,
                logger: logger
            )
            let client = WebhookHTTPClient()
            let deliverer = webhookDeliverer(services: services, client: client)

            // The receiver refuses the first event; the booking's later events wait behind it (order is kept).
            receiver.state.withLock { $0.failures = 1 }
            #expect(try await deliverer.deliverDue() == 1)
            #expect(receiver.received.isEmpty)
            #expect(try await deliverer.deliverDue() == 0, "failed deliveries, and what follows them, wait for the backoff")
            harness.clock.advance(6)
            #expect(try await deliverer.deliverDue() == 3)
            let events = receiver.received.map(\.event)
            #expect(events == ["booking.confirmed", "booking.refunded", "purchase.refunded"])
            let sequences = receiver.received.compactMap { (try? JSON.parse($0.body))?.object }.map {
                $0["sequence"].int
            }
            #expect(sequences == [1, 2, 3])
            for message in receiver.received {
                #expect(WebhookReceiver.isValid(message, secret: Harness.webhookSecret), "bad signature on \(message.event)")
                #expect(!WebhookReceiver.isValid(message, secret: "another-secret-entirely"))
            }
            let refunded = try #require(receiver.received.first { $0.event == "booking.refunded" })
            #expect(refunded.body.contains("\"transactionId\":\"2000000000008001\""))
            #expect(refunded.body.contains("\"status\":\"refunded\""))
            harness.clock.advance(3600)
            #expect(try await deliverer.deliverDue() == 0, "delivered events are not sent again")

            // Admin sees every attempt and can re-send one.
            try await Application(router: buildRouter(services: services)).test(.router) { client in
                let deliveries = try await client.call(.get, "/api/admin/webhooks/deliveries", auth: harness.adminKey)
                #expect(deliveries.json["total"].int == 4)
                let items = try #require(deliveries.json["items"].array)
                let success = try #require(items.first { $0["statusCode"].int == 200 })
                #expect(items.contains { $0["statusCode"].int == 503 })
                let resent = try await client.call(.post, "/api/admin/webhooks/deliveries/\(success["id"])/resend", auth: harness.adminKey)
                #expect(resent.json["queued"].bool == true)
                #expect(try await client.call(.post, "/api/admin/webhooks/deliveries/1/resend", auth: harness.adminKey).status == .notFound)
            }
            #expect(try await deliverer.deliverDue() == 1)
            #expect(receiver.received.count == 4)
            try await client.shutdown()
            try database.close()
        }
    }
}

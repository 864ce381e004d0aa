import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StoreTesting
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a running `berth serve` lets out (issue 24): no secret in its logs at any level, and no
/// metrics off loopback without a token.
@Suite("Exposure: secrets never logged, metrics not open to the network", .serialized)
struct ExposureTests {
    /// Apple's verifyReceipt and a webhook receiver, on loopback.
    final class StandIn: Sendable {
        let verifyReceiptBodies = Mutex<[String]>([])
        let hooks = Atomic<Int>(0)

        func router() -> Router<BasicRequestContext> {
            let router = Router()
            router.post("/verifyReceipt") { request, _ -> Response in
                let body = try await request.body.collect(upTo: 1 << 20)
                self.verifyReceiptBodies.withLock { $0.append(String(buffer: body)) }
                return Response(
                    status: .ok,
                    headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"status": 21002}"#))
                )
            }
            router.post("/hook") { _, _ -> Response in
                self.hooks.add(1, ordering: .relaxed)
                return Response(status: .ok)
            }
            return router
        }
    }

    @Test("a server configured with every kind of secret, logging at trace in both formats, never writes one of them")
    func secretsStayOutOfLogs() async throws {
        let standIn = StandIn()
        try await Application(router: standIn.router()).test(.live) { apple in
            let port = try #require(apple.port)
            let server = try await ServerProcess()
            defer { server.cleanUp() }
            let catalogURL = server.directory.appendingPathComponent("products.json")
            var catalog = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: catalogURL)) as? [String: Any])
            var tenants = try #require(catalog["tenants"] as? [[String: Any]])
            let brain = try #require(tenants.firstIndex { $0["id"] as? String == "braindumpster-test" })
            tenants[brain]["subscriptions"] = [
                "verifyReceipt": [
                    "sharedSecretEnv": "BRAIN_SHARED_SECRET", "productionURL": "http://127.0.0.1:\(port)/verifyReceipt",
                    "sandboxURL": "http://127.0.0.1:\(port)/verifyReceipt",
                ]
            ]
            let stylist = try #require(tenants.firstIndex { $0["id"] as? String == "aistylist-test" })
            tenants[stylist]["webhook"] = ["url": "http://127.0.0.1:\(port)/hook", "secretEnv": "STYLIST_WEBHOOK_SECRET", "allowLoopbackHTTP": true]
            catalog["tenants"] = tenants
            try JSONSerialization.data(withJSONObject: catalog).write(to: catalogURL)

            let secrets = [
                "BRAIN_SHARED_SECRET": "shared-secret-e1f2a3b4c5d6",
                "STYLIST_WEBHOOK_SECRET": "webhook-secret-9a8b7c6d5e4f",
                "BERTH_METRICS_TOKEN": "metrics-token-0f1e2d3c4b5a",
                "BERTH_DATABASE_PASSWORD": "database-password-5a6b7c8d",
                "SEABOO_TEST_JWT_SECRET": "jwt-secret-seaboo-test-77aa88bb99cc",
                "AISTYLIST_TEST_JWT_SECRET": "jwt-secret-aistylist-test-11dd22ee33ff",
                "BRAINDUMPSTER_TEST_JWT_SECRET": "jwt-secret-brain-test-44aa55bb66cc",
            ]
            let serverKey = try await server.berth(["keys", "create", "--tenant", "braindumpster-test", "--role", "server"]).stdout
                .trimmingCharacters(
                    in: .whitespacesAndNewlines
                )
            let stylistKey = try await server.berth(["keys", "create", "--tenant", "aistylist-test", "--role", "admin"]).stdout.trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            let receipt = try await server.berth([
                "testkit", "sign-receipt", "--ca", "berth-ca", "--bundle-id", "com.braindumpster.app", "--product", "brain_dumpster_yearly_premium",
            ])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            var leaks: [String] = []
            for format in ["json", "text"] {
                let log = server.directory.appendingPathComponent("stderr-\(format).log")
                try await server.start(environment: secrets.merging(["BERTH_LOG_LEVEL": "trace", "BERTH_LOG_FORMAT": format]) { $1 }, errorLog: log)
                // Apple's verifyReceipt gets the shared secret; the webhook is signed with its secret.
                let verified = try await server.request(
                    "POST",
                    "/api/verify-receipt",
                    headers: ["Authorization": "Bearer \(serverKey)", "X-User-Id": "ana"],
                    body: ["receiptData": receipt]
                )
                #expect(verified.status < 500, "\(verified.status) \(verified.json)")
                let adjusted = try await server.request(
                    "POST",
                    "/api/admin/credits/adjustments",
                    headers: ["Authorization": "Bearer \(stylistKey)"],
                    body: ["userId": "ana", "amount": 5, "reason": "exposure test"]
                )
                #expect(adjusted.status == 200 || adjusted.status == 201, "\(adjusted.status) \(adjusted.json)")
                _ = try await server.request("GET", "/metrics", headers: ["Authorization": "Bearer \(secrets["BERTH_METRICS_TOKEN"] ?? "")"])
                _ = try await server.request("GET", "/api/entitlements", headers: ["Authorization": "Bearer \(serverKey)x", "X-User-Id": "ana"])
                let hooksBefore = standIn.hooks.load(ordering: .relaxed)
                _ = try await eventually(every: .milliseconds(100)) { standIn.hooks.load(ordering: .relaxed) != hooksBefore }
                server.stop()
                let text = try String(contentsOf: log, encoding: .utf8)
                #expect(text.count > 1000, "the server logged at trace (\(text.count) characters)")
                for (name, secret) in secrets where text.contains(secret) { leaks.append("\(name) in the \(format) log") }
                for key in [serverKey, stylistKey] where text.contains(key) { leaks.append("an API key in the \(format) log") }
            }
            #expect(
                standIn.verifyReceiptBodies.withLock { $0.contains { $0.contains(secrets["BRAIN_SHARED_SECRET"] ?? "-") } },
                "the shared secret did reach Apple's stand-in (the check looks at a log that had it to write)"
            )
            #expect(standIn.hooks.load(ordering: .relaxed) >= 1, "webhooks were signed and sent")
            #expect(leaks.isEmpty, "\(leaks)")
        }
    }

    @Test(
        "S19: without BERTH_METRICS_TOKEN, /metrics answers on loopback only; listening on another address it refuses, with a token it serves there"
    )
    func metricsOffLoopback() async throws {
        // A non-loopback IPv4 address of this machine to listen on (the test talks to this machine only).
        let interface = try System.enumerateDevices().compactMap { $0.address?.ipAddress }
            .first { $0.contains(".") && !$0.hasPrefix("127.") }
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        try await server.start()
        #expect(try await server.request("GET", "/metrics", headers: [:]).status == 200, "loopback, no token: open")
        // V12: a proxy on this machine forwarding someone else's request is not a local scraper.
        for header in ["X-Forwarded-For", "Forwarded", "X-Real-IP"] {
            let forwarded = try await server.request("GET", "/metrics", headers: [header: "203.0.113.9"])
            #expect(forwarded.status == 403, "\(header): \(forwarded.status)")
        }
        server.stop()
        try await server.start(environment: ["BERTH_METRICS_TOKEN": "metrics-token-abc123"])
        #expect(
            try await server.request("GET", "/metrics", headers: ["X-Forwarded-For": "203.0.113.9", "Authorization": "Bearer metrics-token-abc123"])
                .status == 200,
            "forwarded with the token: served"
        )
        server.stop()
        guard let interface else {
            Issue.record("this machine has no non-loopback IPv4 address to listen on")
            return
        }
        func metrics(_ token: String?) async throws -> Int {
            try await server.request("GET", "/metrics", headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:]).status
        }
        try await server.start(environment: ["BERTH_HOST": interface])
        #expect(try await metrics(nil) == 403, "off loopback without a token: refused")
        server.stop()
        try await server.start(environment: ["BERTH_HOST": interface, "BERTH_METRICS_TOKEN": "metrics-token-abc123"])
        #expect(try await metrics(nil) == 401)
        #expect(try await metrics("metrics-token-abc123") == 200)
        server.stop()
    }
}

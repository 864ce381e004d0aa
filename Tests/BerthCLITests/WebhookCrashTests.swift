import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import StoreTesting
import Synchronization
import Testing

@Suite("Webhooks across a crash", .serialized)
struct WebhookCrashTests {
    final class Receiver: Sendable {
        let state = Mutex<(down: Bool, failed: Int, events: [String])>((true, 0, []))

        func router() -> Router<BasicRequestContext> {
            let router = Router()
            router.post("/hooks") { request, _ -> Response in
                let event = request.headers[HTTPField.Name("Berth-Event")!] ?? ""
                let down = self.state.withLock { state -> Bool in
                    if state.down {
                        state.failed += 1
                        return true
                    }
                    state.events.append(event)
                    return false
                }
                return Response(status: down ? .serviceUnavailable : .ok)
            }
            return router
        }
    }

    @Test("berth serve killed -9 after committing a confirmation, before delivering it, delivers it after the restart")
    func deliveredAfterRestart() async throws {
        let receiver = Receiver()
        try await Application(router: receiver.router()).test(.live) { hooks in
            let server = try await ServerProcess()
            defer { server.cleanUp() }
            let catalogURL = server.directory.appendingPathComponent("products.json")
            var catalog = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: catalogURL)) as? [String: Any])
            var tenants = try #require(catalog["tenants"] as? [[String: Any]])
            let index = try #require(tenants.firstIndex { $0["id"] as? String == "seaboo-test" })
            tenants[index]["webhook"] = [
                "url": "http://127.0.0.1:\(hooks.port!)/hooks", "secretEnv": "SEABOO_TEST_WEBHOOK_SECRET", "allowLoopbackHTTP": true,
            ]
            catalog["tenants"] = tenants
            try JSONSerialization.data(withJSONObject: catalog).write(to: catalogURL)
            let environment = ["SEABOO_TEST_WEBHOOK_SECRET": "a-webhook-secret-of-some-length"]

            let key = try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", "server"]).stdout.trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            let admin = try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", "admin"]).stdout.trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            try await server.start(environment: environment)
            let start = Date(timeIntervalSince1970: ((Date().timeIntervalSince1970 / 86_400).rounded(.down) + 3) * 86_400 + 8 * 3600)
            let created = try await server.request(
                "POST",
                "/api/bookings",
                headers: ["Authorization": "Bearer \(key)", "X-User-Id": "alice"],
                body: ["resourceId": "gozzo-5m", "start": start.formatted(.iso8601), "end": start.addingTimeInterval(3600).formatted(.iso8601)]
            )
            let bookingId = try #require((created.json["booking"] as? [String: Any])?["id"] as? Int)
            let jws = try await server.berth([
                "testkit", "sign-transaction", "--ca", "berth-ca", "--bundle-id", "it.seaboo.app", "--product", "it.seaboo.rental.basic",
            ])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let paid = try await server.request(
                "POST",
                "/api/verify-purchase",
                headers: ["Authorization": "Bearer \(key)", "X-User-Id": "alice"],
                body: ["bookingId": bookingId, "productId": "it.seaboo.rental.basic", "jwsRepresentation": jws]
            )
            #expect(paid.status == 200)
            // The receiver is down: wait for the first refused attempt, then crash the server.
            _ = try await eventually(every: .milliseconds(100)) { receiver.state.withLock { $0.failed } >= 1 }
            #expect(receiver.state.withLock { $0.failed } >= 1)
            // Wait until the deliverer has recorded the refused attempt (which ends its lease): a kill
            // before that leaves the message leased for 2 minutes.
            let recorded = try await eventually(every: .milliseconds(100)) {
                let deliveries = try await server.request("GET", "/api/admin/webhooks/deliveries", headers: ["Authorization": "Bearer \(admin)"])
                return (deliveries.json["total"] as? Int ?? 0) >= 1
            }
            #expect(recorded, "the refused attempt is recorded")
            server.kill9()

            receiver.state.withLock { $0.down = false }
            try await server.start(environment: environment)
            _ = try await eventually(every: .milliseconds(100)) { !receiver.state.withLock { $0.events }.isEmpty }
            #expect(receiver.state.withLock { $0.events } == ["booking.confirmed"])
            server.stop()
        }
    }
}

import BerthApp
import BerthWorkers
import Domain
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
import StoreTesting
import Synchronization
import Testing
import UseCases

#if canImport(Glibc)
import Glibc
import SQLStore
#endif

/// S7: one tenant's dead receiver never delays another tenant's events, and retries end in a dead
/// letter an operator can re-send.
@Suite("Webhooks: a loop per tenant, capped attempts, dead letters")
struct WebhookFairnessTests {
    /// A socket on 127.0.0.1 that never accepts: connections complete in the kernel's backlog and
    /// requests are never answered (a black-holed receiver).
    final class BlackHole: Sendable {
        let descriptor: Int32
        let port: Int

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw POSIXFailure("socket") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(fd, 64) == 0 else {
                _ = Glibc.close(fd)
                throw POSIXFailure("bind/listen")
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            descriptor = fd
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        func close() { _ = Glibc.close(descriptor) }
    }

    struct POSIXFailure: Error {
        var call: String
        init(_ call: String) { self.call = call }
    }

    /// The deliverer as the server builds it, over the harness's store, tenants and clock.
    static func deliverer(
        _ harness: Harness,
        _ client: WebhookHTTPClient,
        interval: Duration = .milliseconds(500),
        perTenant: Int = DeliverWebhooks.defaultPerTenant,
        retry: JobRetry = .webhooks
    ) -> WebhookDeliverer {
        WebhookDeliverer(
            store: harness.database,
            tenants: harness.services.tenants,
            client: client,
            clock: harness.clock,
            logger: Logger(label: "test"),
            interval: interval,
            perTenant: perTenant,
            retry: retry
        )
    }

    static func event(_ n: Int) -> WebhookEvent {
        WebhookEvent(type: .creditsChanged, data: ["userId": "u\(n)"], subject: "credits:credits:u\(n)")
    }

    @Test("a black-holed receiver of one tenant delays only that tenant: another tenant's event goes out while the first attempt still hangs")
    func oneDeadReceiverDelaysOnlyItsTenant() async throws {
        let receiver = WebhookReceiver()
        let hole = try BlackHole()
        defer { hole.close() }
        try await Application(router: receiver.router()).test(.live) { hooks in
            let harness = try await Harness.make(
                webhookURL: "http://127.0.0.1:\(hole.port)/hooks",
                otherWebhookURL: "http://127.0.0.1:\(hooks.port!)/hooks"
            )
            defer { harness.close() }
            let now = harness.clock.now()
            try await harness.database.write { tx in try tx.outbox.enqueue((0..<12).map(Self.event), tenantId: "seaboo-test", now: now) }
            let client = WebhookHTTPClient()
            let deliverer = Self.deliverer(harness, client, interval: .milliseconds(50))
            let running = Task { try await deliverer.run() }
            // The dead receiver's messages are claimed and their first attempt hangs (10 s timeout).
            _ = try await eventually {
                let leased = try await harness.rows(
                    "SELECT COUNT(*) AS n FROM webhook_outbox WHERE tenant_id = 'seaboo-test' AND lease_owner IS NOT NULL"
                )
                return leased.first?["n"] != "0"
            }
            try await harness.database.write { tx in try tx.outbox.enqueue([Self.event(99)], tenantId: "seaboo", now: now) }
            _ = try await eventually { !receiver.received.isEmpty }
            let hung = try await harness.rows("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE tenant_id = 'seaboo-test'").first?["n"]
            #expect(receiver.received.map(\.event) == ["credits.changed"], "the other tenant's event arrived")
            #expect(hung == "0", "and it did so while the dead receiver's first attempt was still waiting: \(hung ?? "nil") attempts recorded")
            running.cancel()
            _ = await running.result
            try await client.shutdown()
        }
    }

    @Test(
        "subjects of one tenant go out side by side, each in order: while the receiver holds one subject's first event, the other subjects are delivered and that subject's later events wait behind it; released, they follow in order"
    )
    func subjectsSideBySide() async throws {
        // The held answer waits on this stream (an event), ended when the test opens the gate.
        let (gate, openGate) = AsyncStream<Never>.makeStream()
        let received = Mutex<[String]>([])
        let router = Router()
        router.post("/hooks") { request, _ -> Response in
            var request = request
            let body = try await request.collectBody(upTo: 1 << 20)
            let envelope = try JSON.parse(Data(String(buffer: body).utf8)).object
            let data = envelope?["data"].object
            let user = data?["userId"].string ?? "?"
            let step = data?["step"].string ?? "?"
            if user == "slow" && step == "1" {
                for await _ in gate {}
            }
            received.withLock { $0.append("\(user)/\(step)") }
            return Response(status: .ok)
        }
        try await Application(router: router).test(.live) { hooks in
            let harness = try await Harness.make(webhookURL: "http://127.0.0.1:\(hooks.port!)/hooks")
            defer { harness.close() }
            func event(_ user: String, _ step: Int) -> WebhookEvent {
                WebhookEvent(type: .creditsChanged, data: ["userId": user, "step": String(step)], subject: "credits:credits:\(user)")
            }
            // The held subject's events are the oldest: one at a time, the others would wait behind them.
            let events = (1...3).map { event("slow", $0) } + (0..<10).map { event("u\($0)", 1) }
            let now = harness.clock.now()
            try await harness.database.write { tx in try tx.outbox.enqueue(events, tenantId: "seaboo-test", now: now) }
            // A send timeout far beyond the test: the held event must not time out on a busy machine.
            let client = WebhookHTTPClient(timeout: .seconds(300))
            let deliverer = Self.deliverer(harness, client, interval: .milliseconds(20), perTenant: 4)
            let running = Task { try await deliverer.run() }
            func of(_ user: String) -> [String] { received.withLock { $0.filter { $0.hasPrefix(user + "/") } } }
            let others = try await eventually { received.withLock { $0.filter { !$0.hasPrefix("slow/") }.count } == 10 }
            #expect(others, "the other subjects were delivered while one was held: \(received.withLock { $0 })")
            #expect(of("slow").isEmpty, "the held subject's later events wait behind its first: \(of("slow"))")
            openGate.finish()
            #expect(try await eventually { of("slow").count == 3 }, "released, the held subject's events arrive")
            #expect(of("slow") == ["slow/1", "slow/2", "slow/3"], "in their order")
            #expect(received.withLock { $0.count } == 13, "each once: \(received.withLock { $0 })")
            running.cancel()
            _ = await running.result
            try await client.shutdown()
        }
    }

    @Test("at start, messages left for a tenant that no longer has a webhook are marked skipped, not kept queued")
    func leftoversSkipped() async throws {
        let harness = try await Harness.make()  // no tenant has a webhook
        defer { harness.close() }
        try await harness.database.write { [now = harness.clock.now()] tx in
            try tx.outbox.enqueue([Self.event(1), Self.event(2)], tenantId: "seaboo-test", now: now)
        }
        let client = WebhookHTTPClient()
        let deliverer = Self.deliverer(harness, client)
        // In a service group, as the server runs it: a service that returns before shutdown fails the
        // group (serviceFinishedUnexpectedly), which is what a deliverer with nothing to serve once did.
        let group = ServiceGroup(configuration: .init(services: [deliverer], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        _ = try await eventually { try await harness.database.read({ try $0.outbox.pendingCount() }) == 0 }
        #expect(try await harness.database.read { try $0.outbox.pendingCount() } == 0)
        #expect(try await harness.rows("SELECT DISTINCT status FROM webhook_outbox").map { $0["status"] ?? nil } == ["skipped"])
        await group.triggerGracefulShutdown()
        let ended = await running.result
        #expect((try? ended.get()) != nil, "the deliverer kept running until shutdown: \(ended)")
        try await client.shutdown()
    }

    @Test(
        "after the last allowed attempt a message is a dead letter: not retried, listed for admins, re-sent on request with a new round of attempts"
    )
    func deadLetters() async throws {
        let receiver = WebhookReceiver()
        try await Application(router: receiver.router()).test(.live) { hooks in
            let harness = try await Harness.make(webhookURL: "http://127.0.0.1:\(hooks.port!)/hooks")
            defer { harness.close() }
            try await harness.database.write { [now = harness.clock.now()] tx in
                try tx.outbox.enqueue([Self.event(1)], tenantId: "seaboo-test", now: now)
            }
            let client = WebhookHTTPClient()
            let deliverer = Self.deliverer(harness, client, retry: .exponential(first: 5, cap: 3600, maximumAttempts: 3))
            receiver.state.withLock { $0.failures = 100 }
            for _ in 0..<3 {
                #expect(try await deliverer.deliverDue(tenantId: "seaboo-test") == 1)
                harness.clock.advance(3600)
            }
            #expect(try await deliverer.deliverDue(tenantId: "seaboo-test") == 0, "given up after 3 attempts")
            harness.clock.advance(86_400)
            #expect(try await deliverer.deliverDue() == 0, "a dead letter is never claimed")
            #expect(try await harness.database.read { try $0.outbox.pendingCount() } == 0, "nor counted as queued")
            receiver.state.withLock { $0.failures = 0 }
            // The router alone: the application would also run its own deliverer, which could take the re-sent event first.
            try await Application(router: buildRouter(services: harness.services)).test(.router) { api in
                let dead = try await api.call(.get, "/api/admin/webhooks/dead-letters", auth: harness.adminKey)
                #expect(dead.json["total"].int == 1, "\(dead.json)")
                let letter = try #require((dead.json["items"].array)?.first)
                #expect(letter["attempts"].int == 3 && letter["eventType"].string == "credits.changed")
                #expect(
                    try await api.call(.get, "/api/admin/webhooks/dead-letters", auth: harness.otherAdminKey).json["total"].int == 0,
                    "per tenant"
                )
                let resent = try await api.call(
                    .post,
                    "/api/admin/webhooks/deliveries/\(try #require(letter["lastDeliveryId"].int))/resend",
                    auth: harness.adminKey
                )
                #expect(resent.status == .ok)
            }
            #expect(try await deliverer.deliverDue(tenantId: "seaboo-test") == 1)
            #expect(receiver.received.count == 1)
            #expect(
                try await harness.rows("SELECT attempts, dead_at FROM webhook_outbox").first.map { [$0["attempts"] ?? nil, $0["dead_at"] ?? nil] }
                    == ["1", nil]
            )
            try await client.shutdown()
        }
    }
}

/// Set when a task returns (an `Atomic` cannot be captured by value).
private final class Finished: Sendable {
    let value = Atomic<Bool>(false)
}

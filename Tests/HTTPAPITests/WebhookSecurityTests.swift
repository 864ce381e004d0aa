import BerthApp
import Domain
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOPosix
import SQLStore
import StoreTesting
import Synchronization
import Testing

@testable import BerthWorkers
@testable import HTTPAPI

@Suite("Webhook delivery: redirects, addresses, one tenant's dead receiver")
struct WebhookSecurityTests {
    /// Puts one event for `tenant` into the outbox, as a committed change would.
    func enqueue(_ harness: Harness, tenant: String, booking: Int) async throws {
        _ = try await harness.rows(
            """
            INSERT INTO webhook_outbox (id, tenant_id, event_type, payload, status, attempts, next_attempt_at, created_at, subject, sequence)
            VALUES (?, ?, 'booking.confirmed', ?, 'pending', 0, 0, ?, ?, 1)
            """,
            [Int64(booking), tenant, "{\"bookingId\":\"\(booking)\"}", Int64(booking), "booking:\(booking)"]
        )
    }

    @Test("S11: the connection goes to the address that was vetted (no second resolution); a slow resolver meets a deadline off the request threads")
    func connectsToTheVettedAddress() async throws {
        let hits = Mutex(0)
        let router = Router()
        router.post("/hooks") { _, _ -> HTTPResponse.Status in
            hits.withLock { $0 += 1 }
            return .ok
        }
        try await Application(router: router).test(.live) { hooks in
            let port = try #require(hooks.port)
            let lookups = Mutex(0)
            // "rebind.test" resolves (once) to loopback; the system resolver does not know the name,
            // so the delivery succeeds only if Berth connects to the address it vetted.
            // The exchange's deadline is not what this judges: on a loaded machine a loopback
            // delivery once took over the default 10 s (CI), so it gets a bound only a hang meets.
            let client = WebhookHTTPClient(
                timeout: .seconds(120),
                resolver: { host in
                    lookups.withLock { $0 += 1 }
                    return host == "rebind.test" ? [WebhookHTTPClient.Address(bytes: [127, 0, 0, 1])] : []
                }
            )
            let webhook = Tenant.Webhook(url: "http://rebind.test:\(port)/hooks", secretEnv: "X", allowLoopbackHTTP: true)
            let outcome = await client.post("{}", headers: [("Content-Type", "application/json")], to: webhook)
            #expect(outcome.statusCode == 200 && outcome.failure == nil, "\(String(describing: outcome.failure))")
            #expect(hits.withLock { $0 } == 1 && lookups.withLock { $0 } == 1)

            // The slow resolver is held until the answer is back: if the answer came while the
            // lookup was still held, the deadline ended the wait (no clock reading, so a loaded
            // machine cannot make this flaky). The hold is bounded so a broken deadline fails
            // the test instead of hanging it.
            let release = DispatchSemaphore(value: 0)
            let lookupEnded = Mutex(false)
            let slow = WebhookHTTPClient(
                resolutionDeadline: .milliseconds(200),
                resolver: { _ in
                    _ = release.wait(timeout: .now() + 20)
                    lookupEnded.withLock { $0 = true }
                    return [WebhookHTTPClient.Address(bytes: [127, 0, 0, 1])]
                }
            )
            let late = await slow.post("{}", headers: [], to: webhook)
            let endedFirst = lookupEnded.withLock { $0 }
            release.signal()
            #expect(late.failure == .unresolvable)
            #expect(!endedFirst, "the deadline, not the resolver, ended the wait")

            // A receiver that speaks plain HTTP where https was asked: the TLS handshake fails. The
            // receiver answers the ClientHello with an HTTP 400 and keeps the connection open, so
            // the handshake fails on what it read (an HTTP server that closes at once races a
            // reset against the read on a loaded machine, and the client sees a connect failure).
            let loopback = WebhookHTTPClient(timeout: .seconds(120), resolver: { _ in [WebhookHTTPClient.Address(bytes: [127, 0, 0, 1])] })
            let plainServer = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in channel.pipeline.addHandler(PlainHTTPAnswer()) }
                .bind(host: "127.0.0.1", port: 0).get()
            defer { plainServer.close(promise: nil) }
            let plainPort = try #require(plainServer.localAddress?.port)
            let plain = Tenant.Webhook(url: "https://tls.test:\(plainPort)/hooks", secretEnv: "X", allowLoopbackHTTP: true)
            let tlsOutcome = await loopback.post("{}", headers: [], to: plain)
            #expect(tlsOutcome.failure == .tlsFailed, "\(String(describing: tlsOutcome.failure))")
            // Nothing listens on the port (bound and held, never listening): the connection is refused.
            let refusing = try RefusingPort()
            defer { refusing.close() }
            let nobody = Tenant.Webhook(url: "http://gone.test:\(refusing.port)/hooks", secretEnv: "X", allowLoopbackHTTP: true)
            #expect(await loopback.post("{}", headers: [], to: nobody).failure == .connectFailed)
        }
    }

    @Test("S11: IPv4 inside NAT64, 6to4 and IPv4-compatible IPv6 is judged as that IPv4")
    func embeddedIPv4() {
        func v6(_ prefix: [UInt8], _ v4: [UInt8], at offset: Int = 12) -> WebhookHTTPClient.Address {
            var bytes = prefix + [UInt8](repeating: 0, count: 16 - prefix.count)
            for (index, byte) in v4.enumerated() { bytes[offset + index] = byte }
            return WebhookHTTPClient.Address(bytes: bytes)
        }
        let nat64: [UInt8] = [0x00, 0x64, 0xff, 0x9b]
        #expect(v6(nat64, [127, 0, 0, 1]).scope == .loopback)
        #expect(v6(nat64, [169, 254, 169, 254]).scope == .reserved)
        #expect(v6(nat64, [10, 0, 0, 1]).scope == .private)
        #expect(v6(nat64, [93, 184, 216, 34]).scope == .public)
        #expect(v6([0x20, 0x02], [192, 168, 1, 1], at: 2).scope == .private)
        #expect(v6([0x20, 0x02], [127, 0, 0, 1], at: 2).scope == .loopback)
        #expect(v6([], [169, 254, 169, 254]).scope == .reserved, "::169.254.169.254")
        #expect(v6([0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], [8, 8, 8, 8]).scope == .reserved, "local-use NAT64")
        #expect(v6([0x26, 0x06, 0x47, 0x00], []).scope == .public)
        #expect(WebhookHTTPClient.Address(bytes: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]).text == "2001:db8::1")
        #expect(WebhookHTTPClient.Address(bytes: [192, 0, 2, 7]).text == "192.0.2.7")
    }

    @Test("a receiver answering 307 to a loopback address is not followed; only a coarse error class is kept")
    func redirectNotFollowed() async throws {
        let hits = Mutex(0)
        let inside = Router()
        inside.post("/internal") { _, _ -> HTTPResponse.Status in
            hits.withLock { $0 += 1 }
            return .ok
        }
        try await Application(router: inside).test(.live) { inner in
            let redirector = Router()
            redirector.post("/hooks") { _, _ in
                Response(status: .temporaryRedirect, headers: [.location: "http://127.0.0.1:\(inner.port!)/internal"])
            }
            try await Application(router: redirector).test(.live) { hooks in
                let harness = try await Harness.make(webhookURL: "http://127.0.0.1:\(hooks.port!)/hooks")
                defer { harness.close() }
                try await enqueue(harness, tenant: "seaboo-test", booking: 1)
                let client = WebhookHTTPClient()
                let deliverer = webhookDeliverer(services: harness.services, client: client)
                #expect(try await deliverer.deliverDue() == 1)
                try await client.shutdown()
                #expect(hits.withLock { $0 } == 0, "the redirect was followed into the internal network")
                let deliveries = try await harness.database.read { try $0.outbox.deliveries(tenantId: "seaboo-test", page: Page()) }
                #expect(deliveries.items.first?.statusCode == 307)
                #expect(deliveries.items.first?.error == "redirect_refused")
            }
        }
    }

    @Test("one black-holed tenant endpoint does not delay another tenant's delivery")
    func blackHoleDoesNotBlockOthers() async throws {
        let othersDelivered = Mutex(false)
        let timedOut = Mutex(false)
        let blackHole = Router()
        // Holds each request open until the other tenant's event has arrived; gives up after 20 s.
        blackHole.post("/hooks") { _, _ -> HTTPResponse.Status in
            for _ in 0..<1000 {
                if othersDelivered.withLock({ $0 }) { return .ok }
                try await Task.sleep(for: .milliseconds(20))
            }
            timedOut.withLock { $0 = true }
            return .ok
        }
        @Sendable func healthy() -> Router<BasicRequestContext> {
            let router = Router()
            router.post("/hooks") { _, _ -> HTTPResponse.Status in
                othersDelivered.withLock { $0 = true }
                return .ok
            }
            return router
        }
        try await Application(router: blackHole).test(.live) { dead in
            try await Application(router: healthy()).test(.live) { alive in
                let harness = try await Harness.make(
                    webhookURL: "http://127.0.0.1:\(alive.port!)/hooks",
                    otherWebhookURL: "http://127.0.0.1:\(dead.port!)/hooks"
                )
                defer { harness.close() }
                // The dead tenant's events are older: a one-at-a-time deliverer would send them first.
                for booking in 1...3 { try await enqueue(harness, tenant: "seaboo", booking: booking) }
                try await enqueue(harness, tenant: "seaboo-test", booking: 10)
                let client = WebhookHTTPClient(timeout: .seconds(30))
                let deliverer = webhookDeliverer(services: harness.services, client: client)
                #expect(try await deliverer.deliverDue() == 4)
                try await client.shutdown()
                #expect(othersDelivered.withLock { $0 })
                // Only the healthy delivery can release the black hole before its fallback: had the healthy
                // tenant waited behind it, the black hole would have given up first.
                #expect(!timedOut.withLock { $0 }, "the healthy tenant waited behind the black-holed one")
            }
        }
    }

    @Test("receivers must be https on public addresses; loopback, private and metadata addresses are refused unless allowed")
    func addressPolicy() async throws {
        let client = WebhookHTTPClient()
        func failure(_ url: String, private allowPrivate: Bool = false, loopback: Bool = false) async -> WebhookHTTPClient.Failure? {
            await client.post(
                "{}",
                headers: [],
                to: Tenant.Webhook(url: url, secretEnv: "X", allowPrivateAddresses: allowPrivate, allowLoopbackHTTP: loopback)
            ).failure
        }
        #expect(await failure("http://example.com/hooks") == .schemeRefused)
        #expect(await failure("https://127.0.0.1/hooks") == .addressRefused)
        #expect(await failure("https://[::1]/hooks") == .addressRefused)
        #expect(await failure("https://169.254.169.254/latest/meta-data") == .addressRefused)
        #expect(await failure("https://10.1.2.3/hooks") == .addressRefused)
        #expect(await failure("https://192.168.0.10/hooks") == .addressRefused)
        #expect(await failure("https://[::ffff:127.0.0.1]/hooks") == .addressRefused)
        #expect(await failure("https://localhost/hooks") == .addressRefused)
        // Plain http goes to loopback only, and only when allowed.
        #expect(await failure("http://10.1.2.3/hooks", private: true, loopback: true) == .schemeRefused)
        try await client.shutdown()
        #expect(WebhookHTTPClient.Address(bytes: [8, 8, 8, 8]).scope == .public)
        #expect(WebhookHTTPClient.Address(bytes: [172, 20, 0, 1]).scope == .private)
        #expect(WebhookHTTPClient.Address(bytes: [100, 64, 0, 1]).scope == .private)
    }
}

/// Answers what it reads with a plain HTTP 400 and leaves the connection open until the
/// other side closes it (a TLS client reads the answer as a broken handshake).
private final class PlainHTTPAnswer: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let answer = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: answer)), promise: nil)
    }
}

import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import HTTPAPI

/// What operators see: metrics, readiness with migrations, request ids, 405s, the served pages.
@Suite("Operators: metrics, readiness, request ids, 405, pages")
struct OperationsTests {
    @Test("S19: loopback is 127.0.0.0/8, ::1 and IPv4-mapped 127.x (the served side of /metrics is in ExposureTests)")
    func loopbackAddresses() {
        #expect(
            BerthRequestContext.isLoopback("127.0.0.1") && BerthRequestContext.isLoopback("::1") && BerthRequestContext.isLoopback("::ffff:127.0.0.1")
        )
        #expect(
            !BerthRequestContext.isLoopback("192.0.2.2") && !BerthRequestContext.isLoopback("fd00::2")
                && !BerthRequestContext.isLoopback("::ffff:10.0.0.1")
        )
        // The queue depth behind /metrics is counted at most once per interval, however often it is scraped.
        let refresh = Refresh(every: .seconds(3600))
        #expect(refresh.due() && !refresh.due() && !refresh.due())
        #expect(Refresh(every: .zero).due())
    }

    @Test("a purchase and a replay show in /metrics by outcome and kind; requests by route and status")
    func metrics() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(CreditsTests.stylist, .server)
        try await harness.app().test(.router) { client in
            let bought = try await CreditsTests.buy(
                client,
                harness,
                key: key,
                user: "ana",
                product: CreditsTests.popular,
                transactionId: "3200000000000001"
            )
            #expect(bought.status == .ok)
            let replay = try await CreditsTests.buy(
                client,
                harness,
                key: key,
                user: "bob",
                product: CreditsTests.popular,
                transactionId: "3200000000000001"
            )
            #expect(replay.status == .conflict)
            let reply = try await client.call(.get, "/metrics", auth: nil)
            let text = String(decoding: reply.data, as: UTF8.self)
            #expect(reply.status == .ok)
            #expect(text.contains(#"berth_verifications_total{outcome="applied"} 1"#), "\(text)")
            #expect(text.contains(#"berth_purchases_total{kind="credits",result="applied"} 1"#))
            #expect(text.contains(#"berth_verifications_total{outcome="transaction_already_used"} 1"#))
            #expect(text.contains("berth_replays_total 1"))
            #expect(text.contains(#"berth_http_requests_total{route="/api/verify-purchase",method="POST",status="409"} 1"#))
            #expect(text.contains(#"berth_http_requests_total{route="/api/verify-purchase",method="POST",status="200"} 1"#))
            // One duration series per route and method, whatever the status: both answers are in it.
            #expect(text.contains(#"berth_http_request_duration_seconds_count{route="/api/verify-purchase",method="POST"} 2"#), "\(text)")
            #expect(text.contains("berth_store_transaction_duration_seconds_bucket"))
            #expect(text.contains("berth_webhook_queue_depth"))
        }
    }

    @Test("readiness names migrations; a request id is echoed (the caller's when plain); wrong methods get 405 with Allow; the pages are served")
    func readinessIdsMethodsPages() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let ready = try await client.call(.get, "/readyz", auth: nil)
            #expect(ready.status == .ok)
            #expect(ready.json["migrations"].string == "applied")

            let given = try await client.execute(uri: "/healthz", method: .get, headers: [HTTPField.Name("X-Request-Id")!: "abc-123"])
            #expect(given.headers[HTTPField.Name("X-Request-Id")!] == "abc-123")
            let hostile = try await client.execute(uri: "/healthz", method: .get, headers: [HTTPField.Name("X-Request-Id")!: "a b\"<x>"])
            let generated = hostile.headers[HTTPField.Name("X-Request-Id")!] ?? ""
            #expect(generated.count == 36 && generated != "a b\"<x>", "a new id replaces one that is not a plain token")
            #expect(UUID(uuidString: generated) != nil && generated == generated.lowercased(), "\(generated)")
            // A version 4 UUID: the version digit is 4, the variant digit one of 8, 9, a, b.
            let digits = Array(generated)
            #expect(digits[14] == "4" && "89ab".contains(digits[19]), "\(generated)")
            let another = try await client.execute(uri: "/healthz", method: .get)
            #expect(another.headers[HTTPField.Name("X-Request-Id")!] != generated, "each request gets its own id")

            let wrong = try await client.execute(uri: "/api/verify-purchase", method: .get)
            #expect(wrong.status == .methodNotAllowed)
            #expect(wrong.headers[.allow] == "POST")
            let specific = try await client.execute(uri: "/api/subscriptions/link", method: .get)
            #expect(specific.status == .methodNotAllowed)
            #expect(specific.headers[.allow] == "POST", "the literal route wins over /api/subscriptions/{id}")
            let missing = try await client.execute(uri: "/api/nothing-here", method: .get)
            #expect(missing.status == .notFound)

            let root = try await client.execute(uri: "/", method: .get)
            #expect(root.status == .found)
            #expect(root.headers[.location] == "/admin")
            let page = try await client.execute(uri: "/admin", method: .get)
            #expect(String(buffer: page.body).contains("Admin API key"))
            #expect(page.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
            let yaml = try await client.execute(uri: "/openapi.yaml", method: .get)
            let contract = try String(
                contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../contract/openapi.yaml"),
                encoding: .utf8
            )
            #expect(String(buffer: yaml.body) == contract, "the served document is the contract")
            let docs = try await client.execute(uri: "/docs", method: .get)
            #expect(String(buffer: docs.body).contains("/api/verify-purchase"))
            let fallback = WebAssets.docsPage("paths: [unclosed")
            #expect(
                fallback.contains("could not be rendered") && fallback.contains("/openapi.yaml"),
                "a document that does not render gives a page saying so"
            )
        }
    }

    @Test("GET /api/admin/app names the key's app and what it sells, one kind per seed app; only admin keys may read it")
    func appDescription() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let expected: [(tenant: String, sells: [String], creditTypes: [String]?)] = [
                ("seaboo-test", ["booking"], nil), ("aistylist-test", ["credits"], ["credits"]),
                ("ftchinese-test", ["subscription"], nil), ("braindumpster-test", ["subscription"], nil),
            ]
            for app in expected {
                let admin = try await harness.apiKey(app.tenant, .admin)
                let reply = try await client.call(.get, "/api/admin/app", auth: admin)
                #expect(reply.status == .ok)
                let body = reply.json["app"]
                #expect(body["id"].string == app.tenant)
                #expect(body["sells"].strings == app.sells, "\(app.tenant): \(body)")
                #expect(body["creditTypes"].strings == app.creditTypes, "\(app.tenant): \(body)")
                #expect(body["environments"].strings == ["Sandbox"])
            }
            #expect(try await client.call(.get, "/api/admin/app", auth: harness.serverKey).status == .forbidden)
            #expect(try await client.call(.get, "/api/admin/app", auth: nil).status == .unauthorized)
        }
    }
}

extension OperationsTests {
    @Test(
        "/metrics carries the build (berth_build_info with version and commit) and the process's own figures: resident memory, descriptors, CPU, start time, C heap, SQLite's memory"
    )
    func buildAndProcessMetrics() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let reply = try await client.call(.get, "/metrics", auth: nil)
            #expect(reply.status == .ok)
            let text = String(decoding: reply.data, as: UTF8.self)
            #expect(
                text.contains("berth_build_info{version=\"\(BuildInfo.version)\",commit=\"\(BuildInfo.commit)\"} 1")
                    || text.contains("berth_build_info{commit=\"\(BuildInfo.commit)\",version=\"\(BuildInfo.version)\"} 1"),
                "\(text.prefix(400))"
            )
            func value(_ name: String) -> Double? {
                text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
            }
            #if os(Linux)
            #expect((value("process_resident_memory_bytes") ?? 0) > 1_000_000, "a Swift process holds more than a megabyte")
            #expect((value("process_open_fds") ?? 0) >= 3 && (value("process_max_fds") ?? 0) >= (value("process_open_fds") ?? 0))
            #expect((value("process_cpu_seconds_total") ?? -1) >= 0)
            let started = value("process_start_time_seconds") ?? 0
            #expect(started > 1_500_000_000 && started <= Date().timeIntervalSince1970 + 5, "\(started)")
            // What the resident memory is made of: the C heap (in use, and freed but kept) and, of it,
            // SQLite's own (page caches and statements; the harness runs on SQLite).
            let inUse = value("berth_process_heap_bytes{state=\"in_use\"}") ?? 0
            #expect(inUse > 100_000, "\(text.split(separator: "\n").filter { $0.contains("heap") })")
            #expect(value("berth_process_heap_bytes{state=\"free\"}") != nil)
            let sqlite = value("berth_sqlite_memory_bytes") ?? 0
            #expect(sqlite > 0 && sqlite < inUse, "\(sqlite) of \(inUse)")
            #expect((value("berth_sqlite_memory_highwater_bytes") ?? 0) >= sqlite)
            #endif
        }
    }
}

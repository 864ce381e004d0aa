import AsyncHTTPClient
import BerthApp
import Domain
import Foundation
import HTTPAPI
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import OutboundHTTP
import SQLStore
import TestKit
import UseCases

/// The real router over a real SQLite file in a temporary folder, with the repository's catalog
/// and migrations (the current folder, or `BERTH_FUZZ_REPOSITORY`), a TestKit CA the test tenants
/// trust, and client, server and admin keys. Each input is one request: its first byte picks the
/// route and caller, the rest is the body.
final class HTTPFuzzing: Sendable {
    static let shared: HTTPFuzzing = {
        do { return try HTTPFuzzing() } catch { fatalError("http fuzz setup: \(error)") }
    }()

    struct Route: Sendable {
        var method: HTTPRequest.Method
        var path: String
        var key: String
        var user: String?
    }

    let responder: any HTTPResponder<BerthRequestContext>
    let routes: [Route]
    let logger: Logger

    init() throws {
        var quiet = Logger(label: "berth.fuzz")
        quiet.logLevel = .critical
        let logger = quiet
        self.logger = logger
        let repository = URL(
            fileURLWithPath: ProcessInfo.processInfo.environment["BERTH_FUZZ_REPOSITORY"] ?? FileManager.default.currentDirectoryPath
        )
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-fuzz-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: repository.appendingPathComponent("products.json"),
            to: directory.appendingPathComponent("products.json")
        )
        try Fixtures.shared.ca.write(to: directory.appendingPathComponent("berth-ca"))
        try Fixtures.shared.receiptCA.write(to: directory.appendingPathComponent("berth-ca"))
        let secret = "fuzz-secret-0123456789abcdef-0123456789"
        let environment = [
            "SEABOO_TEST_JWT_SECRET": secret, "AISTYLIST_TEST_JWT_SECRET": secret, "ZORYA_TEST_JWT_SECRET": secret,
            "FTCHINESE_TEST_JWT_SECRET": secret, "BRAINDUMPSTER_TEST_JWT_SECRET": secret,
        ]
        let setup = BerthSetup(
            catalogURL: directory.appendingPathComponent("products.json"),
            databasePath: directory.appendingPathComponent("berth.sqlite").path,
            migrationsURL: repository.appendingPathComponent("migrations"),
            environment: environment
        )
        let clock = AdvancingClock()
        var built: (any HTTPResponder<BerthRequestContext>, [Route])?
        let box = ResultBox()
        Blocking.run {
            do {
                let (catalog, store) = try await setup.prepareStore(logger: logger, now: clock.now())
                let services = try await setup.services(catalog: catalog, store: store, clock: clock, httpClient: fuzzOutbound, logger: logger)
                func key(_ tenant: String, _ role: APIKeyRole) async throws -> String {
                    let key = APIKeys.generate(tenantId: tenant)
                    _ = try await CreateAPIKey(store: store)(tenantId: tenant, role: role, hash: APIKeys.hash(key), now: clock.now())
                    return key
                }
                let seaboo = (
                    client: try await key("seaboo-test", .client), server: try await key("seaboo-test", .server),
                    admin: try await key("seaboo-test", .admin)
                )
                let stylist = (server: try await key("aistylist-test", .server), admin: try await key("aistylist-test", .admin))
                let brain = try await key("braindumpster-test", .client)
                let ftc = (client: try await key("ftchinese-test", .client), server: try await key("ftchinese-test", .server))
                let routes = [
                    Route(method: .post, path: "/api/verify-purchase", key: seaboo.client, user: "fuzz-user"),
                    Route(method: .post, path: "/api/verify-purchase", key: stylist.server, user: "fuzz-user"),
                    Route(method: .post, path: "/api/verify-receipt", key: brain, user: "fuzz-user"),
                    Route(method: .post, path: "/api/validator?key=\(seaboo.client)", key: "", user: nil),
                    Route(method: .post, path: "/api/apple/notifications/seaboo-test", key: "", user: nil),
                    Route(method: .post, path: "/api/bookings", key: seaboo.server, user: "fuzz-user"),
                    Route(method: .post, path: "/api/credits/reservations", key: stylist.server, user: "fuzz-user"),
                    Route(method: .post, path: "/api/admin/credits/adjustments", key: stylist.admin, user: nil),
                    Route(method: .post, path: "/api/admin/keys", key: seaboo.admin, user: nil),
                    Route(method: .post, path: "/api/subscriptions/link", key: seaboo.client, user: "fuzz-user"),
                    Route(method: .post, path: "/api/apple/verify-receipt", key: ftc.client, user: nil),
                    Route(method: .post, path: "/api/apple/link", key: ftc.client, user: nil),
                    Route(method: .post, path: "/api/admin/bookings/1/cancel", key: seaboo.admin, user: nil),
                    Route(method: .post, path: "/api/memberships", key: ftc.server, user: "fuzz-user"),
                ]
                box.set(buildRouter(services: services).buildResponder(), routes)
            } catch {
                box.fail(error)
            }
        }
        built = try box.get()
        guard let built else { throw FuzzSetupError() }
        (responder, routes) = built
    }

    func send(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let route = routes[Int(first) % routes.count]
        var fields: HTTPFields = [.contentType: "application/json"]
        if !route.key.isEmpty { fields[.authorization] = "Bearer \(route.key)" }
        if let user = route.user, let name = HTTPField.Name("X-User-Id") { fields[name] = user }
        let head = HTTPRequest(method: route.method, scheme: "http", authority: "127.0.0.1", path: route.path, headerFields: fields)
        let request = Request(head: head, body: .init(buffer: ByteBuffer(bytes: bytes.dropFirst())))
        let context = BerthRequestContext(source: .init(channel: EmbeddedChannel(), logger: logger))
        let responder = self.responder
        Blocking.run {
            let status: HTTPResponse.Status
            do {
                status = try await responder.respond(to: request, context: context).status
            } catch let error as any HTTPResponseError {
                status = error.status
            } catch {
                fatalError("the router threw past its error middleware: \(error)")
            }
            if status.code >= 500 && status != .serviceUnavailable {
                fatalError("\(route.method) \(route.path) answered \(status.code) to a hostile body")
            }
        }
    }
}

struct FuzzSetupError: Error {}

/// The outbound client of the fuzzed application, made as `berth serve` makes its own; one for the
/// fuzzing process, which ends without shutting it down.
let fuzzOutbound = OutboundClient.make()

/// Carries the router out of the setup task.
final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<(any HTTPResponder<BerthRequestContext>, [HTTPFuzzing.Route]), any Error>?

    func set(_ responder: any HTTPResponder<BerthRequestContext>, _ routes: [HTTPFuzzing.Route]) {
        lock.withLock { value = .success((responder, routes)) }
    }

    func fail(_ error: any Error) { lock.withLock { value = .failure(error) } }

    func get() throws -> (any HTTPResponder<BerthRequestContext>, [HTTPFuzzing.Route])? {
        try lock.withLock { try value?.get() }
    }
}

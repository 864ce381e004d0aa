import BerthApp
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import Logging
import SQLStore
import Testing
import UseCases

@Suite("Genuine Apple notifications")
struct GenuineNotificationTests {
    /// Two tenants shaped after the apps that received Apple's sample notifications.
    static let catalog = #"""
        { "tenants": [
          { "id": "keysns", "name": "Keys", "currency": "CNY",
            "apple": { "bundleId": "com.jrjj.keysns", "appAppleId": 1601830814, "environments": ["Production"] },
            "auth": { "algorithm": "HS256", "issuer": "https://keys.example", "secretEnv": "KEYS_SECRET" },
            "credits": { "types": ["credits"] },
            "products": [ { "id": "com.keysns.JR1200", "kind": "credits", "type": "Consumable", "title": "1200 credits", "credits": 1200 } ],
            "resources": [] },
          { "id": "abilities", "name": "Abilities", "currency": "USD",
            "apple": { "bundleId": "com.Abilities", "environments": ["Sandbox"] },
            "auth": { "algorithm": "HS256", "issuer": "https://abilities.example", "secretEnv": "ABILITIES_SECRET" },
            "products": [], "resources": [] }
        ] }
        """#

    @Test(
        "Apple's sample notifications verify with nested data and are routed to their tenant",
        arguments: [
            ("notification-production-consumption-request-2023.jws", "keysns", "consumption_requested"),
            ("notification-sandbox-test-2022.jws", "abilities", "test"),
        ]
    )
    func routes(file: String, tenant: String, outcome: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-genuine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(Self.catalog.utf8).write(to: directory.appendingPathComponent("products.json"))
        let setup = BerthSetup(
            catalogURL: directory.appendingPathComponent("products.json"),
            databasePath: directory.appendingPathComponent("b.sqlite").path,
            migrationsURL: Harness.repository.appendingPathComponent("migrations"),
            environment: [:]
        )
        var logger = Logger(label: "genuine")
        logger.logLevel = .warning
        let (catalog, database) = try await setup.prepareStore(logger: logger, now: Date())
        let services = try await setup.services(catalog: catalog, store: database, httpClient: Harness.outbound, logger: logger)
        let jws = try String(contentsOf: Harness.fixture(file), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try await Application(router: buildRouter(services: services)).test(.router) { client in
            let reply = try await client.call(.post, "/api/apple/notifications/\(tenant)", auth: nil, json: ["signedPayload": .string(jws)])
            #expect(reply.status == .ok, "\(reply.json)")
            #expect(reply.json["outcome"].string == outcome)
            let other = tenant == "keysns" ? "abilities" : "keysns"
            let misrouted = try await client.call(.post, "/api/apple/notifications/\(other)", auth: nil, json: ["signedPayload": .string(jws)])
            #expect(misrouted.errorCode == "wrong_bundle" || misrouted.errorCode == "wrong_environment")
        }
        try database.close()
    }
}

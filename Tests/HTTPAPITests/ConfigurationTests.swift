import BerthApp
import Domain
import Foundation
import HTTPAPI
import Logging
import SQLStore
import Testing
import UseCases

@Suite("Configuration is checked at start")
struct ConfigurationTests {
    @Test("a tenant that sends webhooks without its secret stops the start, naming the variable; with it, the start succeeds")
    func missingWebhookSecret() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var catalog = try Catalog.decode(Data(contentsOf: Harness.repository.appendingPathComponent("products.json")))
        let index = try #require(catalog.tenants.firstIndex { $0.id == "seaboo" })
        catalog.tenants[index].webhook = Tenant.Webhook(url: "https://hooks.example.com/berth", secretEnv: "SEABOO_WEBHOOK_SECRET")
        try JSONEncoder().encode(catalog).write(to: directory.appendingPathComponent("products.json"))
        var logger = Logger(label: "config")
        logger.logLevel = .critical
        func setup(_ environment: [String: String]) -> BerthSetup {
            BerthSetup(
                catalogURL: directory.appendingPathComponent("products.json"),
                databasePath: directory.appendingPathComponent("b.sqlite").path,
                migrationsURL: Harness.repository.appendingPathComponent("migrations"),
                environment: environment
            )
        }
        let (loaded, store) = try await setup([:]).prepareStore(logger: logger, now: Date())
        defer { try? store.close() }
        do {
            _ = try await setup([:]).services(catalog: loaded, store: store, httpClient: Harness.outbound, logger: logger)
            Issue.record("the start must fail without SEABOO_WEBHOOK_SECRET")
        } catch let error as ConfigurationError {
            #expect(error.description.contains("SEABOO_WEBHOOK_SECRET"))
        }
        await #expect(throws: ConfigurationError.self) {
            _ = try await setup(["SEABOO_WEBHOOK_SECRET": "short"]).services(
                catalog: loaded,
                store: store,
                httpClient: Harness.outbound,
                logger: logger
            )
        }
        let services = try await setup(["SEABOO_WEBHOOK_SECRET": "a-long-enough-webhook-secret"]).services(
            catalog: loaded,
            store: store,
            httpClient: Harness.outbound,
            logger: logger
        )
        #expect(services.tenants.tenant(id: "seaboo")?.webhook?.secret.value == "a-long-enough-webhook-secret")
    }
}

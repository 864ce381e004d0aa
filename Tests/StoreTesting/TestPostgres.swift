import Domain
import Foundation
import Logging
import SQLStore

/// The PostgreSQL server of this test run, if the test command started one (`scripts/test` sets
/// `BERTH_TEST_POSTGRES_URL`). Each test gets a database of its own, dropped afterwards.
public enum TestPostgres {
    public static let url = ProcessInfo.processInfo.environment["BERTH_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    /// Set by `.ci/run`: a run without PostgreSQL fails instead of skipping its half.
    public static let required = ProcessInfo.processInfo.environment["BERTH_REQUIRE_POSTGRES"] == "1"

    public static func withDatabase(poolSize: Int = 8, _ body: (PostgresStore) async throws -> Void) async throws {
        guard let url else { throw StoreError("BERTH_TEST_POSTGRES_URL is not set") }
        let logger = Logger(label: "berth.test.postgres")
        let server = try PostgresSettings(url: url, environment: [:])
        let name = "berth_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await PostgresStore.createDatabase(name, settings: server, logger: logger)
        var settings = server
        settings.database = name
        settings.poolSize = poolSize
        // Tests share two cores with a compiler and a PostgreSQL server: waiting for a connection
        // is not what they test, so they wait longer than a service would.
        settings.acquireTimeout = 60
        settings.connectTimeout = 60
        let store = try PostgresStore(settings: settings, logger: logger)
        do {
            try await store.withRunning { try await body(store) }
        } catch {
            try? store.close()
            try? await PostgresStore.dropDatabase(name, settings: server, logger: logger)
            throw error
        }
        try store.close()
        try await PostgresStore.dropDatabase(name, settings: server, logger: logger)
    }
}

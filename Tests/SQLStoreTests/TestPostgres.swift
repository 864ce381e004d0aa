import Domain
import Foundation
import Logging
import SQLStore
import Testing

/// The PostgreSQL server of this test run, if the test command started one (`scripts/test` sets
/// `BERTH_TEST_POSTGRES_URL`). Each test gets a database of its own, dropped afterwards.
enum TestPostgres {
    static let url = ProcessInfo.processInfo.environment["BERTH_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    /// Set by `.ci/run`: a run without PostgreSQL fails instead of skipping its half.
    static let required = ProcessInfo.processInfo.environment["BERTH_REQUIRE_POSTGRES"] == "1"

    static func withDatabase(poolSize: Int = 8, _ body: (PostgresStore) async throws -> Void) async throws {
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

@Suite("PostgreSQL in this run")
struct PostgresPresence {
    @Test("the PostgreSQL half of the conformance suites runs", .enabled(if: TestPostgres.url != nil || TestPostgres.required,
          "BERTH_TEST_POSTGRES_URL is not set: the PostgreSQL half of the store suites is SKIPPED. Run scripts/test, which starts a throwaway PostgreSQL."))
    func present() async throws {
        try #require(TestPostgres.url != nil, "BERTH_REQUIRE_POSTGRES=1 but no PostgreSQL was started for this run")
        try await TestPostgres.withDatabase { store in
            let tables = try await store.migrationUnit { db in
                try db.rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name", []).map { $0["table_name"] as String }
            }
            #expect(tables.isEmpty, "a new database starts empty")
            try await Migrator(directory: StoreConformance.migrations).apply(to: store, now: StoreConformance.now)
            let migrated = try await store.migrationUnit { db in
                try db.rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'", []).map { $0["table_name"] as String }
            }
            #expect(migrated.contains("purchases") && migrated.contains("credit_balances") && migrated.contains("subscriptions"))
        }
    }
}

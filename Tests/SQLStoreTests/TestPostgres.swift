import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

@Suite("PostgreSQL in this run")
struct PostgresPresence {
    @Test(
        "the PostgreSQL half of the conformance suites runs",
        .enabled(
            if: TestPostgres.url != nil || TestPostgres.required,
            "BERTH_TEST_POSTGRES_URL is not set: the PostgreSQL half of the store suites is SKIPPED. Run scripts/test, which starts a throwaway PostgreSQL."
        )
    )
    func present() async throws {
        try #require(TestPostgres.url != nil, "BERTH_REQUIRE_POSTGRES=1 but no PostgreSQL was started for this run")
        try await TestPostgres.withDatabase { store in
            let tables = try await store.migrationUnit { db in
                try db.rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name", []).map {
                    $0["table_name"] as String
                }
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

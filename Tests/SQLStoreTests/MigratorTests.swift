import Domain
import Foundation
import SQLKit
import SQLStore
import Testing

@Suite("Migrations and persistence on a real SQLite file")
struct MigratorTests {
    static let repositoryMigrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("migrations")

    func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("berth-sql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("migrations apply once, are recorded with a checksum, and an edited file is refused")
    func checksumRefusal() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let migrations = directory.appendingPathComponent("migrations")
        try FileManager.default.copyItem(at: Self.repositoryMigrations, to: migrations)
        let path = directory.appendingPathComponent("db.sqlite").path

        let database = try await SQLiteDatabase.open(path: path)
        #expect(try await Migrator(directory: migrations).apply(to: database) == ["001_initial", "002_receipt_checks", "003_apple_notifications", "004_webhooks", "005_unclaimed_transactions", "006_hardening"])
        #expect(try await Migrator(directory: migrations).apply(to: database).isEmpty)
        let journal = try await database.exclusively { sql in
            try await sql.raw("PRAGMA journal_mode").first()?.decode(column: "journal_mode", as: String.self)
        }
        #expect(journal == "wal")
        let foreignKeys = try await database.exclusively { sql in
            try await sql.raw("PRAGMA foreign_keys").first()?.decode(column: "foreign_keys", as: Int.self)
        }
        #expect(foreignKeys == 1)

        let file = migrations.appendingPathComponent("001_initial.sql")
        try Data((try String(contentsOf: file, encoding: .utf8) + "\n-- an innocent edit\n").utf8).write(to: file)
        await #expect(throws: StoreError.self) { try await Migrator(directory: migrations).apply(to: database) }

        // A new numbered file is fine once the old one is restored.
        try FileManager.default.removeItem(at: file)
        try FileManager.default.copyItem(at: Self.repositoryMigrations.appendingPathComponent("001_initial.sql"), to: file)
        try Data("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL);\n".utf8).write(to: migrations.appendingPathComponent("006_notes.sql"))
        #expect(try await Migrator(directory: migrations).apply(to: database) == ["006_notes"])
        try await database.close()
    }

    @Test("a migration missing from the directory is refused")
    func unknownAppliedMigration() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        let database = try await SQLiteDatabase.open(path: path)
        try await Migrator(directory: Self.repositoryMigrations).apply(to: database)
        try await database.exclusively { sql in
            try await sql.raw("INSERT INTO schema_migrations (version, checksum, applied_at) VALUES ('999_future', 'x', 0)").run()
        }
        await #expect(throws: StoreError.self) { try await Migrator(directory: Self.repositoryMigrations).apply(to: database) }
        try await database.close()
    }

    @Test("a purchase is unique per store, environment and transaction id, and survives a reopen")
    func uniqueIndexAndRestart() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        let database = try await SQLiteDatabase.open(path: path)
        try await Migrator(directory: Self.repositoryMigrations).apply(to: database)
        let insertTenant: @Sendable (any SQLDatabase) async throws -> Void = { sql in
            try await sql.raw("INSERT INTO tenants (id, name, created_at) VALUES ('t', 'T', 0)").run()
        }
        try await database.exclusively(insertTenant)
        let insert: @Sendable (Int64) -> @Sendable (any SQLDatabase) async throws -> Void = { id in
            { sql in
                try await sql.raw("""
                    INSERT INTO purchases (id, tenant_id, user_id, store, environment, transaction_id, original_transaction_id, product_id, status, proof_hash, purchased_at, created_at)
                    VALUES (\(bind: id), 't', 'u', 'app_store', 'Sandbox', '2000000000000001', '2000000000000001', 'p', 'applied', 'h', 0, 0)
                    """).run()
            }
        }
        try await database.transaction(insert(1))
        await #expect(throws: (any Error).self) { try await database.transaction(insert(2)) }
        try await database.close()

        let reopened = try await SQLiteDatabase.open(path: path)
        let count = try await reopened.exclusively { sql in
            try await sql.raw("SELECT COUNT(*) AS n FROM purchases").first()?.decode(column: "n", as: Int.self)
        }
        #expect(count == 1)
        try await reopened.close()
    }

    @Test("database URLs", arguments: [("sqlite:./b.sqlite", "./b.sqlite"), ("sqlite:///tmp/x.db", "/tmp/x.db"), ("plain.sqlite", "plain.sqlite")])
    func databaseURLs(url: String, path: String) throws {
        #expect(try SQLiteDatabase.path(fromURL: url) == path)
    }

    @Test("unsupported database URLs are refused")
    func unsupportedURL() {
        #expect(throws: StoreError.self) { try SQLiteDatabase.path(fromURL: "mysql://localhost/db") }
    }
}

import Crypto
import Domain
import Foundation

/// Applies the numbered SQL files of `migrations/` in order, once each, recording a SHA-256 checksum.
/// Refuses to go on when a file that was already applied has changed since.
public struct Migrator: Sendable {
    public struct Migration: Sendable {
        public var version: String
        public var sql: String
        public var checksum: String
    }

    public let migrations: [Migration]

    /// The migrations compiled into the binary (the files of `migrations/`): what `berth serve` and
    /// `berth migrate` apply unless a directory is given.
    public init() throws {
        try self.init(files: EmbeddedMigrations.files.map { ($0.name, Data($0.bytes)) })
    }

    /// Named SQL files (`NNN_name.sql`), applied in name order.
    public init(files: [(name: String, data: Data)]) throws {
        guard !files.isEmpty else { throw StoreError("no .sql migrations") }
        migrations = try files.sorted { $0.name < $1.name }.map { name, data in
            guard name.hasSuffix(".sql"), name.prefix(while: \.isNumber).count >= 3 else {
                throw StoreError("migration \(name) must be named like 001_name.sql")
            }
            return Migration(
                version: String(name.dropLast(4)),
                sql: String(decoding: data, as: UTF8.self),
                checksum: SHA256.hash(data: data).hexString
            )
        }
    }

    /// Reads `NNN_name.sql` files from `directory`.
    public init(directory: URL) throws {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }.sorted()
        } catch {
            throw StoreError("cannot read migrations in \(directory.path): \(error.localizedDescription)")
        }
        guard !names.isEmpty else { throw StoreError("no .sql migrations in \(directory.path)") }
        migrations = try names.map { name in
            guard name.prefix(while: \.isNumber).count >= 3 else {
                throw StoreError("migration \(name) must start with a number such as 001_")
            }
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            let checksum = SHA256.hash(data: data).hexString
            return Migration(version: String(name.dropLast(4)), sql: String(decoding: data, as: UTF8.self), checksum: checksum)
        }
    }

    /// Applies pending migrations; returns the versions applied now. The whole run is one
    /// transaction that first takes the migration lock (SQLite's write lock with `BEGIN IMMEDIATE`,
    /// a PostgreSQL advisory lock), so instances starting together take turns: the second finds the
    /// first one's migrations applied. DDL is transactional on both backends: a failing migration
    /// leaves nothing behind.
    @discardableResult
    public func apply(to store: some MigratableStore, now: Date) async throws -> [String] {
        let migrations = self.migrations
        return try await store.migrationUnit { db in
            try db.lock("berth:migrations")
            var appliedNow: [String] = []
            try db.run(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at BIGINT NOT NULL)",
                []
            )
            let rows = try db.rows("SELECT version, checksum FROM schema_migrations", [])
            let known = Dictionary(rows.map { ($0["version"] as String, $0["checksum"] as String) }, uniquingKeysWith: { first, _ in first })
            for version in known.keys.sorted() where !migrations.contains(where: { $0.version == version }) {
                throw StoreError("the database has migration \(version), which is not in the migrations directory")
            }
            for migration in migrations {
                if let checksum = known[migration.version] {
                    guard checksum == migration.checksum else {
                        throw StoreError(
                            "migration \(migration.version) changed after it was applied (checksum \(checksum.prefix(12)) → \(migration.checksum.prefix(12))); migrations are append-only: add a new file instead"
                        )
                    }
                    continue
                }
                for statement in Self.statements(in: db.dialect.migration(migration.sql)) { try db.run(statement, []) }
                try db.run(
                    "INSERT INTO schema_migrations (version, checksum, applied_at) VALUES (?, ?, ?)",
                    [migration.version, migration.checksum, now.epochMilliseconds]
                )
                appliedNow.append(migration.version)
                if migration.version == "021_booking_references" { try Self.giveReferences(db) }
            }
            return appliedNow
        }
    }

    /// Gives every booking made before references existed one of its own (in the migration's unit of work).
    static func giveReferences(_ db: any SQLExecutor) throws {
        let rows = try db.rows("SELECT id, tenant_id FROM bookings WHERE reference IS NULL", [])
        var taken: [String: Set<String>] = [:]
        for row in rows {
            let tenant: String = row["tenant_id"]
            var reference = BookingReference.random()
            while taken[tenant, default: []].contains(reference) { reference = BookingReference.random() }
            taken[tenant, default: []].insert(reference)
            try db.run("UPDATE bookings SET reference = ? WHERE id = ?", [reference, row["id"] as Int64])
        }
    }

    /// Splits a file into statements at semicolons that end a line, dropping `--` comment lines.
    static func statements(in sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("--") || trimmed.isEmpty { continue }
            current += line + "\n"
            if trimmed.hasSuffix(";") {
                statements.append(current.trimmingCharacters(in: .whitespacesAndNewlines).dropLast().description)
                current = ""
            }
        }
        let rest = current.trimmingCharacters(in: .whitespacesAndNewlines)
        if !rest.isEmpty { statements.append(rest) }
        return statements
    }
}

import Foundation

/// Moves a SQLite deployment to PostgreSQL: copies every row of every table, in the order the
/// migrations created the tables (so that rows arrive after the rows they reference), in batches,
/// then compares the row counts of both sides. The target must be migrated to the same version
/// and hold no data yet (a database created for the move); stop the service on the SQLite file
/// first, so that nothing changes while it is read.
public struct DatabaseCopy: Sendable {
    public struct TableCount: Sendable, Hashable {
        public var table: String
        public var rows: Int
    }

    public var batchSize = 500

    public init() {}

    /// Copies `source` into `target`; returns the rows copied per table. `progress` is told after each table.
    public func copy(
        from source: SQLiteStore,
        to target: PostgresStore,
        progress: @Sendable (TableCount) -> Void = { _ in }
    ) async throws -> [TableCount] {
        let versions: @Sendable (any SQLExecutor) throws -> [String] = { db in
            try db.rows("SELECT version FROM schema_migrations ORDER BY version", []).map { $0["version"] as String }
        }
        let sourceVersions = try await source.migrationUnit(versions)
        let targetVersions = try await target.migrationUnit(versions)
        guard sourceVersions == targetVersions else {
            throw StoreError(
                "the two databases are at different migrations (\(sourceVersions.last ?? "none") and \(targetVersions.last ?? "none")); run `berth migrate` on both first"
            )
        }
        let tables = try await source.migrationUnit { db in
            try db.rows(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY rowid",
                []
            )
            .map { $0["name"] as String }
        }
        // A start (or `berth migrate`) syncs tenants and seeds credit products from the catalog; anything
        // else in the target means it is not new. Those two take the copied rows (operators' edits included).
        for table in tables where table != "tenants" && table != "credit_products" {
            let count = try await target.migrationUnit { db in try db.count("SELECT COUNT(*) FROM \(table)") }
            guard count == 0 else { throw StoreError("the target database already holds rows in \(table); copy into a new database") }
        }
        try await target.migrationUnit { db in
            try db.run("DELETE FROM credit_products", [])
            try db.run("DELETE FROM tenants", [])
        }
        var counts: [TableCount] = []
        for table in tables {
            var after: Int64 = 0
            var copied = 0
            while true {
                let batch = batchSize, from = after
                let rows = try await source.migrationUnit { db in
                    try db.rows("SELECT rowid AS berth_rowid, * FROM \(table) WHERE rowid > ? ORDER BY rowid LIMIT ?", [from, batch])
                }
                guard let last = rows.last else { break }
                after = last["berth_rowid"]
                try await target.migrationUnit { db in
                    for row in rows {
                        let columns = row.columns.filter { $0 != "berth_rowid" }
                        let values: SQLArguments = columns.map { column in Self.bindable(row.value(column)) }
                        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
                        try db.run("INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))", values)
                    }
                }
                copied += rows.count
            }
            let sourceCount = try await source.migrationUnit { db in try db.count("SELECT COUNT(*) FROM \(table)") }
            let targetCount = try await target.migrationUnit { db in try db.count("SELECT COUNT(*) FROM \(table)") }
            guard targetCount == sourceCount else {
                throw StoreError("table \(table): \(sourceCount) rows in SQLite but \(targetCount) in PostgreSQL after the copy")
            }
            let count = TableCount(table: table, rows: copied)
            counts.append(count)
            progress(count)
        }
        return counts
    }

    static func bindable(_ value: SQLValue) -> (any SQLBindable)? {
        switch value {
        case .null: nil
        case .integer(let value): value
        case .real(let value): value
        case .text(let value): value
        }
    }
}

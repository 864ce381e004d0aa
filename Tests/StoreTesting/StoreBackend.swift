import Domain
import Foundation
import SQLStore
import Testing

/// A backend under test: runs a body on a fresh, migrated store with tenants `a` and `b`, and
/// closes (and on PostgreSQL drops) it afterwards, whatever happens.
public struct StoreBackend: Sendable, CustomTestStringConvertible {
    /// The repository's migrations.
    public static let migrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("migrations")
    /// The time every suite starts at.
    public static let now = Date(epochMilliseconds: 1_900_000_000_000)

    public var name: String
    public var scope: @Sendable (_ body: (any Store) async throws -> Void) async throws -> Void
    public var testDescription: String { name }

    public static func prepare(_ store: some MigratableStore) async throws {
        try await Migrator(directory: migrations).apply(to: store, now: now)
        try await store.write { try $0.keys.syncTenants([(id: "a", name: "A"), (id: "b", name: "B")], now: now) }
    }

    public static let sqlite = StoreBackend(name: "SQLite") { body in
        await OpenStoreBudget.shared.enter()
        defer { OpenStoreBudget.shared.leave() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-conformance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore.open(path: directory.appendingPathComponent("store.sqlite").path)
        do {
            try await prepare(store)
            try await body(store)
        } catch {
            try? store.close()
            throw error
        }
        try store.close()
    }

    /// PostgreSQL, when the test command started one (`BERTH_TEST_POSTGRES_URL`): each test gets a database of its own.
    public static let postgres: StoreBackend? = TestPostgres.url.map { _ in
        StoreBackend(name: "PostgreSQL") { body in
            await OpenStoreBudget.shared.enter()
            defer { OpenStoreBudget.shared.leave() }
            try await TestPostgres.withDatabase { store in
                try await prepare(store)
                try await body(store)
            }
        }
    }

    public static let available: [StoreBackend] = [.sqlite] + (postgres.map { [$0] } ?? [])

    /// Runs `body` on a fresh store of this backend and closes it afterwards, whatever happens.
    public func run(_ body: (any Store) async throws -> Void) async throws {
        try await scope(body)
    }
}

import Domain
import Foundation

/// What the operations routes ask the database: whether it answers with every migration the code
/// expects (`/readyz`), how many webhook deliveries wait, and the engine's own gauges (`/metrics`).
public struct ServiceHealth: Sendable {
    let store: any Store
    let expectedMigrations: Set<String>

    public init(store: any Store, expectedMigrations: Set<String>) {
        self.store = store
        self.expectedMigrations = expectedMigrations
    }

    /// The migrations the code expects that the database has not applied (empty: ready). Throws
    /// when the database does not answer.
    public func pendingMigrations() async throws -> Set<String> {
        let applied = try await store.read { tx in try tx.schema.appliedMigrations() }
        return expectedMigrations.subtracting(applied)
    }

    /// Webhook deliveries waiting to be sent, over every tenant.
    public func webhookQueueDepth() async throws -> Int {
        try await store.read { tx in try tx.outbox.pendingCount() }
    }

    /// The database engine's gauges (its connection pool's, its page cache's), by metric name.
    public func engineGauges() -> [(name: String, value: Double)] { store.engineGauges() }
}

import Domain
import Foundation

/// Entitlement grants kept by Berth itself: unlocks and passes (SQLite and PostgreSQL).
struct SQLGrants: GrantRepository {
    let db: any SQLExecutor

    static let columns = """
        id, tenant_id, user_id, entitlement, source, reference, product_id, environment, purchased_at, starts_at, ends_at, duration_days, \
        state, ended_reason
        """

    static func decode(_ row: SQLRow) throws -> EntitlementGrant {
        EntitlementGrant(
            id: row["id"],
            tenantId: row["tenant_id"],
            userId: row["user_id"],
            entitlement: row["entitlement"],
            source: try row.value(GrantSource.self, "source"),
            reference: row["reference"],
            productId: row["product_id"],
            purchasedAt: row.date("purchased_at"),
            from: row.date("starts_at"),
            until: row.optionalDate("ends_at"),
            durationDays: (row["duration_days"] as Int64?).map { Int(clamping: $0) },
            state: try row.value(GrantState.self, "state"),
            endedReason: row["ended_reason"],
            environment: row["environment"]
        )
    }

    func grants(tenantId: String, userId: String, entitlement: String, forUpdate: Bool) throws -> [EntitlementGrant] {
        // Purchases and refunds of one user's entitlement take turns (passes are chained across them).
        if forUpdate { try db.lock("grants:\(tenantId):\(userId):\(entitlement)") }
        return try db.rows(
            """
            SELECT \(Self.columns) FROM entitlement_grants WHERE tenant_id = ? AND user_id = ? AND entitlement = ? ORDER BY purchased_at, id
            """,
            [tenantId, userId, entitlement]
        ).map(Self.decode)
    }

    func grants(tenantId: String, userId: String) throws -> [EntitlementGrant] {
        try db.rows(
            "SELECT \(Self.columns) FROM entitlement_grants WHERE tenant_id = ? AND user_id = ? ORDER BY entitlement, purchased_at, id",
            [tenantId, userId]
        ).map(Self.decode)
    }

    func grant(tenantId: String, source: GrantSource, reference: String) throws -> EntitlementGrant? {
        try db.row(
            "SELECT \(Self.columns) FROM entitlement_grants WHERE tenant_id = ? AND source = ? AND reference = ?",
            [tenantId, source.rawValue, reference]
        ).map(Self.decode)
    }

    func save(_ g: EntitlementGrant, now: Date) throws {
        try db.run(
            """
            INSERT INTO entitlement_grants (\(Self.columns), updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET starts_at = excluded.starts_at, ends_at = excluded.ends_at, state = excluded.state,
                ended_reason = excluded.ended_reason, updated_at = excluded.updated_at
            """,
            [
                g.id, g.tenantId, g.userId, g.entitlement, g.source.rawValue, g.reference, g.productId, g.environment,
                g.purchasedAt.epochMilliseconds, g.from.epochMilliseconds, g.until?.epochMilliseconds, g.durationDays.map(Int64.init),
                g.state.rawValue, g.endedReason, now.epochMilliseconds,
            ]
        )
    }
}

import Domain
import Foundation

/// Closures of resources (SQLite and PostgreSQL).
struct SQLClosures: ClosureRepository {
    let db: any SQLExecutor

    static let columns = "id, tenant_id, resource_id, starts_at, ends_at, reason, created_by, created_at, deleted_at"

    static func decode(_ row: SQLRow) -> Closure {
        Closure(
            id: row["id"],
            tenantId: row["tenant_id"],
            resourceId: row["resource_id"],
            start: row.date("starts_at"),
            end: row.date("ends_at"),
            reason: row["reason"],
            createdBy: row["created_by"],
            createdAt: row.date("created_at"),
            deletedAt: row.optionalDate("deleted_at")
        )
    }

    func insert(_ c: Closure) throws {
        try db.run(
            "INSERT INTO closures (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                c.id, c.tenantId, c.resourceId, c.start.epochMilliseconds, c.end.epochMilliseconds, c.reason, c.createdBy,
                c.createdAt.epochMilliseconds, c.deletedAt?.epochMilliseconds,
            ]
        )
    }

    func closure(tenantId: String, id: Int64) throws -> Closure? {
        try db.row("SELECT \(Self.columns) FROM closures WHERE tenant_id = ? AND id = ?", [tenantId, id]).map(Self.decode)
    }

    func closures(tenantId: String, includingDeleted: Bool) throws -> [Closure] {
        try db.rows(
            "SELECT \(Self.columns) FROM closures WHERE tenant_id = ?\(includingDeleted ? "" : " AND deleted_at IS NULL") ORDER BY starts_at, id LIMIT 1000",
            [tenantId]
        ).map(Self.decode)
    }

    func closing(tenantId: String, resourceId: String, start: Date, end: Date) throws -> [Closure] {
        try db.rows(
            """
            SELECT \(Self.columns) FROM closures
            WHERE tenant_id = ? AND deleted_at IS NULL AND (resource_id IS NULL OR resource_id = ?) AND starts_at < ? AND ends_at > ?
            ORDER BY starts_at, id
            """,
            [tenantId, resourceId, end.epochMilliseconds, start.epochMilliseconds]
        ).map(Self.decode)
    }

    func delete(tenantId: String, id: Int64, at: Date) throws {
        try db.run("UPDATE closures SET deleted_at = ? WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL", [at.epochMilliseconds, tenantId, id])
    }
}

import Domain
import Foundation

/// The audit log (SQLite and PostgreSQL).
struct SQLAudit: AuditRepository {
    let db: any SQLExecutor

    func append(_ r: AuditRecord) throws {
        let detail = String(decoding: try BerthJSON.shared.encode(r.detail), as: UTF8.self)
        try db.run(
            """
            INSERT INTO audit_log (id, tenant_id, actor, action, booking_id, purchase_id, detail, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [RecordID.next(), r.tenantId, r.actor.rawValue, r.action.rawValue, r.bookingId, r.purchaseId, detail, r.at.epochMilliseconds]
        )
    }

    func audit(tenantId: String, bookingId: Int64?, page: Page) throws -> (items: [AuditEntry], total: Int) {
        var whereClause = "tenant_id = ?", arguments: SQLArguments = [tenantId]
        if let bookingId {
            whereClause += " AND booking_id = ?"
            arguments.append(bookingId)
        }
        return try db.page(
            table: "audit_log",
            columns: "id, tenant_id, actor, action, booking_id, purchase_id, detail, at",
            whereClause: whereClause,
            arguments: arguments,
            order: "at",
            page: page
        ) { row in
            AuditEntry(
                id: row["id"],
                tenantId: row["tenant_id"],
                actor: row["actor"],
                action: row["action"],
                bookingId: row["booking_id"],
                purchaseId: row["purchase_id"],
                detail: row["detail"],
                at: row.date("at")
            )
        }
    }
}

import Domain
import Foundation

/// App Store Server Notifications (SQLite and PostgreSQL).
struct SQLNotifications: NotificationRepository {
    let db: any SQLExecutor

    func outcome(tenantId: String, uuid: String) throws -> String? {
        try db.row("SELECT outcome FROM apple_notifications WHERE tenant_id = ? AND notification_uuid = ?", [tenantId, uuid]).map { $0["outcome"] }
    }

    func insert(_ n: IncomingNotification, outcome: String, receivedAt: Date) throws {
        try db.run(
            """
            INSERT INTO apple_notifications (id, tenant_id, notification_uuid, notification_type, subtype, environment, signed_at, transaction_id, outcome, payload_sha256, received_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                RecordID.next(), n.tenantId, n.uuid, n.type.rawValue, n.subtype, n.environment, n.signedAt.epochMilliseconds, n.transactionId,
                outcome,
                n.payloadHash, receivedAt.epochMilliseconds,
            ]
        )
    }

    func notifications(tenantId: String, page: Page) throws -> (items: [StoredNotification], total: Int) {
        try db.page(
            table: "apple_notifications",
            columns:
                "id, notification_uuid, notification_type, subtype, environment, transaction_id, outcome, payload_sha256, signed_at, received_at",
            whereClause: "tenant_id = ?",
            arguments: [tenantId],
            order: "received_at",
            page: page
        ) { row in
            StoredNotification(
                uuid: row["notification_uuid"],
                type: row["notification_type"],
                subtype: row["subtype"],
                environment: row["environment"],
                transactionId: row["transaction_id"],
                outcome: row["outcome"],
                payloadHash: row["payload_sha256"],
                signedAt: row.date("signed_at"),
                receivedAt: row.date("received_at")
            )
        }
    }
}

import Domain
import Foundation

/// The webhook outbox (SQLite and PostgreSQL).
struct SQLOutbox: OutboxRepository {
    let db: any SQLExecutor

    func enqueue(_ events: [WebhookEvent], tenantId: String, now: Date) throws {
        for event in events {
            let id = RecordID.next()
            let subject = event.subject
            var sequence: Int64 = 0
            if let subject {
                // One subject's events are numbered in turn, whichever instance enqueues them.
                try db.lock("outbox:\(tenantId):\(subject)")
                sequence =
                    try db.row(
                        """
                        SELECT COALESCE(MAX(sequence), 0) + 1 AS next FROM webhook_outbox WHERE tenant_id = ? AND subject = ?
                        """,
                        [tenantId, subject]
                    )?["next"] ?? 1
            }
            let payload = try WebhookEnvelope(outboxId: id, event: event, tenantId: tenantId, at: now, sequence: subject == nil ? nil : sequence)
                .json()
            try db.run(
                """
                INSERT INTO webhook_outbox (id, tenant_id, event_type, payload, status, attempts, next_attempt_at, created_at, subject, sequence)
                VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)
                """,
                [id, tenantId, event.type.rawValue, payload, now.epochMilliseconds, now.epochMilliseconds, subject, sequence]
            )
        }
    }

    func claimDue(tenantId: String?, now: Date, limit: Int, owner: String, leaseUntil: Date) throws -> [OutboxMessage] {
        let stamp = now.epochMilliseconds
        // Leased as every work table is (LeasedWork), narrowed to the messages whose subject has no
        // earlier message waiting for its retry or leased: each subject is delivered in order.
        let narrowing = LeasedWork.Narrowing(
            hint: claimIndex(tenantId),
            condition: """
                 AND w.dead_at IS NULL\(tenantId == nil ? "" : " AND w.tenant_id = ?")
                AND NOT EXISTS (
                    SELECT 1 FROM webhook_outbox earlier WHERE earlier.tenant_id = w.tenant_id AND earlier.subject = w.subject
                    AND earlier.status = 'pending' AND earlier.dead_at IS NULL AND earlier.sequence < w.sequence
                    AND (earlier.next_attempt_at > ? OR earlier.leased_until > ?))
                """,
            arguments: (tenantId.map { [$0] } ?? []) + [stamp, stamp],
            order: "w.created_at, w.sequence"
        )
        return try LeasedWork.claimDue(
            db,
            table: "webhook_outbox",
            columns: "w.id, w.tenant_id, w.event_type, w.payload, w.attempts, w.subject, w.sequence",
            now: now,
            limit: limit,
            owner: owner,
            leaseUntil: leaseUntil,
            narrowing: narrowing,
            decode: { row in
                OutboxMessage(
                    id: row["id"],
                    tenantId: row["tenant_id"],
                    eventType: row["event_type"],
                    payload: row["payload"],
                    attempts: row["attempts"],
                    subject: row["subject"],
                    sequence: row["sequence"]
                )
            },
            id: \.id
        )
    }

    /// SQLite: one tenant's claim walks webhook_outbox_claim in order and stops after the batch (the
    /// planner, without statistics, would sort every pending row first). PostgreSQL plans it itself.
    private func claimIndex(_ tenantId: String?) -> String {
        tenantId != nil && db.dialect == .sqlite ? " INDEXED BY webhook_outbox_claim" : ""
    }

    func recordAttempt(_ message: OutboxMessage, statusCode: Int?, error: String?, delivered: Bool, nextAttemptAt: Date?, now: Date) throws {
        let attempt = message.attempts + 1
        try db.run(
            """
            INSERT INTO webhook_deliveries (id, outbox_id, tenant_id, event_type, attempt, status_code, error, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [RecordID.next(), message.id, message.tenantId, message.eventType, attempt, statusCode, error, now.epochMilliseconds]
        )
        if delivered {
            try db.run(
                """
                UPDATE webhook_outbox SET status = 'delivered', attempts = ?, delivered_at = ?, lease_owner = NULL, leased_until = NULL WHERE id = ?
                """,
                [attempt, now.epochMilliseconds, message.id]
            )
        } else if let nextAttemptAt {
            try db.run(
                """
                UPDATE webhook_outbox SET attempts = ?, next_attempt_at = ?, lease_owner = NULL, leased_until = NULL WHERE id = ?
                """,
                [attempt, nextAttemptAt.epochMilliseconds, message.id]
            )
        } else {
            try db.run(
                """
                UPDATE webhook_outbox SET attempts = ?, dead_at = ?, lease_owner = NULL, leased_until = NULL WHERE id = ?
                """,
                [attempt, now.epochMilliseconds, message.id]
            )
        }
    }

    func release(_ message: OutboxMessage) throws {
        try db.run("UPDATE webhook_outbox SET lease_owner = NULL, leased_until = NULL WHERE id = ?", [message.id])
    }

    func skip(_ message: OutboxMessage) throws {
        try db.run("UPDATE webhook_outbox SET status = 'skipped', lease_owner = NULL, leased_until = NULL WHERE id = ?", [message.id])
    }

    func pendingCount() throws -> Int {
        try db.count("SELECT COUNT(*) FROM webhook_outbox WHERE status = 'pending' AND dead_at IS NULL", [])
    }

    func deliveries(tenantId: String, page: Page) throws -> (items: [WebhookDelivery], total: Int) {
        try db.page(
            table: "webhook_deliveries",
            columns: "id, outbox_id, event_type, attempt, status_code, error, at",
            whereClause: "tenant_id = ?",
            arguments: [tenantId],
            order: "at",
            page: page
        ) { row in
            WebhookDelivery(
                id: row["id"],
                outboxId: row["outbox_id"],
                eventType: row["event_type"],
                attempt: row["attempt"],
                statusCode: row["status_code"],
                error: row["error"],
                at: row.date("at")
            )
        }
    }

    func resend(deliveryId: Int64, tenantId: String, now: Date) throws -> Bool {
        guard let row = try db.row("SELECT outbox_id FROM webhook_deliveries WHERE id = ? AND tenant_id = ?", [deliveryId, tenantId]) else {
            return false
        }
        try db.run(
            "UPDATE webhook_outbox SET status = 'pending', next_attempt_at = ?, dead_at = NULL, attempts = 0 WHERE id = ?",
            [now.epochMilliseconds, row["outbox_id"] as Int64]
        )
        return true
    }

    func deadLetters(tenantId: String, page: Page) throws -> (items: [DeadLetter], total: Int) {
        let total = try db.count("SELECT COUNT(*) FROM webhook_outbox WHERE tenant_id = ? AND dead_at IS NOT NULL", [tenantId])
        let rows = try db.rows(
            """
            SELECT o.id, o.event_type, o.subject, o.attempts, o.created_at, o.dead_at,
                   (SELECT MAX(d.id) FROM webhook_deliveries d WHERE d.outbox_id = o.id) AS last_delivery_id
            FROM webhook_outbox o WHERE o.tenant_id = ? AND o.dead_at IS NOT NULL ORDER BY o.dead_at DESC, o.id DESC LIMIT ? OFFSET ?
            """,
            [tenantId, page.limit, page.offset]
        )
        let items = rows.map { row in
            DeadLetter(
                outboxId: row["id"],
                eventType: row["event_type"],
                subject: row["subject"],
                attempts: row["attempts"],
                createdAt: row.date("created_at"),
                deadAt: row.date("dead_at"),
                lastDeliveryId: row["last_delivery_id"]
            )
        }
        return (items, total)
    }
}

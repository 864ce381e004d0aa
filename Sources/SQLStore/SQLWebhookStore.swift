import Domain
import Foundation
import SQLKit

/// The webhook outbox on SQL. Events are enqueued inside the transaction of the change they report.
extension SQLBookingStore: WebhookStore {
    struct Envelope: Encodable {
        var id: String
        var type: String
        var tenant: String
        var createdAt: String
        /// Per subject (a booking), 1, 2, 3…: the order in which its events happened and are delivered.
        var sequence: Int64?
        var data: [String: String]
    }

    static func enqueue(_ sql: any SQLDatabase, tenantId: String, events: [WebhookEvent], now: Date) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for event in events {
            let id = RandomID.next()
            let subject = event.data["bookingId"].map { "booking:\($0)" }
            var sequence: Int64 = 0
            if let subject {
                sequence = try await sql.raw("""
                    SELECT COALESCE(MAX(sequence), 0) + 1 AS next FROM webhook_outbox WHERE tenant_id = \(bind: tenantId) AND subject = \(bind: subject)
                    """).first()?.decode(column: "next", as: Int64.self) ?? 1
            }
            let envelope = Envelope(id: "evt_\(id)", type: event.type, tenant: tenantId,
                                    createdAt: now.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)),
                                    sequence: subject == nil ? nil : sequence, data: event.data)
            let payload = String(decoding: try encoder.encode(envelope), as: UTF8.self)
            try await sql.raw("""
                INSERT INTO webhook_outbox (id, tenant_id, event_type, payload, status, attempts, next_attempt_at, created_at, subject, sequence)
                VALUES (\(bind: id), \(bind: tenantId), \(bind: event.type), \(bind: payload), 'pending', 0, \(bind: now.epochMilliseconds), \(bind: now.epochMilliseconds),
                \(bind: subject), \(bind: sequence))
                """).run()
        }
    }

    public func dueMessages(now: Date, limit: Int) async throws -> [OutboxMessage] {
        try await database.read { sql in
            try await sql.raw("""
                SELECT o.id, o.tenant_id, o.event_type, o.payload, o.attempts, o.subject, o.sequence FROM webhook_outbox o
                WHERE o.status = 'pending' AND o.next_attempt_at <= \(bind: now.epochMilliseconds)
                AND NOT EXISTS (
                    SELECT 1 FROM webhook_outbox earlier WHERE earlier.tenant_id = o.tenant_id AND earlier.subject = o.subject
                    AND earlier.status = 'pending' AND earlier.sequence < o.sequence AND earlier.next_attempt_at > \(bind: now.epochMilliseconds))
                ORDER BY o.created_at, o.sequence LIMIT \(bind: limit)
                """).all().map { row in
                OutboxMessage(id: try row.decode(column: "id", as: Int64.self), tenantId: try row.decode(column: "tenant_id", as: String.self),
                              eventType: try row.decode(column: "event_type", as: String.self), payload: try row.decode(column: "payload", as: String.self),
                              attempts: try row.decode(column: "attempts", as: Int.self), subject: try row.decode(column: "subject", as: String?.self),
                              sequence: try row.decode(column: "sequence", as: Int64.self))
            }
        }
    }

    public func recordAttempt(_ message: OutboxMessage, statusCode: Int?, error: String?, delivered: Bool, nextAttemptAt: Date?, now: Date) async throws {
        try await database.transaction { sql in
            let attempt = message.attempts + 1
            try await sql.raw("""
                INSERT INTO webhook_deliveries (id, outbox_id, tenant_id, event_type, attempt, status_code, error, at)
                VALUES (\(bind: RandomID.next()), \(bind: message.id), \(bind: message.tenantId), \(bind: message.eventType), \(bind: attempt),
                \(bind: statusCode), \(bind: error), \(bind: now.epochMilliseconds))
                """).run()
            if delivered {
                try await sql.raw("UPDATE webhook_outbox SET status = 'delivered', attempts = \(bind: attempt), delivered_at = \(bind: now.epochMilliseconds) WHERE id = \(bind: message.id)").run()
            } else {
                try await sql.raw("""
                    UPDATE webhook_outbox SET attempts = \(bind: attempt), next_attempt_at = \(bind: (nextAttemptAt ?? now).epochMilliseconds) WHERE id = \(bind: message.id)
                    """).run()
            }
        }
    }

    public func skip(_ message: OutboxMessage, now: Date) async throws {
        try await database.exclusively { sql in
            try await sql.raw("UPDATE webhook_outbox SET status = 'skipped' WHERE id = \(bind: message.id)").run()
        }
    }

    public func deliveries(tenantId: String, page: Page) async throws -> (items: [WebhookDelivery], total: Int) {
        try await database.read { sql in
            let total = try await sql.select().column(SQLFunction("COUNT", args: SQLLiteral.all), as: "n").from("webhook_deliveries")
                .where("tenant_id", .equal, tenantId).first()?.decode(column: "n", as: Int.self) ?? 0
            let rows = try await sql.select().column(SQLRaw("id, outbox_id, event_type, attempt, status_code, error, at")).from("webhook_deliveries")
                .where("tenant_id", .equal, tenantId).orderBy("at", .descending).orderBy("id", .descending).limit(page.limit).offset(page.offset).all()
            let items = try rows.map { row in
                WebhookDelivery(id: try row.decode(column: "id", as: Int64.self), outboxId: try row.decode(column: "outbox_id", as: Int64.self),
                                eventType: try row.decode(column: "event_type", as: String.self), attempt: try row.decode(column: "attempt", as: Int.self),
                                statusCode: try row.decode(column: "status_code", as: Int?.self), error: try row.decode(column: "error", as: String?.self),
                                at: Date(epochMilliseconds: try row.decode(column: "at", as: Int64.self)))
            }
            return (items, total)
        }
    }

    public func resend(deliveryId: Int64, tenantId: String, now: Date) async throws -> Bool {
        try await database.transaction { sql in
            guard let row = try await sql.raw("SELECT outbox_id FROM webhook_deliveries WHERE id = \(bind: deliveryId) AND tenant_id = \(bind: tenantId)").first() else {
                return false
            }
            let outbox = try row.decode(column: "outbox_id", as: Int64.self)
            try await sql.raw("UPDATE webhook_outbox SET status = 'pending', next_attempt_at = \(bind: now.epochMilliseconds) WHERE id = \(bind: outbox)").run()
            return true
        }
    }
}

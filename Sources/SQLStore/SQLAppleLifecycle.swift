import Domain
import Foundation

/// Consumption consents (SQLite and PostgreSQL alike).
struct SQLConsents: ConsentRepository {
    let db: any SQLExecutor

    func consent(tenantId: String, userId: String) throws -> ConsumptionConsent? {
        try db.row("SELECT consented, text_version, recorded_at FROM consumption_consents WHERE tenant_id = ? AND user_id = ?", [tenantId, userId])
            .map { row in
                ConsumptionConsent(
                    tenantId: tenantId,
                    userId: userId,
                    consented: (row["consented"] as Int64) != 0,
                    textVersion: row["text_version"],
                    recordedAt: Date(epochMilliseconds: row["recorded_at"])
                )
            }
    }

    func record(_ c: ConsumptionConsent) throws {
        try db.run(
            """
            INSERT INTO consumption_consents (tenant_id, user_id, consented, text_version, recorded_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, user_id) DO UPDATE SET consented = excluded.consented, text_version = excluded.text_version, recorded_at = excluded.recorded_at
            """,
            [c.tenantId, c.userId, c.consented ? 1 : 0, c.textVersion, c.recordedAt.epochMilliseconds]
        )
    }
}

/// Where each tenant's notification-history reading got (SQLite and PostgreSQL alike).
struct SQLAppleHistory: AppleHistoryRepository {
    let db: any SQLExecutor

    func mark(tenantId: String, environment: StoreEnvironment) throws -> Date? {
        try db.row("SELECT checked_until FROM apple_history_marks WHERE tenant_id = ? AND environment = ?", [tenantId, environment])
            .map { Date(epochMilliseconds: $0["checked_until"]) }
    }

    func setMark(tenantId: String, environment: StoreEnvironment, checkedUntil: Date, at now: Date) throws {
        // Never backwards: two instances reading at once leave the later mark.
        try db.run(
            """
            INSERT INTO apple_history_marks (tenant_id, environment, checked_until, checked_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (tenant_id, environment) DO UPDATE SET
              checked_until = CASE WHEN excluded.checked_until > apple_history_marks.checked_until THEN excluded.checked_until ELSE apple_history_marks.checked_until END,
              checked_at = excluded.checked_at
            """,
            [tenantId, environment, checkedUntil.epochMilliseconds, now.epochMilliseconds]
        )
    }
}

/// Consumption answers owed to Apple (SQLite and PostgreSQL alike).
struct SQLConsumptionAnswers: ConsumptionAnswerRepository {
    let db: any SQLExecutor

    static let columns = """
        id, tenant_id, environment, transaction_id, notification_uuid, requested_at, status, attempts, last_error, next_attempt_at, created_at, done_at
        """

    static func decode(_ row: SQLRow) -> ConsumptionAnswer {
        ConsumptionAnswer(
            id: row["id"],
            tenantId: row["tenant_id"],
            environment: row["environment"],
            transactionId: row["transaction_id"],
            notificationUUID: row["notification_uuid"],
            requestedAt: row.date("requested_at"),
            status: ConsumptionAnswer.Status(rawValue: row["status"]) ?? .pending,
            attempts: Int(row["attempts"] as Int64),
            lastError: row["last_error"],
            nextAttemptAt: row.date("next_attempt_at"),
            createdAt: row.date("created_at"),
            doneAt: row.optionalDate("done_at")
        )
    }

    func enqueue(_ a: ConsumptionAnswer, owner: String, leaseUntil: Date) throws -> Bool {
        try db.run(
            """
            INSERT INTO consumption_answers (\(Self.columns), lease_owner, leased_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, notification_uuid) DO NOTHING
            """,
            [
                a.id, a.tenantId, a.environment, a.transactionId, a.notificationUUID, a.requestedAt.epochMilliseconds, a.status.rawValue, a.attempts,
                a.lastError, a.nextAttemptAt.epochMilliseconds, a.createdAt.epochMilliseconds, a.doneAt?.epochMilliseconds, owner,
                leaseUntil.epochMilliseconds,
            ]
        ) == 1
    }

    func claimDue(now: Date, limit: Int, owner: String, leaseUntil: Date) throws -> [ConsumptionAnswer] {
        try LeasedWork.claimDue(
            db,
            table: "consumption_answers",
            columns: Self.columns,
            now: now,
            limit: limit,
            owner: owner,
            leaseUntil: leaseUntil,
            decode: Self.decode,
            id: \.id
        )
    }

    func record(_ a: ConsumptionAnswer, status: ConsumptionAnswer.Status, error: String?, nextAttemptAt: Date, now: Date) throws {
        try LeasedWork.record(
            db,
            table: "consumption_answers",
            id: a.id,
            status: status.rawValue,
            error: error,
            nextAttemptAt: nextAttemptAt,
            now: now
        )
    }

    func answers(tenantId: String, transactionId: String) throws -> [ConsumptionAnswer] {
        try db.rows(
            "SELECT \(Self.columns) FROM consumption_answers WHERE tenant_id = ? AND transaction_id = ? ORDER BY requested_at, id",
            [tenantId, transactionId]
        )
        .map(Self.decode)
    }
}

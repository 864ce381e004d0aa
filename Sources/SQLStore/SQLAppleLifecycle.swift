import Domain
import Foundation

/// Consumption consents (SQLite and PostgreSQL alike).
struct SQLConsents: ConsentRepository {
    let db: any SQLExecutor

    func consent(tenantId: String, userId: String) throws -> ConsumptionConsent? {
        try db.row("SELECT consented, text_version, recorded_at FROM consumption_consents WHERE tenant_id = ? AND user_id = ?", [tenantId, userId]).map { row in
            ConsumptionConsent(tenantId: tenantId, userId: userId, consented: (row["consented"] as Int64) != 0, textVersion: row["text_version"],
                               recordedAt: Date(epochMilliseconds: row["recorded_at"]))
        }
    }

    func record(_ c: ConsumptionConsent) throws {
        try db.run("""
            INSERT INTO consumption_consents (tenant_id, user_id, consented, text_version, recorded_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, user_id) DO UPDATE SET consented = excluded.consented, text_version = excluded.text_version, recorded_at = excluded.recorded_at
            """, [c.tenantId, c.userId, c.consented ? 1 : 0, c.textVersion, c.recordedAt.epochMilliseconds])
    }
}

/// Where each tenant's notification-history reading got (SQLite and PostgreSQL alike).
struct SQLAppleHistory: AppleHistoryRepository {
    let db: any SQLExecutor

    func mark(tenantId: String, environment: String) throws -> Date? {
        try db.row("SELECT checked_until FROM apple_history_marks WHERE tenant_id = ? AND environment = ?", [tenantId, environment])
            .map { Date(epochMilliseconds: $0["checked_until"]) }
    }

    func setMark(tenantId: String, environment: String, checkedUntil: Date, at now: Date) throws {
        // Never backwards: two instances reading at once leave the later mark.
        try db.run("""
            INSERT INTO apple_history_marks (tenant_id, environment, checked_until, checked_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (tenant_id, environment) DO UPDATE SET
              checked_until = CASE WHEN excluded.checked_until > apple_history_marks.checked_until THEN excluded.checked_until ELSE apple_history_marks.checked_until END,
              checked_at = excluded.checked_at
            """, [tenantId, environment, checkedUntil.epochMilliseconds, now.epochMilliseconds])
    }
}

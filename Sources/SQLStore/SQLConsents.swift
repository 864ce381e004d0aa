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

import Domain
import Foundation

/// Tenants and API keys (SQLite and PostgreSQL).
struct SQLKeys: APIKeyRepository {
    let db: any SQLExecutor

    func syncTenants(_ tenants: [(id: String, name: String)], now: Date) throws {
        for tenant in tenants {
            try db.run("""
                INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name
                """, [tenant.id, tenant.name, now.epochMilliseconds])
        }
    }

    func create(tenantId: String, role: APIKeyRole, hash: String, now: Date) throws -> APIKey {
        let key = APIKey(id: RecordID.next(), tenantId: tenantId, role: role, createdAt: now)
        try db.run("INSERT INTO api_keys (id, tenant_id, role, key_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                   [key.id, tenantId, role.rawValue, hash, now.epochMilliseconds])
        return key
    }

    func key(hash: String) throws -> APIKey? {
        guard let row = try db.row("SELECT id, tenant_id, role, created_at FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL", [hash]) else {
            return nil
        }
        guard let role = APIKeyRole(rawValue: row["role"]) else { return nil }
        return APIKey(id: row["id"], tenantId: row["tenant_id"], role: role, createdAt: row.date("created_at"))
    }
}

/// Receipt checks (SQLite and PostgreSQL).
struct SQLReceiptChecks: ReceiptCheckRepository {
    let db: any SQLExecutor

    func record(_ c: ReceiptCheck) throws {
        try db.run("""
            INSERT INTO receipt_checks (id, tenant_id, user_id, receipt_sha256, outcome, is_premium, product_id, expires_at, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [RecordID.next(), c.tenantId, c.userId, c.receiptSHA256, c.outcome, c.isPremium, c.productId, c.expiresAt?.epochMilliseconds,
                  c.at.epochMilliseconds])
    }

    func receiptChecks(tenantId: String, receiptSHA256: String) throws -> [ReceiptCheck] {
        try db.rows("""
            SELECT tenant_id, user_id, receipt_sha256, outcome, is_premium, product_id, expires_at, at FROM receipt_checks
            WHERE tenant_id = ? AND receipt_sha256 = ? ORDER BY at
            """, [tenantId, receiptSHA256]).map { row in
            ReceiptCheck(tenantId: row["tenant_id"], userId: row["user_id"], receiptSHA256: row["receipt_sha256"], outcome: row["outcome"],
                         isPremium: row["is_premium"], productId: row["product_id"], expiresAt: row.optionalDate("expires_at"), at: row.date("at"))
        }
    }
}

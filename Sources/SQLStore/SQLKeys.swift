import Domain
import Foundation

/// Tenants and API keys (SQLite and PostgreSQL).
struct SQLKeys: APIKeyRepository {
    let db: any SQLExecutor

    func syncTenants(_ tenants: [(id: String, name: String)], now: Date) throws {
        for tenant in tenants {
            try db.run(
                """
                INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name
                """,
                [tenant.id, tenant.name, now.epochMilliseconds]
            )
        }
    }

    static let columns = "id, tenant_id, role, scopes, name, hint, created_at, expires_at, revoked_at, last_used_at, rotated_from"

    func create(_ new: NewAPIKey, now: Date) throws -> APIKey {
        let key = APIKey(
            id: RecordID.next(),
            tenantId: new.tenantId,
            role: new.role,
            scopes: new.scopes,
            name: new.name,
            hint: new.hint,
            createdAt: now,
            expiresAt: new.expiresAt,
            rotatedFrom: new.rotatedFrom
        )
        try db.run(
            """
            INSERT INTO api_keys (id, tenant_id, role, key_hash, scopes, name, hint, created_at, expires_at, rotated_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                key.id, key.tenantId, key.role.rawValue, new.hash, new.scopes.map(Self.text), key.name, key.hint, now.epochMilliseconds,
                key.expiresAt?.epochMilliseconds, key.rotatedFrom,
            ]
        )
        return key
    }

    func key(hash: String) throws -> APIKey? {
        try db.row("SELECT \(Self.columns) FROM api_keys WHERE key_hash = ?", [hash]).flatMap(Self.decode)
    }

    func key(id: Int64, tenantId: String?, forUpdate: Bool) throws -> APIKey? {
        if let tenantId {
            return try db.row(
                "SELECT \(Self.columns) FROM api_keys WHERE id = ? AND tenant_id = ?\(forUpdate ? db.dialect.forUpdate : "")",
                [id, tenantId]
            )
            .flatMap(Self.decode)
        }
        return try db.row("SELECT \(Self.columns) FROM api_keys WHERE id = ?\(forUpdate ? db.dialect.forUpdate : "")", [id]).flatMap(Self.decode)
    }

    func keys(tenantId: String?) throws -> [APIKey] {
        let rows =
            if let tenantId {
                try db.rows("SELECT \(Self.columns) FROM api_keys WHERE tenant_id = ? ORDER BY created_at DESC, id", [tenantId])
            } else {
                try db.rows("SELECT \(Self.columns) FROM api_keys ORDER BY tenant_id, created_at DESC, id", [])
            }
        return rows.compactMap(Self.decode)
    }

    func revoke(id: Int64, at: Date) throws {
        try db.run("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [at.epochMilliseconds, id])
    }

    func expire(id: Int64, at: Date) throws {
        try db.run("UPDATE api_keys SET expires_at = ? WHERE id = ?", [at.epochMilliseconds, id])
    }

    func touch(id: Int64, at: Date, unlessUsedSince since: Date) throws {
        try db.run(
            "UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
            [at.epochMilliseconds, id, since.epochMilliseconds]
        )
    }

    static func text(_ scopes: Set<KeyScope>) -> String {
        scopes.sorted().map(\.rawValue).joined(separator: " ")
    }

    static func decode(_ row: SQLRow) -> APIKey? {
        guard let role = APIKeyRole(rawValue: row["role"]) else { return nil }
        // A scope this version does not know is dropped (the key can do less, never more).
        let scopes = (row["scopes"] as String?).map { text in Set(text.split(separator: " ").compactMap { KeyScope(rawValue: String($0)) }) }
        return APIKey(
            id: row["id"],
            tenantId: row["tenant_id"],
            role: role,
            scopes: scopes,
            name: row["name"],
            hint: row["hint"],
            createdAt: row.date("created_at"),
            expiresAt: row.optionalDate("expires_at"),
            revokedAt: row.optionalDate("revoked_at"),
            lastUsedAt: row.optionalDate("last_used_at"),
            rotatedFrom: row["rotated_from"]
        )
    }
}

/// Receipt checks (SQLite and PostgreSQL).
struct SQLReceiptChecks: ReceiptCheckRepository {
    let db: any SQLExecutor

    func record(_ c: ReceiptCheck) throws {
        try db.run(
            """
            INSERT INTO receipt_checks (id, tenant_id, user_id, receipt_sha256, outcome, is_premium, product_id, expires_at, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                RecordID.next(), c.tenantId, c.userId, c.receiptSHA256, c.outcome, c.isPremium, c.productId, c.expiresAt?.epochMilliseconds,
                c.at.epochMilliseconds,
            ]
        )
    }

    func receiptChecks(tenantId: String, receiptSHA256: String) throws -> [ReceiptCheck] {
        try db.rows(
            """
            SELECT tenant_id, user_id, receipt_sha256, outcome, is_premium, product_id, expires_at, at FROM receipt_checks
            WHERE tenant_id = ? AND receipt_sha256 = ? ORDER BY at
            """,
            [tenantId, receiptSHA256]
        ).map { row in
            ReceiptCheck(
                tenantId: row["tenant_id"],
                userId: row["user_id"],
                receiptSHA256: row["receipt_sha256"],
                outcome: row["outcome"],
                isPremium: row["is_premium"],
                productId: row["product_id"],
                expiresAt: row.optionalDate("expires_at"),
                at: row.date("at")
            )
        }
    }
}

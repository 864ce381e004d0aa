import Domain
import Foundation

/// Google Play's acknowledgements and sweep marks (SQLite and PostgreSQL alike).
struct SQLPlay: PlayRepository {
    let db: any SQLExecutor

    static let columns = """
        id, tenant_id, package_name, google_product_id, purchase_token, action, purchase_id, status, attempts, last_error, next_attempt_at, \
        purchased_at, created_at, done_at
        """

    func enqueue(_ a: PlayAcknowledgement) throws -> Bool {
        try db.run(
            """
            INSERT INTO play_acknowledgements (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, purchase_token, action) DO NOTHING
            """,
            [
                a.id, a.tenantId, a.packageName, a.googleProductId, a.purchaseToken, a.action.rawValue, a.purchaseId, a.status.rawValue, a.attempts,
                a.lastError, a.nextAttemptAt.epochMilliseconds, a.purchasedAt.epochMilliseconds, a.createdAt.epochMilliseconds,
                a.doneAt?.epochMilliseconds,
            ]
        ) == 1
    }

    func claimDue(now: Date, limit: Int, owner: String, leaseUntil: Date) throws -> [PlayAcknowledgement] {
        try LeasedWork.claimDue(
            db,
            table: "play_acknowledgements",
            columns: Self.columns,
            now: now,
            limit: limit,
            owner: owner,
            leaseUntil: leaseUntil,
            decode: Self.decode,
            id: \.id
        )
    }

    func record(_ a: PlayAcknowledgement, status: PlayAcknowledgement.Status, error: String?, nextAttemptAt: Date, now: Date) throws {
        try LeasedWork.record(
            db,
            table: "play_acknowledgements",
            id: a.id,
            status: status.rawValue,
            error: error,
            nextAttemptAt: nextAttemptAt,
            now: now
        )
    }

    func acknowledgements(tenantId: String, purchaseToken: String) throws -> [PlayAcknowledgement] {
        try db.rows(
            "SELECT \(Self.columns) FROM play_acknowledgements WHERE tenant_id = ? AND purchase_token = ? ORDER BY id",
            [tenantId, purchaseToken]
        )
        .map(Self.decode)
    }

    func pendingSummary(alertBefore: Date) throws -> [(tenantId: String, pending: Int, overdue: Int, oldest: Date?)] {
        try db.rows(
            """
            SELECT tenant_id, COUNT(*) AS pending, SUM(CASE WHEN purchased_at < ? THEN 1 ELSE 0 END) AS overdue, MIN(purchased_at) AS oldest
            FROM play_acknowledgements WHERE status = 'pending' GROUP BY tenant_id ORDER BY tenant_id
            """,
            [alertBefore.epochMilliseconds]
        ).map { row in
            (
                tenantId: row["tenant_id"], pending: Int(row["pending"] as Int64), overdue: Int((row["overdue"] as Int64?) ?? 0),
                oldest: row.optionalDate("oldest")
            )
        }
    }

    func sweep(tenantId: String, packageName: String) throws -> (voidedSince: Date, sweptAt: Date)? {
        try db.row("SELECT voided_since, swept_at FROM play_sweeps WHERE tenant_id = ? AND package_name = ?", [tenantId, packageName])
            .map { (voidedSince: $0.date("voided_since"), sweptAt: $0.date("swept_at")) }
    }

    func setSweep(tenantId: String, packageName: String, voidedSince: Date, sweptAt: Date) throws {
        try db.run(
            """
            INSERT INTO play_sweeps (tenant_id, package_name, voided_since, swept_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (tenant_id, package_name) DO UPDATE SET voided_since = excluded.voided_since, swept_at = excluded.swept_at
            """,
            [tenantId, packageName, voidedSince.epochMilliseconds, sweptAt.epochMilliseconds]
        )
    }

    func rememberPending(_ c: PlayPendingClaim) throws -> String {
        try db.run(
            """
            INSERT INTO play_pending_claims (tenant_id, purchase_token, user_id, product_id, booking_id, package_name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, purchase_token) DO UPDATE SET product_id = excluded.product_id,
                booking_id = excluded.booking_id, package_name = excluded.package_name, created_at = excluded.created_at
            WHERE play_pending_claims.user_id = excluded.user_id
            """,
            [c.tenantId, c.purchaseToken, c.userId, c.productId, c.bookingId, c.packageName, c.createdAt.epochMilliseconds]
        )
        return try pendingClaim(tenantId: c.tenantId, purchaseToken: c.purchaseToken)?.userId ?? c.userId
    }

    func pendingClaim(tenantId: String, purchaseToken: String) throws -> PlayPendingClaim? {
        try db.row(
            """
            SELECT tenant_id, purchase_token, user_id, product_id, booking_id, package_name, created_at FROM play_pending_claims
            WHERE tenant_id = ? AND purchase_token = ?
            """,
            [tenantId, purchaseToken]
        ).map { row in
            PlayPendingClaim(
                tenantId: row["tenant_id"],
                purchaseToken: row["purchase_token"],
                userId: row["user_id"],
                productId: row["product_id"],
                bookingId: row["booking_id"],
                packageName: row["package_name"],
                createdAt: row.date("created_at")
            )
        }
    }

    func forgetPending(tenantId: String, purchaseToken: String) throws {
        try db.run("DELETE FROM play_pending_claims WHERE tenant_id = ? AND purchase_token = ?", [tenantId, purchaseToken])
    }

    static func decode(_ row: SQLRow) throws -> PlayAcknowledgement {
        PlayAcknowledgement(
            id: row["id"],
            tenantId: row["tenant_id"],
            packageName: row["package_name"],
            googleProductId: row["google_product_id"],
            purchaseToken: row["purchase_token"],
            action: try row.value(PlayAcknowledgement.Action.self, "action"),
            purchaseId: row["purchase_id"],
            status: try row.value(PlayAcknowledgement.Status.self, "status"),
            attempts: Int(row["attempts"] as Int64),
            lastError: row["last_error"],
            nextAttemptAt: row.date("next_attempt_at"),
            purchasedAt: row.date("purchased_at"),
            createdAt: row.date("created_at"),
            doneAt: row.optionalDate("done_at")
        )
    }
}

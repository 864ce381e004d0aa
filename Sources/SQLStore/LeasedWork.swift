import Domain
import Foundation

/// Work tables whose rows are owed until done and tried by whichever instance leases them
/// (`play_acknowledgements`, `consumption_answers`): each has `id`, `status` ('pending' while owed),
/// `attempts`, `last_error`, `next_attempt_at`, `lease_owner`, `leased_until` and `done_at`.
enum LeasedWork {
    /// Leases up to `limit` pending rows due at `now` to `owner` until `leaseUntil`, selected and
    /// leased in one write transaction; rows leased to another owner and not expired are skipped
    /// (on PostgreSQL, rows another instance is claiming too).
    static func claimDue<Row>(
        _ db: any SQLExecutor,
        table: String,
        columns: String,
        now: Date,
        limit: Int,
        owner: String,
        leaseUntil: Date,
        decode: (SQLRow) throws -> Row,
        id: (Row) -> Int64
    ) throws -> [Row] {
        let stamp = now.epochMilliseconds
        let due = try db.rows(
            """
            SELECT \(columns) FROM \(table)
            WHERE status = 'pending' AND next_attempt_at <= ? AND (leased_until IS NULL OR leased_until <= ?)
            ORDER BY next_attempt_at, id LIMIT ?\(db.dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : "")
            """,
            [stamp, stamp, limit]
        ).map(decode)
        for row in due {
            try db.run("UPDATE \(table) SET lease_owner = ?, leased_until = ? WHERE id = ?", [owner, leaseUntil.epochMilliseconds, id(row)])
        }
        return due
    }

    /// Records an attempt and releases the lease: a status other than `pending` ends the row (a row
    /// already ended is left as it is); `pending` waits until `nextAttemptAt`.
    static func record(_ db: any SQLExecutor, table: String, id: Int64, status: String, error: String?, nextAttemptAt: Date, now: Date) throws {
        try db.run(
            """
            UPDATE \(table) SET status = ?, attempts = attempts + 1, last_error = ?, next_attempt_at = ?, lease_owner = NULL, leased_until = NULL,
            done_at = ? WHERE id = ? AND status = 'pending'
            """,
            [status, error.map { String($0.prefix(500)) }, nextAttemptAt.epochMilliseconds, status == "pending" ? nil : now.epochMilliseconds, id]
        )
    }
}

import Domain
import Foundation

/// Work tables whose rows are owed until done and tried by whichever instance leases them
/// (`play_acknowledgements`, `consumption_answers`, and `webhook_outbox` for its claim): each has `id`, `status` ('pending' while owed),
/// `attempts`, `last_error`, `next_attempt_at`, `lease_owner`, `leased_until` and `done_at`.
enum LeasedWork {
    /// What narrows a claim beyond "pending, due and not leased": the webhook outbox's tenant and its
    /// order per subject. The claimed table is `w` in `condition` and `order`.
    struct Narrowing {
        /// After the table's alias: SQLite's `INDEXED BY` (a planner without statistics).
        var hint = ""
        /// `AND …` conditions on `w`, with their `arguments` in order.
        var condition = ""
        var arguments: SQLArguments = []
        var order = "w.next_attempt_at, w.id"
    }

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
        narrowing: Narrowing = Narrowing(),
        decode: (SQLRow) throws -> Row,
        id: (Row) -> Int64
    ) throws -> [Row] {
        let stamp = now.epochMilliseconds
        let due = try db.rows(
            """
            SELECT \(columns) FROM \(table) w\(narrowing.hint)
            WHERE w.status = 'pending' AND w.next_attempt_at <= ? AND (w.leased_until IS NULL OR w.leased_until <= ?)\(narrowing.condition)
            ORDER BY \(narrowing.order) LIMIT ?\(db.dialect == .postgres ? " FOR UPDATE OF w SKIP LOCKED" : "")
            """,
            [stamp, stamp] + narrowing.arguments + [limit]
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

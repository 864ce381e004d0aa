import Domain
import Foundation

/// Purchases, replays, revoked and unclaimed transactions (SQLite and PostgreSQL).
struct SQLPurchases: PurchaseRepository {
    let db: any SQLExecutor

    static let columns = """
        id, tenant_id, user_id, booking_id, store, environment, transaction_id, original_transaction_id, product_id, \
        status, outcome_code, purchased_at, created_at, price_milliunits, currency, quantity, credits, target_kind, target_ref
        """

    static func decode(_ row: SQLRow) throws -> Purchase {
        Purchase(
            id: row["id"], tenantId: row["tenant_id"], userId: row["user_id"], target: PurchaseTarget(kind: row["target_kind"], reference: row["target_ref"]),
            store: row["store"],
            environment: row["environment"], transactionId: row["transaction_id"], originalTransactionId: row["original_transaction_id"],
            productId: row["product_id"], status: try row.value(PurchaseStatus.self, "status"), outcomeCode: row["outcome_code"],
            purchasedAt: row.date("purchased_at"), createdAt: row.date("created_at"),
            priceMilliunits: row["price_milliunits"], currency: row["currency"], quantity: row["quantity"],
            credits: row["credits"]
        )
    }

    func purchase(store: String, environment: String, transactionId: String, forUpdate: Bool) throws -> Purchase? {
        // Claims of one transaction take turns from here to their commit, whether its row exists yet or not.
        if forUpdate { try db.lock("purchase:\(store):\(environment):\(transactionId)") }
        return try db.row("SELECT \(Self.columns) FROM purchases WHERE store = ? AND environment = ? AND transaction_id = ?",
                   [store, environment, transactionId]).map(Self.decode)
    }

    func insert(_ p: Purchase, proofHash: String) throws {
        try db.run("""
            INSERT INTO purchases (\(Self.columns), proof_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [p.id, p.tenantId, p.userId, p.bookingId, p.store, p.environment, p.transactionId, p.originalTransactionId, p.productId,
                  p.status.rawValue, p.outcomeCode, p.purchasedAt.epochMilliseconds, p.createdAt.epochMilliseconds,
                  p.priceMilliunits, p.currency, p.quantity, p.credits, p.target?.kind.rawValue, p.target?.reference, proofHash])
    }

    func update(_ p: Purchase) throws {
        try db.run("UPDATE purchases SET status = ?, outcome_code = ? WHERE id = ?", [p.status.rawValue, p.outcomeCode, p.id])
    }

    func insert(_ r: ReplayAttempt, store: String) throws {
        try db.run("""
            INSERT INTO replay_attempts (id, tenant_id, user_id, booking_id, target_kind, target_ref, store, environment, transaction_id, existing_purchase_id,
                reason, proof_hash, at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [r.id, r.tenantId, r.userId, r.target?.bookingId, r.target?.kind.rawValue, r.target?.reference, store, r.environment, r.transactionId, r.existingPurchaseId, r.reason, r.proofHash,
                  r.at.epochMilliseconds])
    }

    func isRevoked(tenantId: String, store: String, environment: String, transactionId: String) throws -> Bool {
        try db.row("SELECT 1 FROM revoked_transactions WHERE tenant_id = ? AND store = ? AND environment = ? AND transaction_id = ?",
                   [tenantId, store, environment, transactionId]) != nil
    }

    func rememberRevoked(tenantId: String, store: String, environment: String, transactionId: String, notification: IncomingNotification, at: Date) throws {
        try db.run("""
            INSERT INTO revoked_transactions (id, tenant_id, store, environment, transaction_id, notification_type, notification_uuid, received_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
            """, [RecordID.next(), tenantId, store, environment, transactionId, notification.type.rawValue, notification.uuid, at.epochMilliseconds])
    }

    func forgetRevoked(tenantId: String, store: String, environment: String, transactionId: String) throws {
        try db.run("DELETE FROM revoked_transactions WHERE tenant_id = ? AND store = ? AND environment = ? AND transaction_id = ?",
                   [tenantId, store, environment, transactionId])
    }

    func keepUnclaimed(_ t: UnclaimedTransaction, tenantId: String, store: String, notificationUUID: String) throws {
        try db.run("""
            INSERT INTO unclaimed_transactions (id, tenant_id, store, environment, transaction_id, original_transaction_id, product_id, notification_uuid, purchased_at, received_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
            """, [RecordID.next(), tenantId, store, t.environment, t.transactionId, t.originalTransactionId ?? t.transactionId, t.productId,
                  notificationUUID, t.purchasedAt.epochMilliseconds, t.receivedAt.epochMilliseconds])
    }

    func purchases(tenantId: String, filter: PurchaseFilter, page: Page) throws -> (items: [Purchase], total: Int) {
        let (whereClause, arguments) = Self.conditions(tenantId: tenantId, filter: filter)
        return try db.page(table: "purchases", columns: Self.columns, whereClause: whereClause, arguments: arguments, order: "created_at", page: page,
                           decode: Self.decode)
    }

    func exportPurchases(tenantId: String, filter: PurchaseFilter, limit: Int) throws -> [Purchase] {
        let (whereClause, arguments) = Self.conditions(tenantId: tenantId, filter: filter)
        return try db.rows("SELECT \(Self.columns) FROM purchases WHERE \(whereClause) ORDER BY created_at, id LIMIT ?", arguments + [limit]).map(Self.decode)
    }

    private static func conditions(tenantId: String, filter: PurchaseFilter) -> (String, SQLArguments) {
        var clauses = ["tenant_id = ?"], arguments: SQLArguments = [tenantId]
        func add(_ clause: String, _ value: (any SQLBindable)?) {
            guard let value else { return }
            clauses.append(clause)
            arguments.append(value)
        }
        add("user_id = ?", filter.userId)
        add("product_id = ?", filter.productId)
        add("status = ?", filter.status?.rawValue)
        add("environment = ?", filter.environment)
        add("created_at >= ?", filter.from?.epochMilliseconds)
        add("created_at < ?", filter.to?.epochMilliseconds)
        return (clauses.joined(separator: " AND "), arguments)
    }

    func replays(tenantId: String, page: Page) throws -> (items: [ReplayAttempt], total: Int) {
        try db.page(table: "replay_attempts", columns: "id, tenant_id, user_id, target_kind, target_ref, environment, transaction_id, existing_purchase_id, reason, proof_hash, at",
                    whereClause: "tenant_id = ?", arguments: [tenantId], order: "at", page: page) { row in
            ReplayAttempt(id: row["id"], tenantId: row["tenant_id"], userId: row["user_id"], target: PurchaseTarget(kind: row["target_kind"], reference: row["target_ref"]),
                          environment: row["environment"],
                          transactionId: row["transaction_id"], existingPurchaseId: row["existing_purchase_id"], reason: row["reason"],
                          proofHash: row["proof_hash"], at: row.date("at"))
        }
    }

    func unclaimed(tenantId: String, page: Page) throws -> (items: [UnclaimedTransaction], total: Int) {
        let total = try db.count("SELECT COUNT(*) FROM unclaimed_transactions WHERE tenant_id = ?", [tenantId])
        let rows = try db.rows("""
            SELECT u.environment, u.transaction_id, u.original_transaction_id, u.product_id, u.purchased_at, u.received_at, p.id AS purchase_id
            FROM unclaimed_transactions u
            LEFT JOIN purchases p ON p.store = u.store AND p.environment = u.environment AND p.transaction_id = u.transaction_id AND p.tenant_id = u.tenant_id
            WHERE u.tenant_id = ? ORDER BY u.received_at DESC, u.id DESC LIMIT ? OFFSET ?
            """, [tenantId, page.limit, page.offset])
        let items = rows.map { row in
            UnclaimedTransaction(environment: row["environment"], transactionId: row["transaction_id"], productId: row["product_id"],
                                 purchasedAt: row.date("purchased_at"), receivedAt: row.date("received_at"), claimedByPurchaseId: row["purchase_id"],
                                 originalTransactionId: row["original_transaction_id"])
        }
        return (items, total)
    }
}

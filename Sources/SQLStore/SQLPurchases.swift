import Domain
import Foundation

/// Purchases, replays, revoked and unclaimed transactions (SQLite and PostgreSQL).
struct SQLPurchases: PurchaseRepository {
    let db: any SQLExecutor

    static let columns = """
        id, tenant_id, user_id, booking_id, store, environment, transaction_id, original_transaction_id, product_id, \
        status, outcome_code, purchased_at, created_at, price_milliunits, currency, quantity, credits, target_kind, target_ref, order_id, \
        refunded_at
        """

    static func decode(_ row: SQLRow) throws -> Purchase {
        var purchase = Purchase(
            id: row["id"],
            tenantId: row["tenant_id"],
            userId: row["user_id"],
            target: PurchaseTarget(kind: row["target_kind"], reference: row["target_ref"]),
            store: row["store"],
            environment: row["environment"],
            transactionId: row["transaction_id"],
            originalTransactionId: row["original_transaction_id"],
            productId: row["product_id"],
            status: try row.value(PurchaseStatus.self, "status"),
            outcomeCode: row["outcome_code"],
            purchasedAt: row.date("purchased_at"),
            createdAt: row.date("created_at"),
            priceMilliunits: row["price_milliunits"],
            currency: row["currency"],
            quantity: row["quantity"],
            credits: row["credits"]
        )
        purchase.orderId = row["order_id"]
        purchase.refundedAt = row.optionalDate("refunded_at")
        return purchase
    }

    func purchase(store: StoreName, environment: StoreEnvironment, transactionId: String, forUpdate: Bool) throws -> Purchase? {
        // Claims of one transaction take turns from here to their commit, whether its row exists yet or not.
        if forUpdate { try db.lock("purchase:\(store):\(environment):\(transactionId)") }
        return try db.row(
            "SELECT \(Self.columns) FROM purchases WHERE store = ? AND environment = ? AND transaction_id = ?",
            [store, environment, transactionId]
        ).map(Self.decode)
    }

    func insert(_ p: Purchase, proofHash: String) throws {
        try db.run(
            """
            INSERT INTO purchases (\(Self.columns), proof_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                p.id, p.tenantId, p.userId, p.bookingId, p.store, p.environment, p.transactionId, p.originalTransactionId, p.productId,
                p.status.rawValue, p.outcomeCode, p.purchasedAt.epochMilliseconds, p.createdAt.epochMilliseconds,
                p.priceMilliunits, p.currency, p.quantity, p.credits, p.target?.kind.rawValue, p.target?.reference, p.orderId,
                p.refundedAt?.epochMilliseconds, proofHash,
            ]
        )
    }

    func update(_ p: Purchase) throws {
        try db.run(
            "UPDATE purchases SET status = ?, outcome_code = ?, refunded_at = ? WHERE id = ?",
            [p.status.rawValue, p.outcomeCode, p.status == .refunded ? (p.refundedAt ?? p.createdAt).epochMilliseconds : nil, p.id]
        )
    }

    func insert(_ r: ReplayAttempt, store: StoreName) throws {
        try db.run(
            """
            INSERT INTO replay_attempts (id, tenant_id, user_id, booking_id, target_kind, target_ref, store, environment, transaction_id, existing_purchase_id,
                reason, proof_hash, at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                r.id, r.tenantId, r.userId, r.target?.bookingId, r.target?.kind.rawValue, r.target?.reference, store, r.environment, r.transactionId,
                r.existingPurchaseId, r.reason, r.proofHash,
                r.at.epochMilliseconds,
            ]
        )
    }

    func isRevoked(tenantId: String, store: StoreName, environment: StoreEnvironment, transactionId: String) throws -> Bool {
        try db.row(
            "SELECT 1 FROM revoked_transactions WHERE tenant_id = ? AND store = ? AND environment = ? AND transaction_id = ?",
            [tenantId, store, environment, transactionId]
        ) != nil
    }

    func rememberRevoked(
        tenantId: String,
        store: StoreName,
        environment: StoreEnvironment,
        transactionId: String,
        notification: IncomingNotification,
        at: Date
    ) throws {
        try db.run(
            """
            INSERT INTO revoked_transactions (id, tenant_id, store, environment, transaction_id, notification_type, notification_uuid, received_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
            """,
            [RecordID.next(), tenantId, store, environment, transactionId, notification.type.rawValue, notification.uuid, at.epochMilliseconds]
        )
    }

    func forgetRevoked(tenantId: String, store: StoreName, environment: StoreEnvironment, transactionId: String) throws {
        try db.run(
            "DELETE FROM revoked_transactions WHERE tenant_id = ? AND store = ? AND environment = ? AND transaction_id = ?",
            [tenantId, store, environment, transactionId]
        )
    }

    func keepUnclaimed(_ t: UnclaimedTransaction, tenantId: String, store: StoreName, notificationUUID: String) throws {
        let proven = try t.proven.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try db.run(
            """
            INSERT INTO unclaimed_transactions (id, tenant_id, store, environment, transaction_id, original_transaction_id, product_id, notification_uuid, purchased_at,
                received_at, app_account_token, proven)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
            """,
            [
                RecordID.next(), tenantId, store, t.environment, t.transactionId, t.originalTransactionId ?? t.transactionId, t.productId,
                notificationUUID, t.purchasedAt.epochMilliseconds, t.receivedAt.epochMilliseconds, t.appAccountToken?.lowercased(), proven,
            ]
        )
    }

    func rememberTokens(_ tokens: [String], userId: String, tenantId: String, at: Date) throws {
        for token in Set(tokens.map { $0.lowercased() }) where !token.isEmpty {
            try db.run(
                "INSERT INTO account_tokens (tenant_id, token, user_id, seen_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [tenantId, token, userId, at.epochMilliseconds]
            )
        }
    }

    func user(token: String, tenantId: String) throws -> String? {
        try db.row("SELECT user_id FROM account_tokens WHERE tenant_id = ? AND token = ?", [tenantId, token.lowercased()])?["user_id"]
    }

    func waitingTransactions(tenantId: String, tokens: [String]) throws -> [ProvenTransaction] {
        guard let waiting = Self.waiting(tenantId: tenantId, tokens: tokens) else { return [] }
        let rows = try db.rows(
            waiting.statement,
            waiting.arguments
        )
        return try Self.decodeWaiting(rows)
    }

    /// The transactions waiting for one of `tokens` (nil when there is no token): an index lookup on
    /// (tenant_id, app_account_token), cheap enough for every verify call and every entitlements read.
    static func waiting(tenantId: String, tokens: [String]) -> SelectPart? {
        let wanted = Array(Set(tokens.map { $0.lowercased() }).filter { !$0.isEmpty }).sorted()
        guard !wanted.isEmpty else { return nil }
        return SelectPart(
            tag: "waiting",
            columns: ["proven"],
            selectList: "u.proven AS proven",
            rest: """
                FROM unclaimed_transactions u
                LEFT JOIN purchases p ON p.store = u.store AND p.environment = u.environment AND p.transaction_id = u.transaction_id
                WHERE u.tenant_id = ? AND u.app_account_token IN (\(wanted.map { _ in "?" }.joined(separator: ", ")))
                  AND u.proven IS NOT NULL AND p.id IS NULL
                  AND NOT EXISTS (SELECT 1 FROM unapplied_payments k WHERE k.tenant_id = u.tenant_id AND k.store = u.store
                                  AND k.environment = u.environment AND k.transaction_id = u.transaction_id)
                """,
            order: "u.received_at, u.id",
            limit: 20,
            arguments: [tenantId] + wanted.map { $0 as any SQLBindable }
        )
    }

    static func decodeWaiting(_ rows: [SQLRow]) throws -> [ProvenTransaction] {
        try rows.compactMap { row in
            guard let text: String = row["proven"] else { return nil }
            return try JSONDecoder().decode(ProvenTransaction.self, from: Data(text.utf8))
        }
    }

    func purchases(tenantId: String, filter: PurchaseFilter, page: Page) throws -> (items: [Purchase], total: Int) {
        let (whereClause, arguments) = Self.conditions(tenantId: tenantId, filter: filter)
        return try db.page(
            table: "purchases",
            columns: Self.columns,
            whereClause: whereClause,
            arguments: arguments,
            order: "created_at",
            page: page,
            decode: Self.decode
        )
    }

    func exportPurchases(tenantId: String, filter: PurchaseFilter, limit: Int) throws -> [Purchase] {
        let (whereClause, arguments) = Self.conditions(tenantId: tenantId, filter: filter)
        return try db.rows("SELECT \(Self.columns) FROM purchases WHERE \(whereClause) ORDER BY created_at, id LIMIT ?", arguments + [limit]).map(
            Self.decode
        )
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
        try db.page(
            table: "replay_attempts",
            columns: "id, tenant_id, user_id, target_kind, target_ref, environment, transaction_id, existing_purchase_id, reason, proof_hash, at",
            whereClause: "tenant_id = ?",
            arguments: [tenantId],
            order: "at",
            page: page
        ) { row in
            ReplayAttempt(
                id: row["id"],
                tenantId: row["tenant_id"],
                userId: row["user_id"],
                target: PurchaseTarget(kind: row["target_kind"], reference: row["target_ref"]),
                environment: row["environment"],
                transactionId: row["transaction_id"],
                existingPurchaseId: row["existing_purchase_id"],
                reason: row["reason"],
                proofHash: row["proof_hash"],
                at: row.date("at")
            )
        }
    }

    func unclaimed(tenantId: String, page: Page) throws -> (items: [UnclaimedTransaction], total: Int) {
        let total = try db.count("SELECT COUNT(*) FROM unclaimed_transactions WHERE tenant_id = ?", [tenantId])
        let rows = try db.rows(
            """
            SELECT u.environment, u.transaction_id, u.original_transaction_id, u.product_id, u.purchased_at, u.received_at, p.id AS purchase_id
            FROM unclaimed_transactions u
            LEFT JOIN purchases p ON p.store = u.store AND p.environment = u.environment AND p.transaction_id = u.transaction_id AND p.tenant_id = u.tenant_id
            WHERE u.tenant_id = ? ORDER BY u.received_at DESC, u.id DESC LIMIT ? OFFSET ?
            """,
            [tenantId, page.limit, page.offset]
        )
        let items = rows.map { row in
            UnclaimedTransaction(
                environment: row["environment"],
                transactionId: row["transaction_id"],
                productId: row["product_id"],
                purchasedAt: row.date("purchased_at"),
                receivedAt: row.date("received_at"),
                claimedByPurchaseId: row["purchase_id"],
                originalTransactionId: row["original_transaction_id"]
            )
        }
        return (items, total)
    }
}

extension SQLPurchases {
    static let unappliedColumns = """
        u.id, u.tenant_id, u.store, u.user_id, u.booking_id, u.reason_code, u.reason, u.proven, u.attempts, u.status, u.first_seen_at, u.last_seen_at, \
        u.resolved_at, u.resolved_by, u.purchase_id, u.note, p.id AS claimed_purchase_id
        """
    /// The applied purchase of the row's transaction, if a claim applied it after it was kept (the
    /// listing's `status` filter reads `open` and `applied` through it, as `UnappliedPayment.currentStatus` does).
    static let unappliedJoin = """
        unapplied_payments u LEFT JOIN purchases p ON p.tenant_id = u.tenant_id AND p.store = u.store AND p.environment = u.environment \
        AND p.transaction_id = u.transaction_id AND p.status = 'applied'
        """

    func keepUnapplied(_ u: UnappliedPayment) throws -> UnappliedPayment {
        let proven = String(decoding: try JSONEncoder().encode(u.proven), as: UTF8.self)
        let t = u.proven
        try db.run(
            """
            INSERT INTO unapplied_payments (id, tenant_id, store, environment, transaction_id, original_transaction_id, product_id, quantity, price_milliunits,
                currency, user_id, booking_id, reason_code, reason, proof_hash, proven, attempts, status, first_seen_at, last_seen_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 'open', ?, ?)
            ON CONFLICT (tenant_id, store, environment, transaction_id) DO UPDATE SET attempts = unapplied_payments.attempts + 1,
                last_seen_at = excluded.last_seen_at, user_id = excluded.user_id, booking_id = excluded.booking_id, reason_code = excluded.reason_code,
                reason = excluded.reason, proof_hash = excluded.proof_hash, proven = excluded.proven
            WHERE unapplied_payments.status = 'open'
            """,
            [
                u.id, u.tenantId, u.store, t.environment, t.transactionId, t.originalTransactionId, t.productId, Int64(t.quantity ?? 1),
                t.priceMilliunits,
                t.currency, u.userId, u.bookingId, u.reasonCode.rawValue, u.reason, t.proofHash, proven, u.firstSeenAt.epochMilliseconds,
                u.lastSeenAt.epochMilliseconds,
            ]
        )
        guard
            let row = try db.row(
                """
                SELECT \(Self.unappliedColumns) FROM \(Self.unappliedJoin)
                WHERE u.tenant_id = ? AND u.store = ? AND u.environment = ? AND u.transaction_id = ?
                """,
                [u.tenantId, u.store, t.environment, t.transactionId]
            )
        else { throw StoreError("the unapplied payment of \(t.transactionId) was not kept") }
        return try Self.decodeUnapplied(row)
    }

    func unappliedPayment(id: Int64, tenantId: String, forUpdate: Bool) throws -> UnappliedPayment? {
        if forUpdate { try db.lock("unapplied:\(id)") }
        return try db.row("SELECT \(Self.unappliedColumns) FROM \(Self.unappliedJoin) WHERE u.id = ? AND u.tenant_id = ?", [id, tenantId])
            .map(Self.decodeUnapplied)
    }

    func update(_ u: UnappliedPayment) throws {
        try db.run(
            "UPDATE unapplied_payments SET status = ?, resolved_at = ?, resolved_by = ?, purchase_id = ?, note = ? WHERE id = ? AND tenant_id = ?",
            [u.status.rawValue, u.resolvedAt?.epochMilliseconds, u.resolvedBy, u.purchaseId, u.note, u.id, u.tenantId]
        )
    }

    func unappliedPayments(tenantId: String, status: UnappliedPayment.Status?, page: Page) throws -> (items: [UnappliedPayment], total: Int) {
        var clause = "u.tenant_id = ?"
        switch status {
        case .open?: clause += " AND u.status = 'open' AND p.id IS NULL"
        case .applied?: clause += " AND (u.status = 'applied' OR p.id IS NOT NULL)"
        case .refundRequested?: clause += " AND u.status = 'refund_requested'"
        case nil: break
        }
        let total = try db.count("SELECT COUNT(*) FROM \(Self.unappliedJoin) WHERE \(clause)", [tenantId])
        let rows = try db.rows(
            "SELECT \(Self.unappliedColumns) FROM \(Self.unappliedJoin) WHERE \(clause) ORDER BY u.last_seen_at DESC, u.id DESC LIMIT ? OFFSET ?",
            [tenantId, page.limit, page.offset]
        )
        return (try rows.map(Self.decodeUnapplied), total)
    }

    static func decodeUnapplied(_ row: SQLRow) throws -> UnappliedPayment {
        let text: String = row["proven"]
        let proven = try JSONDecoder().decode(ProvenTransaction.self, from: Data(text.utf8))
        var payment = UnappliedPayment(
            id: row["id"],
            tenantId: row["tenant_id"],
            store: row["store"],
            userId: row["user_id"],
            bookingId: row["booking_id"],
            reasonCode: ErrorCode(rawValue: row["reason_code"]),
            reason: row["reason"],
            proven: proven,
            attempts: row["attempts"],
            status: try row.value(UnappliedPayment.Status.self, "status"),
            firstSeenAt: row.date("first_seen_at"),
            lastSeenAt: row.date("last_seen_at"),
            resolvedAt: row.optionalDate("resolved_at"),
            resolvedBy: row["resolved_by"],
            purchaseId: row["purchase_id"],
            note: row["note"]
        )
        payment.claimedByPurchaseId = row["claimed_purchase_id"]
        return payment
    }
}

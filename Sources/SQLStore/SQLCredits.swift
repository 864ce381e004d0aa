import Domain
import Foundation

/// Credit products, balances, ledger, lots, reservations and bonuses (SQLite and PostgreSQL).
struct SQLCredits: CreditRepository {
    let db: any SQLExecutor

    // MARK: Products

    static let productColumns =
        "tenant_id, product_id, credit_type, credits, title, description, price_minor, currency, display_order, active, created_at, updated_at"

    static func product(_ row: SQLRow) -> CreditProduct {
        CreditProduct(
            tenantId: row["tenant_id"],
            productId: row["product_id"],
            creditType: row["credit_type"],
            credits: row["credits"],
            title: row["title"],
            description: row["description"],
            priceMinor: row["price_minor"],
            currency: row["currency"],
            displayOrder: row["display_order"],
            active: (row["active"] as Int) == 1,
            createdAt: row.date("created_at"),
            updatedAt: row.date("updated_at")
        )
    }

    func products(tenantId: String) throws -> [CreditProduct] {
        try db.rows("SELECT \(Self.productColumns) FROM credit_products WHERE tenant_id = ? ORDER BY display_order, product_id", [tenantId]).map(
            Self.product
        )
    }

    func product(tenantId: String, productId: String) throws -> CreditProduct? {
        try db.row("SELECT \(Self.productColumns) FROM credit_products WHERE tenant_id = ? AND product_id = ?", [tenantId, productId]).map(
            Self.product
        )
    }

    func insert(_ p: CreditProduct) throws {
        try db.run(
            "INSERT INTO credit_products (\(Self.productColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                p.tenantId, p.productId, p.creditType, p.credits, p.title, p.description, p.priceMinor, p.currency, p.displayOrder, p.active ? 1 : 0,
                p.createdAt.epochMilliseconds, p.updatedAt.epochMilliseconds,
            ]
        )
    }

    func update(_ p: CreditProduct) throws {
        try db.run(
            """
            UPDATE credit_products SET credit_type = ?, credits = ?, title = ?, description = ?, price_minor = ?, currency = ?, display_order = ?, active = ?,
            updated_at = ? WHERE tenant_id = ? AND product_id = ?
            """,
            [
                p.creditType, p.credits, p.title, p.description, p.priceMinor, p.currency, p.displayOrder, p.active ? 1 : 0,
                p.updatedAt.epochMilliseconds,
                p.tenantId, p.productId,
            ]
        )
    }

    func seed(_ products: [CreditProduct]) throws -> Int {
        var added = 0
        for p in products {
            added += try db.run(
                """
                INSERT INTO credit_products (\(Self.productColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """,
                [
                    p.tenantId, p.productId, p.creditType, p.credits, p.title, p.description, p.priceMinor, p.currency, p.displayOrder,
                    p.active ? 1 : 0,
                    p.createdAt.epochMilliseconds, p.updatedAt.epochMilliseconds,
                ]
            )

        }
        return added
    }

    // MARK: Accounts

    func account(tenantId: String, userId: String, creditType: String, now: Date, forUpdate: Bool) throws -> CreditAccount {
        // Decisions on one account take turns from here to their commit (no overspending when several
        // instances reserve at once); the balance row may not exist yet, so the lock is named, not a row's.
        if forUpdate { try db.lock("credits:\(tenantId):\(userId):\(creditType)") }
        let row = try db.row(
            "SELECT balance, debt, entries FROM credit_balances WHERE tenant_id = ? AND user_id = ? AND credit_type = ?",
            [tenantId, userId, creditType]
        )
        let balance = CreditBalance(
            tenantId: tenantId,
            userId: userId,
            creditType: creditType,
            balance: row?["balance"] ?? 0,
            debt: row?["debt"] ?? 0,
            entries: row?["entries"] ?? 0
        )
        let held = try held(tenantId: tenantId, userId: userId, creditType: creditType, now: now)
        let lots = try db.rows(
            """
            SELECT \(Self.lotColumns) FROM credit_lots WHERE tenant_id = ? AND user_id = ? AND credit_type = ? AND remaining > 0 ORDER BY granted_at, id
            """,
            [tenantId, userId, creditType]
        ).map(Self.lot)
        return CreditAccount(balance: balance, held: held, openLots: lots)
    }

    private func held(tenantId: String, userId: String, creditType: String, now: Date) throws -> Int64 {
        try db.row(
            """
            SELECT COALESCE(SUM(amount), 0) AS held FROM credit_reservations
            WHERE tenant_id = ? AND user_id = ? AND credit_type = ? AND status = 'held' AND expires_at > ?
            """,
            [tenantId, userId, creditType, now.epochMilliseconds]
        )?["held"] ?? 0
    }

    func summaries(tenantId: String, userId: String, now: Date) throws -> [CreditSummary] {
        let part = Self.summaries(tenantId: tenantId, userId: userId, now: now)
        return try db.rows(part.statement, part.arguments).map(Self.summary)
    }

    /// Each credit type's balance with what live reservations hold of it, in one statement.
    static func summaries(tenantId: String, userId: String, now: Date) -> SelectPart {
        SelectPart(
            tag: "summaries",
            columns: ["credit_type", "balance", "debt", "held"],
            selectList: """
                b.credit_type AS credit_type, b.balance AS balance, b.debt AS debt,
                (SELECT COALESCE(SUM(r.amount), 0) FROM credit_reservations r WHERE r.tenant_id = b.tenant_id AND r.user_id = b.user_id
                 AND r.credit_type = b.credit_type AND r.status = 'held' AND r.expires_at > ?) AS held
                """,
            rest: "FROM credit_balances b WHERE b.tenant_id = ? AND b.user_id = ?",
            order: "b.credit_type",
            arguments: [now.epochMilliseconds, tenantId, userId]
        )
    }

    static func summary(_ row: SQLRow) -> CreditSummary {
        CreditSummary(creditType: row["credit_type"], balance: row["balance"], held: row["held"], debt: row["debt"])
    }

    func saveBalance(_ b: CreditBalance, now: Date) throws {
        try db.run(
            """
            INSERT INTO credit_balances (tenant_id, user_id, credit_type, balance, debt, entries, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, user_id, credit_type) DO UPDATE SET balance = excluded.balance, debt = excluded.debt, entries = excluded.entries,
            updated_at = excluded.updated_at
            """,
            [b.tenantId, b.userId, b.creditType, b.balance, b.debt, b.entries, now.epochMilliseconds]
        )
    }

    // MARK: Ledger

    static let entryColumns = """
        id, tenant_id, user_id, credit_type, sequence, type, amount, debt_change, balance_after, status, actor, reason, product_id, transaction_id, purchase_id, \
        reservation_id, profile_id, reference, created_at
        """

    static func entry(_ row: SQLRow) throws -> LedgerEntry {
        LedgerEntry(
            id: row["id"],
            tenantId: row["tenant_id"],
            userId: row["user_id"],
            creditType: row["credit_type"],
            sequence: row["sequence"],
            type: try row.value(LedgerEntryType.self, "type"),
            amount: row["amount"],
            debtChange: row["debt_change"],
            balanceAfter: row["balance_after"],
            status: try row.value(LedgerEntryStatus.self, "status"),
            actor: row["actor"],
            reason: row["reason"],
            productId: row["product_id"],
            transactionId: row["transaction_id"],
            purchaseId: row["purchase_id"],
            reservationId: row["reservation_id"],
            profileId: row["profile_id"],
            reference: row["reference"],
            createdAt: row.date("created_at")
        )
    }

    func insert(_ e: LedgerEntry) throws {
        try db.run(
            "INSERT INTO credit_ledger (\(Self.entryColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                e.id, e.tenantId, e.userId, e.creditType, e.sequence, e.type.rawValue, e.amount, e.debtChange, e.balanceAfter, e.status.rawValue,
                e.actor, e.reason,
                e.productId, e.transactionId, e.purchaseId, e.reservationId, e.profileId, e.reference, e.createdAt.epochMilliseconds,
            ]
        )
    }

    func setStatus(_ status: LedgerEntryStatus, entryId: Int64) throws {
        try db.run("UPDATE credit_ledger SET status = ? WHERE id = ?", [status.rawValue, entryId])
    }

    func grant(purchaseId: Int64, tenantId: String) throws -> (entry: LedgerEntry, lot: CreditLot?)? {
        guard
            let entry = try db.row(
                """
                SELECT \(Self.entryColumns) FROM credit_ledger WHERE purchase_id = ? AND tenant_id = ? AND type = 'purchase'
                """,
                [purchaseId, tenantId]
            ).map(Self.entry)
        else { return nil }
        let lot = try db.row("SELECT \(Self.lotColumns) FROM credit_lots WHERE entry_id = ?", [entry.id]).map(Self.lot)
        return (entry, lot)
    }

    func lastRefund(purchaseId: Int64, tenantId: String) throws -> LedgerEntry? {
        try db.row(
            "SELECT \(Self.entryColumns) FROM credit_ledger WHERE purchase_id = ? AND tenant_id = ? AND type = 'refund' ORDER BY sequence DESC LIMIT 1",
            [purchaseId, tenantId]
        ).map(Self.entry)
    }

    // MARK: Lots

    static let lotColumns = "id, tenant_id, user_id, credit_type, entry_id, purchase_id, amount, remaining, granted_at, consumed_at, refunded_at"

    static func lot(_ row: SQLRow) -> CreditLot {
        CreditLot(
            id: row["id"],
            tenantId: row["tenant_id"],
            userId: row["user_id"],
            creditType: row["credit_type"],
            entryId: row["entry_id"],
            purchaseId: row["purchase_id"],
            amount: row["amount"],
            remaining: row["remaining"],
            grantedAt: row.date("granted_at"),
            consumedAt: row.optionalDate("consumed_at"),
            refundedAt: row.optionalDate("refunded_at")
        )
    }

    func insert(_ l: CreditLot) throws {
        try db.run(
            "INSERT INTO credit_lots (\(Self.lotColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                l.id, l.tenantId, l.userId, l.creditType, l.entryId, l.purchaseId, l.amount, l.remaining, l.grantedAt.epochMilliseconds,
                l.consumedAt?.epochMilliseconds, l.refundedAt?.epochMilliseconds,
            ]
        )
    }

    func update(_ l: CreditLot) throws {
        try db.run(
            "UPDATE credit_lots SET remaining = ?, consumed_at = ?, refunded_at = ? WHERE id = ?",
            [l.remaining, l.consumedAt?.epochMilliseconds, l.refundedAt?.epochMilliseconds, l.id]
        )
    }

    func insert(_ u: CreditLotUse) throws {
        try db.run(
            "INSERT INTO credit_lot_uses (entry_id, lot_id, amount, profile_id, at) VALUES (?, ?, ?, ?, ?)",
            [u.entryId, u.lotId, u.amount, u.profileId, u.at.epochMilliseconds]
        )
    }

    func lots(
        tenantId: String,
        userId: String,
        creditType: String?,
        page: Page
    ) throws -> (items: [(lot: CreditLot, uses: [CreditLotUse])], total: Int) {
        let typeClause = creditType == nil ? "" : " AND credit_type = ?"
        var arguments: SQLArguments = [tenantId, userId]
        if let creditType { arguments += [creditType] }
        let total = try db.count("SELECT COUNT(*) FROM credit_lots WHERE tenant_id = ? AND user_id = ?\(typeClause)", arguments)
        let lots = try db.rows(
            "SELECT \(Self.lotColumns) FROM credit_lots WHERE tenant_id = ? AND user_id = ?\(typeClause) ORDER BY granted_at, id LIMIT ? OFFSET ?",
            arguments + [page.limit, page.offset]
        ).map(Self.lot)
        var uses: [Int64: [CreditLotUse]] = [:]
        if !lots.isEmpty {
            let marks = Array(repeating: "?", count: lots.count).joined(separator: ", ")
            for row in try db.rows(
                """
                SELECT entry_id, lot_id, amount, profile_id, at FROM credit_lot_uses WHERE lot_id IN (\(marks)) ORDER BY at, entry_id
                """,
                SQLArguments(lots.map(\.id))
            ) {
                let use = CreditLotUse(
                    entryId: row["entry_id"],
                    lotId: row["lot_id"],
                    amount: row["amount"],
                    profileId: row["profile_id"],
                    at: row.date("at")
                )
                uses[use.lotId, default: []].append(use)
            }
        }
        return (lots.map { ($0, uses[$0.id] ?? []) }, total)
    }

    // MARK: Bonus

    func recordBonus(tenantId: String, userId: String, now: Date) throws -> Bool {
        try db.run(
            "INSERT INTO credit_bonuses (tenant_id, user_id, granted_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [tenantId, userId, now.epochMilliseconds]
        ) == 1
    }

    func hasBonus(tenantId: String, userId: String) throws -> Bool {
        try db.row("SELECT 1 FROM credit_bonuses WHERE tenant_id = ? AND user_id = ?", [tenantId, userId]) != nil
    }

    // MARK: Reservations

    static let reservationColumns =
        "id, tenant_id, user_id, credit_type, amount, status, reference, profile_id, created_at, expires_at, settled_at, entry_id"

    static func reservation(_ row: SQLRow) throws -> CreditReservation {
        CreditReservation(
            id: row["id"],
            tenantId: row["tenant_id"],
            userId: row["user_id"],
            creditType: row["credit_type"],
            amount: row["amount"],
            status: try row.value(ReservationStatus.self, "status"),
            reference: row["reference"],
            profileId: row["profile_id"],
            createdAt: row.date("created_at"),
            expiresAt: row.date("expires_at"),
            settledAt: row.optionalDate("settled_at"),
            entryId: row["entry_id"]
        )
    }

    func reservation(id: Int64, tenantId: String, forUpdate: Bool) throws -> CreditReservation? {
        try db.row(
            "SELECT \(Self.reservationColumns) FROM credit_reservations WHERE id = ? AND tenant_id = ?\(forUpdate ? db.dialect.forUpdate : "")",
            [id, tenantId]
        ).map(Self.reservation)
    }

    func reservation(reference: String, tenantId: String, userId: String) throws -> CreditReservation? {
        try db.row(
            """
            SELECT \(Self.reservationColumns) FROM credit_reservations WHERE tenant_id = ? AND user_id = ? AND reference = ?
            ORDER BY created_at DESC, id DESC LIMIT 1
            """,
            [tenantId, userId, reference]
        ).map(Self.reservation)
    }

    func insert(_ r: CreditReservation) throws {
        try db.run(
            "INSERT INTO credit_reservations (\(Self.reservationColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                r.id, r.tenantId, r.userId, r.creditType, r.amount, r.status.rawValue, r.reference, r.profileId, r.createdAt.epochMilliseconds,
                r.expiresAt.epochMilliseconds, r.settledAt?.epochMilliseconds, r.entryId,
            ]
        )
    }

    func update(_ r: CreditReservation) throws {
        try db.run(
            "UPDATE credit_reservations SET status = ?, settled_at = ?, entry_id = ? WHERE id = ?",
            [r.status.rawValue, r.settledAt?.epochMilliseconds, r.entryId, r.id]
        )
    }

    // MARK: Listings

    private func whereClause(tenantId: String, filter: LedgerFilter) -> (String, SQLArguments) {
        var clauses = ["tenant_id = ?"]
        var arguments: SQLArguments = [tenantId]
        if let v = filter.userId {
            clauses.append("user_id = ?")
            arguments += [v]
        }
        if let v = filter.productId {
            clauses.append("product_id = ?")
            arguments += [v]
        }
        if let v = filter.creditType {
            clauses.append("credit_type = ?")
            arguments += [v]
        }
        if let v = filter.type {
            clauses.append("type = ?")
            arguments += [v.rawValue]
        }
        if let v = filter.status {
            clauses.append("status = ?")
            arguments += [v.rawValue]
        }
        if let v = filter.from {
            clauses.append("created_at >= ?")
            arguments += [v.epochMilliseconds]
        }
        if let v = filter.to {
            clauses.append("created_at < ?")
            arguments += [v.epochMilliseconds]
        }
        return (clauses.joined(separator: " AND "), arguments)
    }

    func entries(tenantId: String, filter: LedgerFilter, page: Page) throws -> (items: [LedgerEntry], total: Int) {
        let (clause, arguments) = whereClause(tenantId: tenantId, filter: filter)
        return try db.page(
            table: "credit_ledger",
            columns: Self.entryColumns,
            whereClause: clause,
            arguments: arguments,
            order: "created_at DESC, sequence",
            page: page,
            decode: Self.entry
        )
    }

    func export(tenantId: String, filter: LedgerFilter, limit: Int) throws -> [LedgerEntry] {
        let (clause, arguments) = whereClause(tenantId: tenantId, filter: filter)
        return try db.rows(
            "SELECT \(Self.entryColumns) FROM credit_ledger WHERE \(clause) ORDER BY created_at, sequence, id LIMIT ?",
            arguments + [limit]
        ).map(Self.entry)
    }

    func stats(tenantId: String, from: Date?, to: Date?) throws -> [CreditProductStats] {
        let (clause, arguments) = whereClause(tenantId: tenantId, filter: LedgerFilter(from: from, to: to))
        return try db.rows(
            """
            SELECT product_id,
                   SUM(CASE WHEN type = 'purchase' THEN 1 ELSE 0 END) AS purchases,
                   SUM(CASE WHEN type = 'purchase' THEN amount ELSE 0 END) AS granted,
                   SUM(CASE WHEN type = 'refund' THEN 1 ELSE 0 END) AS refunds,
                   SUM(CASE WHEN type = 'refund' THEN debt_change - amount ELSE 0 END) AS refunded
            FROM credit_ledger WHERE \(clause) AND product_id IS NOT NULL AND type IN ('purchase', 'refund')
            GROUP BY product_id ORDER BY product_id
            """,
            arguments
        ).map { row in
            CreditProductStats(
                productId: row["product_id"],
                purchases: row["purchases"],
                creditsGranted: row["granted"],
                refunds: row["refunds"],
                creditsRefunded: row["refunded"]
            )
        }
    }

    func totals(tenantId: String, after: (userId: String, creditType: String)?, limit: Int) throws -> [LedgerTotals] {
        let afterClause = after == nil ? "" : " AND (k.user_id > ? OR (k.user_id = ? AND k.credit_type > ?))"
        let afterArguments: SQLArguments = after.map { [$0.userId, $0.userId, $0.creditType] } ?? []
        return try db.rows(
            """
            SELECT a.user_id, a.credit_type,
                   COALESCE(b.balance, 0) AS balance, COALESCE(b.debt, 0) AS debt,
                   (SELECT COALESCE(SUM(l.amount), 0) FROM credit_ledger l
                    WHERE l.tenant_id = ? AND l.user_id = a.user_id AND l.credit_type = a.credit_type) AS ledger_amount,
                   (SELECT COALESCE(SUM(l.debt_change), 0) FROM credit_ledger l
                    WHERE l.tenant_id = ? AND l.user_id = a.user_id AND l.credit_type = a.credit_type) AS ledger_debt,
                   (SELECT COALESCE(SUM(t.remaining), 0) FROM credit_lots t
                    WHERE t.tenant_id = ? AND t.user_id = a.user_id AND t.credit_type = a.credit_type) AS lots_remaining,
                   (SELECT COUNT(*) FROM credit_lots t
                    WHERE t.tenant_id = ? AND t.user_id = a.user_id AND t.credit_type = a.credit_type
                      AND t.remaining <> t.amount - (SELECT COALESCE(SUM(u.amount), 0) FROM credit_lot_uses u WHERE u.lot_id = t.id)) AS inconsistent
            FROM (SELECT k.user_id, k.credit_type FROM (SELECT user_id, credit_type FROM credit_balances WHERE tenant_id = ?
                  UNION SELECT user_id, credit_type FROM credit_ledger WHERE tenant_id = ?) k
                  WHERE 1 = 1\(afterClause) ORDER BY k.user_id, k.credit_type LIMIT ?) a
            LEFT JOIN credit_balances b ON b.tenant_id = ? AND b.user_id = a.user_id AND b.credit_type = a.credit_type
            ORDER BY a.user_id, a.credit_type
            """,
            [tenantId, tenantId, tenantId, tenantId, tenantId, tenantId] + afterArguments + [limit, tenantId]
        ).map { row in
            LedgerTotals(
                userId: row["user_id"],
                creditType: row["credit_type"],
                balance: row["balance"],
                debt: row["debt"],
                ledgerAmount: row["ledger_amount"],
                ledgerDebt: row["ledger_debt"],
                lotsRemaining: row["lots_remaining"],
                inconsistentLots: row["inconsistent"]
            )
        }
    }
}

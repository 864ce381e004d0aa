import Domain
import Foundation

/// Subscriptions, memberships, cheat attempts, unlink archives and kept receipts (SQLite and PostgreSQL).
struct SQLSubscriptions: SubscriptionRepository {
    let db: any SQLExecutor

    static let columns = """
        tenant_id, original_transaction_id, environment, product_id, entitlement, tier, cycle, latest_transaction_id, purchased_at, expires_at, \
        original_purchased_at, auto_renew, auto_renew_product_id, in_billing_retry, grace_period_expires_at, expiration_intent, price_increase_status, \
        revoked_at, upgraded, ended, user_id, signed_at, created_at, updated_at, store, eligible_win_back_offer_ids, family_shared
        """

    static func decode(_ row: SQLRow) -> Subscription {
        Subscription(
            tenantId: row["tenant_id"],
            originalTransactionId: row["original_transaction_id"],
            environment: row["environment"],
            productId: row["product_id"],
            entitlement: row["entitlement"],
            tier: row["tier"],
            cycle: row["cycle"],
            latestTransactionId: row["latest_transaction_id"],
            purchasedAt: row.date("purchased_at"),
            expiresAt: row.optionalDate("expires_at"),
            originalPurchasedAt: row.optionalDate("original_purchased_at"),
            autoRenew: row["auto_renew"],
            autoRenewProductId: row["auto_renew_product_id"],
            inBillingRetry: row["in_billing_retry"],
            gracePeriodExpiresAt: row.optionalDate("grace_period_expires_at"),
            expirationIntent: row["expiration_intent"],
            priceIncreaseStatus: row["price_increase_status"],
            revokedAt: row.optionalDate("revoked_at"),
            upgraded: row["upgraded"],
            ended: row["ended"],
            userId: row["user_id"],
            signedAt: row.date("signed_at"),
            createdAt: row.date("created_at"),
            updatedAt: row.date("updated_at"),
            store: row["store"],
            eligibleWinBackOfferIds: offerIds(row["eligible_win_back_offer_ids"]),
            familyShared: row["family_shared"]
        )
    }

    /// Offer ids are stored as a JSON array (NULL when there are none).
    static func offerIds(_ text: String?) -> [String] {
        guard let text, let ids = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else { return [] }
        return ids
    }

    static func offerIdsText(_ ids: [String]) -> String? {
        guard !ids.isEmpty, let data = try? JSONEncoder().encode(ids) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    func subscription(tenantId: String, originalTransactionId: String, forUpdate: Bool) throws -> Subscription? {
        // Changes to one subscription take turns from here to their commit, whether its row exists yet or not.
        if forUpdate { try db.lock("subscription:\(tenantId):\(originalTransactionId)") }
        return try db.row(
            "SELECT \(Self.columns) FROM subscriptions WHERE tenant_id = ? AND original_transaction_id = ?",
            [tenantId, originalTransactionId]
        )
        .map(Self.decode)
    }

    func save(_ s: Subscription) throws {
        try db.run(
            """
            INSERT INTO subscriptions (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, original_transaction_id) DO UPDATE SET
                environment = excluded.environment, product_id = excluded.product_id, entitlement = excluded.entitlement, tier = excluded.tier,
                cycle = excluded.cycle, latest_transaction_id = excluded.latest_transaction_id, purchased_at = excluded.purchased_at,
                expires_at = excluded.expires_at, original_purchased_at = excluded.original_purchased_at, auto_renew = excluded.auto_renew,
                auto_renew_product_id = excluded.auto_renew_product_id, in_billing_retry = excluded.in_billing_retry,
                grace_period_expires_at = excluded.grace_period_expires_at, expiration_intent = excluded.expiration_intent,
                price_increase_status = excluded.price_increase_status, revoked_at = excluded.revoked_at, upgraded = excluded.upgraded,
                ended = excluded.ended, user_id = excluded.user_id, signed_at = excluded.signed_at, updated_at = excluded.updated_at,
                eligible_win_back_offer_ids = excluded.eligible_win_back_offer_ids, family_shared = excluded.family_shared
            """,
            [
                s.tenantId, s.originalTransactionId, s.environment, s.productId, s.entitlement, s.tier, s.cycle, s.latestTransactionId,
                s.purchasedAt.epochMilliseconds, s.expiresAt?.epochMilliseconds, s.originalPurchasedAt?.epochMilliseconds, s.autoRenew,
                s.autoRenewProductId, s.inBillingRetry, s.gracePeriodExpiresAt?.epochMilliseconds, s.expirationIntent, s.priceIncreaseStatus,
                s.revokedAt?.epochMilliseconds, s.upgraded, s.ended, s.userId, s.signedAt.epochMilliseconds, s.createdAt.epochMilliseconds,
                s.updatedAt.epochMilliseconds, s.store, Self.offerIdsText(s.eligibleWinBackOfferIds), s.familyShared,
            ]
        )
    }

    /// One user's subscriptions (a handful) in one statement: the total rides along on each row, so an
    /// entitlements read on PostgreSQL is one round trip shorter. (The tenant-wide listings keep two
    /// statements: over a large table, a window count would read every row where the index-only count
    /// and the top-N scan do not.)
    func owned(tenantId: String, userId: String, page: Page) throws -> (items: [Subscription], total: Int) {
        let rows = try db.rows(
            """
            SELECT \(Self.columns), COUNT(*) OVER () AS total_count FROM subscriptions WHERE tenant_id = ? AND user_id = ?
            ORDER BY purchased_at DESC, original_transaction_id DESC LIMIT ? OFFSET ?
            """,
            [tenantId, userId, page.limit, page.offset]
        )
        if let first = rows.first { return (rows.map(Self.decode), first["total_count"]) }
        // A page past the end has no row to carry the total.
        return (
            [], page.offset == 0 ? 0 : try db.count("SELECT COUNT(*) FROM subscriptions WHERE tenant_id = ? AND user_id = ?", [tenantId, userId])
        )
    }

    func subscriptions(tenantId: String, userId: String?, page: Page) throws -> (items: [Subscription], total: Int) {
        let filter = userId == nil ? "tenant_id = ?" : "tenant_id = ? AND user_id = ?"
        let arguments: SQLArguments = userId.map { [tenantId, $0] } ?? [tenantId]
        let total = try db.count("SELECT COUNT(*) FROM subscriptions WHERE \(filter)", arguments)
        let rows = try db.rows(
            """
            SELECT \(Self.columns) FROM subscriptions WHERE \(filter) ORDER BY purchased_at DESC, original_transaction_id DESC LIMIT ? OFFSET ?
            """,
            arguments + [page.limit, page.offset]
        )
        return (rows.map(Self.decode), total)
    }

    static let membershipColumns = "tenant_id, user_id, original_transaction_id, pay_method, tier, cycle, expires_at, auto_renew, updated_at"

    static func decodeMembership(_ row: SQLRow) -> Membership {
        Membership(
            tenantId: row["tenant_id"],
            userId: row["user_id"],
            originalTransactionId: row["original_transaction_id"],
            payMethod: row["pay_method"],
            tier: row["tier"],
            cycle: row["cycle"],
            expiresAt: row.optionalDate("expires_at"),
            autoRenew: row["auto_renew"],
            updatedAt: row.date("updated_at")
        )
    }

    func membership(tenantId: String, userId: String) throws -> Membership? {
        try db.row("SELECT \(Self.membershipColumns) FROM memberships WHERE tenant_id = ? AND user_id = ?", [tenantId, userId]).map(
            Self.decodeMembership
        )
    }

    func membership(tenantId: String, originalTransactionId: String) throws -> Membership? {
        try db.row(
            "SELECT \(Self.membershipColumns) FROM memberships WHERE tenant_id = ? AND original_transaction_id = ?",
            [tenantId, originalTransactionId]
        )
        .map(Self.decodeMembership)
    }

    func save(_ m: Membership) throws {
        try db.run(
            """
            INSERT INTO memberships (\(Self.membershipColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, user_id) DO UPDATE SET original_transaction_id = excluded.original_transaction_id, pay_method = excluded.pay_method,
                tier = excluded.tier, cycle = excluded.cycle, expires_at = excluded.expires_at, auto_renew = excluded.auto_renew, updated_at = excluded.updated_at
            """,
            [
                m.tenantId, m.userId, m.originalTransactionId, m.payMethod, m.tier, m.cycle, m.expiresAt?.epochMilliseconds, m.autoRenew,
                m.updatedAt.epochMilliseconds,
            ]
        )
    }

    func deleteMembership(tenantId: String, userId: String) throws {
        try db.run("DELETE FROM memberships WHERE tenant_id = ? AND user_id = ?", [tenantId, userId])
    }

    func insert(_ c: SubscriptionCheat) throws {
        try db.run(
            """
            INSERT INTO subscription_cheats (id, tenant_id, user_id, original_transaction_id, owner_user_id, source, at) VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [c.id, c.tenantId, c.userId, c.originalTransactionId, c.ownerUserId, c.source, c.at.epochMilliseconds]
        )
    }

    func cheats(tenantId: String, page: Page) throws -> (items: [SubscriptionCheat], total: Int) {
        try db.page(
            table: "subscription_cheats",
            columns: "id, tenant_id, user_id, original_transaction_id, owner_user_id, source, at",
            whereClause: "tenant_id = ?",
            arguments: [tenantId],
            order: "at",
            page: page
        ) { row in
            SubscriptionCheat(
                id: row["id"],
                tenantId: row["tenant_id"],
                userId: row["user_id"],
                originalTransactionId: row["original_transaction_id"],
                ownerUserId: row["owner_user_id"],
                source: row["source"],
                at: row.date("at")
            )
        }
    }

    func insert(_ a: UnlinkArchive) throws {
        try db.run(
            """
            INSERT INTO subscription_unlinks (id, tenant_id, user_id, original_transaction_id, actor, membership_snapshot, at) VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [a.id, a.tenantId, a.userId, a.originalTransactionId, a.actor, a.membershipSnapshot, a.at.epochMilliseconds]
        )
    }

    func unlinks(tenantId: String, page: Page) throws -> (items: [UnlinkArchive], total: Int) {
        try db.page(
            table: "subscription_unlinks",
            columns: "id, tenant_id, user_id, original_transaction_id, actor, membership_snapshot, at",
            whereClause: "tenant_id = ?",
            arguments: [tenantId],
            order: "at",
            page: page
        ) { row in
            UnlinkArchive(
                id: row["id"],
                tenantId: row["tenant_id"],
                userId: row["user_id"],
                originalTransactionId: row["original_transaction_id"],
                actor: row["actor"],
                membershipSnapshot: row["membership_snapshot"],
                at: row.date("at")
            )
        }
    }

    func saveReceipt(tenantId: String, originalTransactionId: String, environment: StoreEnvironment, receipt: String, at: Date) throws {
        try db.run(
            """
            INSERT INTO subscription_receipts (tenant_id, original_transaction_id, environment, receipt, updated_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, original_transaction_id) DO UPDATE SET environment = excluded.environment, receipt = excluded.receipt,
                updated_at = excluded.updated_at
            """,
            [tenantId, originalTransactionId, environment, receipt, at.epochMilliseconds]
        )
    }

    func receipt(tenantId: String, originalTransactionId: String) throws -> String? {
        try db.row(
            "SELECT receipt FROM subscription_receipts WHERE tenant_id = ? AND original_transaction_id = ?",
            [tenantId, originalTransactionId]
        )
        .map { $0["receipt"] }
    }
}

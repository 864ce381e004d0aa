import Domain
import Foundation

/// A user's holdings read together (``UserStateRepository``).
struct SQLUserState: UserStateRepository {
    let db: any SQLExecutor

    func entitlementSources(tenantId: String, userId: String, waitingTokens: [String]) throws -> EntitlementSources {
        let user: SQLArguments = [tenantId, userId]
        var parts = [
            SelectPart(
                tag: "owned",
                columns: SQLSubscriptions.columnNames,
                rest: "FROM subscriptions WHERE tenant_id = ? AND user_id = ?",
                order: "purchased_at DESC, original_transaction_id DESC",
                limit: Page.maximumLimit,
                arguments: user
            ),
            SelectPart(
                tag: "membership",
                columns: SQLSubscriptions.membershipColumnNames,
                rest: "FROM memberships WHERE tenant_id = ? AND user_id = ?",
                order: "user_id",
                arguments: user
            ),
            SelectPart(
                tag: "grants",
                columns: SQLGrants.columnNames,
                rest: "FROM entitlement_grants WHERE tenant_id = ? AND user_id = ?",
                order: "entitlement, purchased_at, id",
                arguments: user
            ),
        ]
        if let waiting = SQLPurchases.waiting(tenantId: tenantId, tokens: waitingTokens) { parts.append(waiting) }
        let rows = try db.select(parts)
        return EntitlementSources(
            waiting: try SQLPurchases.decodeWaiting(rows["waiting"] ?? []),
            owned: (rows["owned"] ?? []).map(SQLSubscriptions.decode),
            membership: rows["membership"]?.first.map(SQLSubscriptions.decodeMembership),
            grants: try (rows["grants"] ?? []).map(SQLGrants.decode)
        )
    }
}

extension SQLUserState {
    func creditSources(tenantId: String, userId: String, now: Date, waitingTokens: [String]) throws -> CreditSources {
        var parts = [
            SQLCredits.summaries(tenantId: tenantId, userId: userId, now: now),
            SelectPart(
                tag: "bonus",
                columns: ["user_id"],
                rest: "FROM credit_bonuses WHERE tenant_id = ? AND user_id = ?",
                order: "user_id",
                limit: 1,
                arguments: [tenantId, userId]
            ),
        ]
        if let waiting = SQLPurchases.waiting(tenantId: tenantId, tokens: waitingTokens) { parts.append(waiting) }
        let rows = try db.select(parts)
        return CreditSources(
            waiting: try SQLPurchases.decodeWaiting(rows["waiting"] ?? []),
            bonusGranted: !(rows["bonus"] ?? []).isEmpty,
            summaries: (rows["summaries"] ?? []).map(SQLCredits.summary)
        )
    }
}

extension SQLSubscriptions {
    static let columnNames = names(columns)
    static let membershipColumnNames = names(membershipColumns)
}

extension SQLGrants {
    static let columnNames = names(columns)
}

/// The names of a comma-separated column list.
private func names(_ list: String) -> [String] {
    list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}

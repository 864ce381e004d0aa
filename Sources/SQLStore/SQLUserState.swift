import Domain
import Foundation

/// A user's holdings read together (``UserStateRepository``).
struct SQLUserState: UserStateRepository {
    let db: any SQLExecutor

    func entitlementSources(tenantId: String, userId: String, waitingTokens: [String]) throws -> EntitlementSources {
        let user: SQLArguments = [tenantId, userId]
        var parts = [
            SelectPart(tag: "owned", columns: SQLSubscriptions.columnNames, rest: "FROM subscriptions WHERE tenant_id = ? AND user_id = ?",
                       order: "purchased_at DESC, original_transaction_id DESC", limit: Page.maximumLimit, arguments: user),
            SelectPart(tag: "membership", columns: SQLSubscriptions.membershipColumnNames, rest: "FROM memberships WHERE tenant_id = ? AND user_id = ?",
                       order: "user_id", arguments: user),
            SelectPart(tag: "grants", columns: SQLGrants.columnNames, rest: "FROM entitlement_grants WHERE tenant_id = ? AND user_id = ?",
                       order: "entitlement, purchased_at, id", arguments: user),
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

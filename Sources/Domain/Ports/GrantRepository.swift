import Foundation

/// Entitlement grants that have no record of their own elsewhere (unlocks). One row per (tenant,
/// source, reference).
public protocol GrantRepository {
    /// A user's grants of one entitlement (every source stored here), locked when `forUpdate`.
    func grants(tenantId: String, userId: String, entitlement: String, forUpdate: Bool) throws -> [EntitlementGrant]
    /// Every grant of a user, any entitlement.
    func grants(tenantId: String, userId: String) throws -> [EntitlementGrant]
    /// The grant a source's reference names.
    func grant(tenantId: String, source: GrantSource, reference: String) throws -> EntitlementGrant?
    /// Inserts or replaces the row of `grant.id`.
    func save(_ grant: EntitlementGrant, now: Date) throws
}

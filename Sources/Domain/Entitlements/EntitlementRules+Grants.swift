import Foundation

/// An entitlement as a user holds it now, with every grant that gives it.
public struct HeldEntitlement: Hashable, Sendable {
    public var entitlement: String
    /// Whether some grant gives it now.
    public var active: Bool
    /// Until when the live grants give it (nil while active: for ever). For an inactive entitlement:
    /// when its last grant ended.
    public var expiresAt: Date?
    /// The grants of this entitlement, live ones first.
    public var grants: [EntitlementGrant]

    public init(entitlement: String, active: Bool, expiresAt: Date?, grants: [EntitlementGrant]) {
        self.entitlement = entitlement
        self.active = active
        self.expiresAt = expiresAt
        self.grants = grants
    }
}

public enum GrantRules {
    /// The entitlements a user's grants give at `now`, by name. A grant that ends takes only itself:
    /// the entitlement stays while another grant is live.
    public static func entitlements(_ grants: [EntitlementGrant], now: Date) -> [HeldEntitlement] {
        let byName = Dictionary(grouping: grants, by: \.entitlement)
        return byName.keys.sorted().map { name in
            let grants = byName[name] ?? []
            let live = grants.filter { $0.isLive(at: now) }
            let lifetime = live.contains { $0.until == nil }
            // Live grants of passes are contiguous (see `chain`): the latest end is when access ends.
            let pending = grants.filter { $0.state == .active && $0.from > now }
            let ends = (live + pending).compactMap(\.until)
            let expiresAt: Date? = live.isEmpty ? grants.filter { $0.state == .active }.compactMap(\.until).max() : (lifetime ? nil : ends.max())
            let ordered = live + grants.filter { !$0.isLive(at: now) }
            return HeldEntitlement(entitlement: name, active: !live.isEmpty, expiresAt: expiresAt, grants: ordered)
        }
    }

    /// Lays a user's passes of one entitlement end to end in purchase order: each starts when it was
    /// bought or when the previous one ends, whichever is later, and lasts its days. Ended grants are
    /// left out of the chain (and returned unchanged), so a refund shortens access by exactly its days.
    public static func chain(_ passes: [EntitlementGrant]) -> [EntitlementGrant] {
        var end: Date?
        return passes.sorted { ($0.purchasedAt, $0.id) < ($1.purchasedAt, $1.id) }.map { grant in
            guard grant.state == .active, let days = grant.durationDays else { return grant }
            var grant = grant
            grant.from = max(grant.purchasedAt, end ?? grant.purchasedAt)
            let until = grant.from.addingTimeInterval(TimeInterval(days) * 86_400)
            grant.until = until
            end = until
            return grant
        }
    }
}

import Foundation

/// What a user holds, from several tables in one statement: the reads every app launch makes.
public protocol UserStateRepository {
    /// Everything `GET /api/entitlements` derives its answer from, in **one statement** (so it can
    /// run in ``Store/readStatement(_:)``): the transactions waiting for one of `waitingTokens` (as
    /// ``PurchaseRepository/waitingTransactions(tenantId:tokens:)``), the user's subscriptions newest
    /// first (at most `Page.maximumLimit`), the membership, and every stored grant.
    func entitlementSources(tenantId: String, userId: String, waitingTokens: [String]) throws -> EntitlementSources
}

/// The rows behind a user's entitlements, read together.
public struct EntitlementSources: Sendable {
    public var waiting: [ProvenTransaction]
    public var owned: [Subscription]
    public var membership: Membership?
    public var grants: [EntitlementGrant]

    public init(waiting: [ProvenTransaction], owned: [Subscription], membership: Membership?, grants: [EntitlementGrant]) {
        self.waiting = waiting
        self.owned = owned
        self.membership = membership
        self.grants = grants
    }
}

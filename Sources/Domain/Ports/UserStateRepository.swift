import Foundation

/// What a user holds, from several tables in one snapshot: the reads every app launch makes.
public protocol UserStateRepository {
    /// Everything `GET /api/entitlements` derives its answer from, in **one snapshot**: one statement
    /// where ``Store/readStatement(_:)`` runs without a transaction (PostgreSQL), a statement per
    /// table where it is a snapshot read anyway (SQLite). The transactions waiting for one of `waitingTokens` (as
    /// ``PurchaseRepository/waitingTransactions(tenantId:tokens:)``), the user's subscriptions newest
    /// first (at most `Page.maximumLimit`), the membership, and every stored grant.
    func entitlementSources(tenantId: String, userId: String, waitingTokens: [String]) throws -> EntitlementSources
    /// What `GET /api/credits` answers from, read the same way: the waiting transactions (as
    /// above), whether the signup bonus was granted, and each credit type's summary at `now` (as
    /// ``CreditRepository/summaries(tenantId:userId:now:)``).
    func creditSources(tenantId: String, userId: String, now: Date, waitingTokens: [String]) throws -> CreditSources
}

/// The rows behind a user's credit balances, read together.
public struct CreditSources: Sendable {
    public var waiting: [ProvenTransaction]
    public var bonusGranted: Bool
    public var summaries: [CreditSummary]

    public init(waiting: [ProvenTransaction], bonusGranted: Bool, summaries: [CreditSummary]) {
        self.waiting = waiting
        self.bonusGranted = bonusGranted
        self.summaries = summaries
    }
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

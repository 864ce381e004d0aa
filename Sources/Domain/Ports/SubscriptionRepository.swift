import Foundation

/// Subscriptions (one row per tenant and originalTransactionId), the memberships accounts use,
/// cheat attempts, unlink archives and, where a tenant keeps them, the latest receipts.
public protocol SubscriptionRepository {
    /// A subscription, locked for the rest of the unit of work when `forUpdate`.
    func subscription(tenantId: String, originalTransactionId: String, forUpdate: Bool) throws -> Subscription?
    /// Inserts or replaces the row of `subscription.originalTransactionId`.
    func save(_ subscription: Subscription) throws
    /// The subscriptions an account owns, newest period first.
    func owned(tenantId: String, userId: String, page: Page) throws -> (items: [Subscription], total: Int)
    /// Every subscription of the tenant (admin listing), optionally of one state's raw flags by owner.
    func subscriptions(tenantId: String, userId: String?, page: Page) throws -> (items: [Subscription], total: Int)

    /// The membership an account uses.
    func membership(tenantId: String, userId: String) throws -> Membership?
    /// The membership made from an Apple subscription, whoever holds it.
    func membership(tenantId: String, originalTransactionId: String) throws -> Membership?
    /// Inserts or replaces the account's membership (one per account; one account per Apple subscription).
    func save(_ membership: Membership) throws
    func deleteMembership(tenantId: String, userId: String) throws

    func insert(_ cheat: SubscriptionCheat) throws
    func cheats(tenantId: String, page: Page) throws -> (items: [SubscriptionCheat], total: Int)
    func insert(_ archive: UnlinkArchive) throws
    func unlinks(tenantId: String, page: Page) throws -> (items: [UnlinkArchive], total: Int)

    /// The latest app receipt of a subscription, for tenants that keep receipts.
    func saveReceipt(tenantId: String, originalTransactionId: String, environment: StoreEnvironment, receipt: String, at: Date) throws
    func receipt(tenantId: String, originalTransactionId: String) throws -> String?
}

import Foundation

/// Purchases, replay attempts, and what Apple reported of transactions nobody had claimed.
public protocol PurchaseRepository {
    /// The purchase of a transaction, whoever claimed it (the exactly-once key), locked for the
    /// rest of the unit of work when `forUpdate`.
    func purchase(store: String, environment: String, transactionId: String, forUpdate: Bool) throws -> Purchase?
    /// A new purchase; a second row for the same (store, environment, transaction id) violates a unique index.
    func insert(_ purchase: Purchase, proofHash: String) throws
    /// Writes a purchase's status and outcome code.
    func update(_ purchase: Purchase) throws
    func insert(_ replay: ReplayAttempt, store: String) throws

    /// Whether Apple reported the transaction refunded or revoked while it was unclaimed.
    func isRevoked(tenantId: String, store: String, environment: String, transactionId: String) throws -> Bool
    func rememberRevoked(tenantId: String, store: String, environment: String, transactionId: String, notification: IncomingNotification, at: Date) throws
    func forgetRevoked(tenantId: String, store: String, environment: String, transactionId: String) throws
    /// Keeps a transaction Apple reported before any user claimed it (once per transaction).
    func keepUnclaimed(_ transaction: UnclaimedTransaction, tenantId: String, store: String, notificationUUID: String) throws

    func purchases(tenantId: String, page: Page) throws -> (items: [Purchase], total: Int)
    func replays(tenantId: String, page: Page) throws -> (items: [ReplayAttempt], total: Int)
    func unclaimed(tenantId: String, page: Page) throws -> (items: [UnclaimedTransaction], total: Int)
}

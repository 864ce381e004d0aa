import Foundation

/// Purchases, replay attempts, and what Apple reported of transactions nobody had claimed.
public protocol PurchaseRepository {
    /// The purchase of a transaction, whoever claimed it (the exactly-once key), locked for the
    /// rest of the unit of work when `forUpdate`.
    func purchase(store: StoreName, environment: StoreEnvironment, transactionId: String, forUpdate: Bool) throws -> Purchase?
    /// A new purchase; a second row for the same (store, environment, transaction id) violates a unique index.
    func insert(_ purchase: Purchase, proofHash: String) throws
    /// Writes a purchase's status and outcome code.
    func update(_ purchase: Purchase) throws
    func insert(_ replay: ReplayAttempt, store: StoreName) throws

    /// Whether Apple reported the transaction refunded or revoked while it was unclaimed.
    func isRevoked(tenantId: String, store: StoreName, environment: StoreEnvironment, transactionId: String) throws -> Bool
    func rememberRevoked(
        tenantId: String,
        store: StoreName,
        environment: StoreEnvironment,
        transactionId: String,
        notification: IncomingNotification,
        at: Date
    ) throws
    func forgetRevoked(tenantId: String, store: StoreName, environment: StoreEnvironment, transactionId: String) throws
    /// Keeps a transaction Apple reported before any user claimed it (once per transaction).
    func keepUnclaimed(_ transaction: UnclaimedTransaction, tenantId: String, store: StoreName, notificationUUID: String) throws

    /// Keeps a paid transaction that could not be applied: a new row, or for the same transaction
    /// while it is open, one more attempt with the latest claimant and reason. Returns the row as stored.
    func keepUnapplied(_ payment: UnappliedPayment) throws -> UnappliedPayment
    func unappliedPayment(id: Int64, tenantId: String, forUpdate: Bool) throws -> UnappliedPayment?
    /// Writes an operator's decision: status, when, by whom, the purchase and the note.
    func update(_ payment: UnappliedPayment) throws
    /// The tenant's unapplied payments, most recently seen first. A row whose transaction has since
    /// been applied by a claim reads as `applied` with that purchase.
    func unappliedPayments(tenantId: String, status: UnappliedPayment.Status?, page: Page) throws -> (items: [UnappliedPayment], total: Int)

    /// Remembers that these appAccountTokens name `userId` (lowercase; a token seen before keeps its first user).
    func rememberTokens(_ tokens: [String], userId: String, tenantId: String, at: Date) throws
    /// The user an appAccountToken names, if one was seen with it.
    func user(token: String, tenantId: String) throws -> String?
    /// What the unclaimed transactions of the tenant proved whose token is one of `tokens` (the
    /// tokens a user id derives), that no purchase applied and no unapplied payment keeps yet
    /// (oldest first, at most 20).
    func waitingTransactions(tenantId: String, tokens: [String]) throws -> [ProvenTransaction]

    /// The tenant's purchases matching `filter`, newest first.
    func purchases(tenantId: String, filter: PurchaseFilter, page: Page) throws -> (items: [Purchase], total: Int)
    /// Every purchase matching `filter`, oldest first, up to `limit` (the CSV export).
    func exportPurchases(tenantId: String, filter: PurchaseFilter, limit: Int) throws -> [Purchase]
    func replays(tenantId: String, page: Page) throws -> (items: [ReplayAttempt], total: Int)
    func unclaimed(tenantId: String, page: Page) throws -> (items: [UnclaimedTransaction], total: Int)
}

/// Filters of the operators' purchase listing and its CSV export (all optional, combined with AND;
/// `from` inclusive and `to` exclusive, on the time Berth recorded the purchase).
public struct PurchaseFilter: Hashable, Sendable {
    public var userId: String?
    public var productId: String?
    public var status: PurchaseStatus?
    public var environment: StoreEnvironment?
    public var from: Date?
    public var to: Date?

    public init(
        userId: String? = nil,
        productId: String? = nil,
        status: PurchaseStatus? = nil,
        environment: StoreEnvironment? = nil,
        from: Date? = nil,
        to: Date? = nil
    ) {
        self.userId = userId
        self.productId = productId
        self.status = status
        self.environment = environment
        self.from = from
        self.to = to
    }
}

extension PurchaseRepository {
    public func purchases(tenantId: String, page: Page) throws -> (items: [Purchase], total: Int) {
        try purchases(tenantId: tenantId, filter: PurchaseFilter(), page: page)
    }
}

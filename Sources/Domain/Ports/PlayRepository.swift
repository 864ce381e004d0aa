import Foundation

/// Google Play's own rows: the acknowledgements Berth owes and
/// where each package's voided-purchases sweep got to.
public protocol PlayRepository {
    /// Records what is owed for a purchase, once per token and action: false (and nothing written)
    /// when it is already recorded.
    func enqueue(_ acknowledgement: PlayAcknowledgement) throws -> Bool
    /// Leases up to `limit` pending acknowledgements due at `now` to `owner` until `leaseUntil`
    /// (rows leased to another owner and not expired are skipped; on PostgreSQL, rows another
    /// instance is claiming too).
    func claimDue(now: Date, limit: Int, owner: String, leaseUntil: Date) throws -> [PlayAcknowledgement]
    /// Records an attempt and releases the lease: `status` done or gone ends it; pending waits until `nextAttemptAt`.
    func record(_ acknowledgement: PlayAcknowledgement, status: PlayAcknowledgement.Status, error: String?, nextAttemptAt: Date, now: Date) throws
    func acknowledgements(tenantId: String, purchaseToken: String) throws -> [PlayAcknowledgement]
    /// Pending acknowledgements per tenant, and how many of them were purchased before `alertBefore`.
    func pendingSummary(alertBefore: Date) throws -> [(tenantId: String, pending: Int, overdue: Int, oldest: Date?)]
    /// The newest voided time the package's sweep has seen, and when it last ran.
    func sweep(tenantId: String, packageName: String) throws -> (voidedSince: Date, sweptAt: Date)?
    func setSweep(tenantId: String, packageName: String, voidedSince: Date, sweptAt: Date) throws

    /// Remembers who sent a one-time purchase that waited for payment. The first sender keeps it: a
    /// later sending by the same user replaces what it is for, one by another user changes nothing
    /// (V4). Returns the user the claim names after the call.
    func rememberPending(_ claim: PlayPendingClaim) throws -> String
    /// The claim waiting for `purchaseToken`, if any.
    func pendingClaim(tenantId: String, purchaseToken: String) throws -> PlayPendingClaim?
    func forgetPending(tenantId: String, purchaseToken: String) throws
}

/// A Google Play one-time purchase its app sent while Google still waited for the payment.
public struct PlayPendingClaim: Hashable, Sendable {
    public var tenantId: String
    public var purchaseToken: String
    public var userId: String
    /// The catalog's product id.
    public var productId: String
    public var bookingId: Int64?
    public var packageName: String
    public var createdAt: Date

    public init(tenantId: String, purchaseToken: String, userId: String, productId: String, bookingId: Int64?, packageName: String, createdAt: Date) {
        self.tenantId = tenantId
        self.purchaseToken = purchaseToken
        self.userId = userId
        self.productId = productId
        self.bookingId = bookingId
        self.packageName = packageName
        self.createdAt = createdAt
    }
}

import Foundation

/// What Berth did with a purchase.
public enum PurchaseStatus: String, Codable, Hashable, Sendable {
    /// Its effect was applied (booking confirmed, credits added).
    case applied
    /// Money was received but could not be honoured; someone must refund it.
    case needsRefund = "needs_refund"
    /// Apple refunded or revoked it.
    case refunded
}

/// A verified App Store transaction that a user claims for a target (a booking, credits).
public struct PurchaseClaim: Hashable, Sendable {
    public var tenantId: String
    public var userId: String
    /// What the purchase pays for.
    public var target: PurchaseTarget
    /// The store that sold it.
    public var store: StoreName
    public var environment: StoreEnvironment
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var purchasedAt: Date
    /// Hex SHA-256 of the signed data (never the data itself).
    public var proofHash: String
    /// What Apple signed as paid: price in milliunits of `currency`, and quantity (when the proof says).
    public var priceMilliunits: Int64?
    public var currency: String?
    public var quantity: Int?
    /// The proof itself shows a refund or revocation (revocationDate, cancellation_date).
    public var revoked: Bool
    /// How the transaction was proven: `jws`, `receipt` or `lookup` (recorded with refusals).
    public var proofKind: String
    /// The store's order number, where the proof names one (Google Play).
    public var orderId: String?

    public init(
        tenantId: String,
        userId: String,
        target: PurchaseTarget,
        store: StoreName = .appStore,
        environment: StoreEnvironment,
        transactionId: String,
        originalTransactionId: String,
        productId: String,
        purchasedAt: Date,
        proofHash: String,
        priceMilliunits: Int64? = nil,
        currency: String? = nil,
        quantity: Int? = nil,
        revoked: Bool = false,
        proofKind: String = "jws"
    ) {
        self.priceMilliunits = priceMilliunits
        self.currency = currency
        self.quantity = quantity
        self.revoked = revoked
        self.proofKind = proofKind
        self.tenantId = tenantId
        self.userId = userId
        self.target = target
        self.store = store
        self.environment = environment
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.purchasedAt = purchasedAt
        self.proofHash = proofHash
    }

    /// The claim of a proven transaction by a user for a target.
    public init(_ proven: ProvenTransaction, tenantId: String, userId: String, target: PurchaseTarget, now: Date) {
        self.init(
            tenantId: tenantId,
            userId: userId,
            target: target,
            store: proven.storeName,
            environment: proven.environment,
            transactionId: proven.transactionId,
            originalTransactionId: proven.originalTransactionId,
            productId: proven.productId,
            purchasedAt: proven.purchasedAt ?? now,
            proofHash: proven.proofHash,
            priceMilliunits: proven.priceMilliunits,
            currency: proven.currency,
            quantity: proven.quantity,
            revoked: proven.revoked,
            proofKind: proven.kind.rawValue
        )
        orderId = proven.orderId
    }
}

/// A recorded purchase (one per store, environment and transaction id).
public struct Purchase: Codable, Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var userId: String
    /// What it paid for (stored as kind and reference); nil only for rows recorded without one.
    public var target: PurchaseTarget?
    public var store: StoreName
    public var environment: StoreEnvironment
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var status: PurchaseStatus
    /// Why a purchase needs a refund (`slot_unavailable`, `booking_already_paid`, …).
    public var outcomeCode: String?
    public var purchasedAt: Date
    public var createdAt: Date
    /// What Apple signed as paid (nil where the proof does not say: receipts carry no price).
    public var priceMilliunits: Int64?
    public var currency: String?
    public var quantity: Int?
    /// For a credits purchase: how many credits it granted (its effect; the target names the type).
    public var credits: Int64?
    /// The store's order number, where the proof named one (Google Play's `GPA.…`).
    public var orderId: String?
    /// When the money went back (the store's refund notice, a card refund); nil while not refunded.
    public var refundedAt: Date?

    public init(
        id: Int64,
        tenantId: String,
        userId: String,
        target: PurchaseTarget?,
        store: StoreName,
        environment: StoreEnvironment,
        transactionId: String,
        originalTransactionId: String,
        productId: String,
        status: PurchaseStatus,
        outcomeCode: String?,
        purchasedAt: Date,
        createdAt: Date,
        priceMilliunits: Int64? = nil,
        currency: String? = nil,
        quantity: Int? = nil,
        credits: Int64? = nil
    ) {
        self.target = target
        self.credits = credits
        self.priceMilliunits = priceMilliunits
        self.currency = currency
        self.quantity = quantity
        self.id = id
        self.tenantId = tenantId
        self.userId = userId
        self.store = store
        self.environment = environment
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.status = status
        self.outcomeCode = outcomeCode
        self.purchasedAt = purchasedAt
        self.createdAt = createdAt
    }
}

extension Purchase {
    /// Marks the purchase refunded at `at` (the first time only: a repeated notice keeps the day the
    /// money went back).
    public mutating func refund(at: Date) {
        status = .refunded
        refundedAt = refundedAt ?? at
    }

    /// A refund the store took back (REFUND_REVERSED): the purchase counts as paid again.
    public mutating func reinstate() {
        status = .applied
        refundedAt = nil
    }

    /// The booking it paid for, if it paid for one.
    public var bookingId: Int64? { target?.bookingId }
    /// The credit type it granted, for a credits purchase.
    public var creditType: String? { target?.creditType }
    /// The kind of product it paid for.
    public var kind: ProductKind? { target?.kind }

    /// A new purchase row for a claim.
    public init(_ claim: PurchaseClaim, id: Int64, status: PurchaseStatus, outcomeCode: String?, now: Date) {
        self.init(
            id: id,
            tenantId: claim.tenantId,
            userId: claim.userId,
            target: claim.target,
            store: claim.store,
            environment: claim.environment,
            transactionId: claim.transactionId,
            originalTransactionId: claim.originalTransactionId,
            productId: claim.productId,
            status: status,
            outcomeCode: outcomeCode,
            purchasedAt: claim.purchasedAt,
            createdAt: now,
            priceMilliunits: claim.priceMilliunits,
            currency: claim.currency,
            quantity: claim.quantity
        )
        orderId = claim.orderId
    }
}

/// A refused claim of a transaction that was already used elsewhere.
public struct ReplayAttempt: Codable, Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var userId: String
    /// What the refused claim was for (stored as kind and reference).
    public var target: PurchaseTarget?
    public var environment: StoreEnvironment
    public var transactionId: String
    public var existingPurchaseId: Int64
    public var reason: String
    public var proofHash: String
    public var at: Date

    public init(
        id: Int64,
        tenantId: String,
        userId: String,
        target: PurchaseTarget?,
        environment: StoreEnvironment,
        transactionId: String,
        existingPurchaseId: Int64,
        reason: String,
        proofHash: String,
        at: Date
    ) {
        self.id = id
        self.tenantId = tenantId
        self.userId = userId
        self.target = target
        self.environment = environment
        self.transactionId = transactionId
        self.existingPurchaseId = existingPurchaseId
        self.reason = reason
        self.proofHash = proofHash
        self.at = at
    }
}

/// One line of the permanent audit log.
public struct AuditEntry: Codable, Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    /// `user:<id>`, `admin:<key id>`, `server:<key id>`, `system`.
    public var actor: String
    public var action: String
    public var bookingId: Int64?
    public var purchaseId: Int64?
    public var detail: String?
    public var at: Date

    public init(id: Int64, tenantId: String, actor: String, action: String, bookingId: Int64?, purchaseId: Int64?, detail: String?, at: Date) {
        self.id = id
        self.tenantId = tenantId
        self.actor = actor
        self.action = action
        self.bookingId = bookingId
        self.purchaseId = purchaseId
        self.detail = detail
        self.at = at
    }
}

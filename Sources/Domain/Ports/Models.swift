import Foundation

/// A booking to insert once its slot is known to be free.
public struct NewBooking: Hashable, Sendable {
    public var tenantId: String
    public var userId: String
    public var quote: BookingQuote
    public var holdExpiresAt: Date
    public var now: Date
    /// `user:<id>` or `server:<key id>`: whose holds it counts against.
    public var createdVia: String

    public init(tenantId: String, userId: String, quote: BookingQuote, holdExpiresAt: Date, now: Date, createdVia: String? = nil) {
        self.createdVia = createdVia ?? "user:\(userId)"
        self.tenantId = tenantId
        self.userId = userId
        self.quote = quote
        self.holdExpiresAt = holdExpiresAt
        self.now = now
    }
}

/// Filters for admin listings.
public struct BookingFilter: Hashable, Sendable {
    public var status: BookingStatus?
    public var resourceId: String?
    public var userId: String?
    public var from: Date?
    public var to: Date?
    /// Set: the listing is in trip order as of this instant, the trips not over yet first (soonest
    /// first), then the past ones (latest first). Nil: the most recently made first.
    public var upcomingFirst: Date?

    public init(status: BookingStatus? = nil, resourceId: String? = nil, userId: String? = nil, from: Date? = nil, to: Date? = nil) {
        self.status = status
        self.resourceId = resourceId
        self.userId = userId
        self.from = from
        self.to = to
    }
}

/// A page of a listing.
public struct Page: Hashable, Sendable {
    public static let maximumLimit = 200
    /// Listings page by offset up to here; further back, narrow the listing with its filters.
    public static let maximumOffset = 10_000
    public var limit: Int
    public var offset: Int

    public init(limit: Int = 50, offset: Int = 0) {
        self.limit = min(max(limit, 1), Self.maximumLimit)
        self.offset = min(max(offset, 0), Self.maximumOffset)
    }
}

/// One answer of `POST /api/verify-receipt`, kept without the receipt (its SHA-256 only).
public struct ReceiptCheck: Hashable, Sendable {
    public var tenantId: String
    public var userId: String?
    public var receiptSHA256: String
    /// `verified`, or the refusal code.
    public var outcome: String
    public var isPremium: Bool
    public var productId: String?
    public var expiresAt: Date?
    public var at: Date

    public init(
        tenantId: String,
        userId: String?,
        receiptSHA256: String,
        outcome: String,
        isPremium: Bool,
        productId: String?,
        expiresAt: Date?,
        at: Date
    ) {
        self.tenantId = tenantId
        self.userId = userId
        self.receiptSHA256 = receiptSHA256
        self.outcome = outcome
        self.isPremium = isPremium
        self.productId = productId
        self.expiresAt = expiresAt
        self.at = at
    }
}

/// A stored notification, as admins list it.
public struct StoredNotification: Hashable, Sendable {
    public var uuid: String
    public var type: String
    public var subtype: String?
    public var environment: StoreEnvironment
    public var transactionId: String?
    public var outcome: String
    public var payloadHash: String
    public var signedAt: Date
    public var receivedAt: Date

    public init(
        uuid: String,
        type: String,
        subtype: String?,
        environment: StoreEnvironment,
        transactionId: String?,
        outcome: String,
        payloadHash: String,
        signedAt: Date,
        receivedAt: Date
    ) {
        self.uuid = uuid
        self.type = type
        self.subtype = subtype
        self.environment = environment
        self.transactionId = transactionId
        self.outcome = outcome
        self.payloadHash = payloadHash
        self.signedAt = signedAt
        self.receivedAt = receivedAt
    }
}

/// A transaction Apple reported that no user had claimed when it arrived.
public struct UnclaimedTransaction: Hashable, Sendable {
    public var environment: StoreEnvironment
    public var transactionId: String
    public var productId: String
    public var purchasedAt: Date
    public var receivedAt: Date
    /// The purchase that claimed it later, if any.
    public var claimedByPurchaseId: Int64?
    public var originalTransactionId: String?
    /// The transaction's appAccountToken (lowercase), which may name its user.
    public var appAccountToken: String?
    /// What its signed transaction proved, so that it can be claimed without the app.
    public var proven: ProvenTransaction?

    public init(
        environment: StoreEnvironment,
        transactionId: String,
        productId: String,
        purchasedAt: Date,
        receivedAt: Date,
        claimedByPurchaseId: Int64?,
        originalTransactionId: String? = nil,
        appAccountToken: String? = nil,
        proven: ProvenTransaction? = nil
    ) {
        self.appAccountToken = appAccountToken
        self.proven = proven
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.transactionId = transactionId
        self.productId = productId
        self.purchasedAt = purchasedAt
        self.receivedAt = receivedAt
        self.claimedByPurchaseId = claimedByPurchaseId
    }
}

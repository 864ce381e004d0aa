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

/// The result of applying a purchase claim.
public struct PurchaseOutcome: Hashable, Sendable {
    public var decision: PurchaseDecision
    public var purchase: Purchase
    public var booking: Booking

    public init(decision: PurchaseDecision, purchase: Purchase, booking: Booking) {
        self.decision = decision
        self.purchase = purchase
        self.booking = booking
    }
}

/// Filters for admin listings.
public struct BookingFilter: Hashable, Sendable {
    public var status: BookingStatus?
    public var resourceId: String?
    public var userId: String?
    public var from: Date?
    public var to: Date?

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

/// Who holds an API key.
public enum APIKeyRole: String, Codable, Hashable, Sendable {
    /// A tenant's own backend, acting for a user named in `X-User-Id`.
    case server
    /// The tenant's booking administration.
    case admin
}

/// A stored API key (only its hash is stored).
public struct APIKey: Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var role: APIKeyRole
    public var createdAt: Date

    public init(id: Int64, tenantId: String, role: APIKeyRole, createdAt: Date) {
        self.id = id
        self.tenantId = tenantId
        self.role = role
        self.createdAt = createdAt
    }
}

/// Persistence of bookings, purchases and their logs. Implementations apply each method atomically.
public protocol BookingStore: Sendable {
    /// Inserts a booking if `admit` accepts its load (occupancy of overlapping slots, active holds of
    /// the user and of its creator at `draft.now`); the reads, the check and the insert are one
    /// transaction. Rethrows what `admit` throws.
    func createBooking(_ draft: NewBooking, admit: @escaping @Sendable (BookingLoad) throws -> Void) async throws -> Booking

    func booking(id: Int64, tenantId: String) async throws -> Booking?
    func bookings(tenantId: String, filter: BookingFilter, page: Page) async throws -> (items: [Booking], total: Int)

    /// Reads the context, asks `decide`, and applies the decision (purchase row, booking change,
    /// replay row, audit entry) in one transaction.
    func applyPurchase(
        _ claim: PurchaseClaim, resource: Resource?, now: Date,
        decide: @escaping @Sendable (PurchaseContext) -> PurchaseDecision
    ) async throws -> PurchaseOutcome

    /// Moves a booking to `status` if `allowed` accepts its current state (and, for confirmation, the
    /// occupancy of its slot by other bookings), writing an audit entry; one transaction.
    func changeBookingStatus(
        id: Int64, tenantId: String, to status: BookingStatus, actor: String, reason: String?, now: Date,
        allowed: @escaping @Sendable (Booking, Occupancy) throws -> Void
    ) async throws -> Booking

    func purchases(tenantId: String, page: Page) async throws -> (items: [Purchase], total: Int)
    func replays(tenantId: String, page: Page) async throws -> (items: [ReplayAttempt], total: Int)
    func audit(tenantId: String, page: Page) async throws -> (items: [AuditEntry], total: Int)
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

    public init(tenantId: String, userId: String?, receiptSHA256: String, outcome: String, isPremium: Bool, productId: String?, expiresAt: Date?, at: Date) {
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

/// Persistence of receipt checks.
public protocol ReceiptCheckStore: Sendable {
    func record(_ check: ReceiptCheck) async throws
    func receiptChecks(tenantId: String, receiptSHA256: String) async throws -> [ReceiptCheck]
}

/// Persistence of API keys.
public protocol APIKeyStore: Sendable {
    func createKey(tenantId: String, role: APIKeyRole, hash: String, now: Date) async throws -> APIKey
    func key(hash: String) async throws -> APIKey?
}

/// A stored notification, as admins list it.
public struct StoredNotification: Hashable, Sendable {
    public var uuid: String
    public var type: String
    public var subtype: String?
    public var environment: String
    public var transactionId: String?
    public var outcome: String
    public var payloadHash: String
    public var signedAt: Date
    public var receivedAt: Date

    public init(uuid: String, type: String, subtype: String?, environment: String, transactionId: String?, outcome: String, payloadHash: String, signedAt: Date, receivedAt: Date) {
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

/// Persistence of App Store Server Notifications and their effects.
public protocol NotificationStore: Sendable {
    /// Records the notification and applies the effect `decide` chooses, in one transaction. A uuid
    /// seen before changes nothing and returns the outcome stored then, with `duplicate` true.
    func applyNotification(
        _ notification: IncomingNotification, resources: [Resource], now: Date,
        decide: @escaping @Sendable (IncomingNotification, Purchase?, Booking?, Bool) -> NotificationEffect
    ) async throws -> (outcome: String, duplicate: Bool)

    func notifications(tenantId: String, page: Page) async throws -> (items: [StoredNotification], total: Int)

    /// Transactions Apple reported before any user claimed them, with the purchase that claimed them since.
    func unclaimedTransactions(tenantId: String, page: Page) async throws -> (items: [UnclaimedTransaction], total: Int)

    /// The purchase of a transaction and its booking, for answering Apple about it.
    func purchase(tenantId: String, environment: String, transactionId: String) async throws -> (Purchase, Booking?)?
}

/// A transaction Apple reported that no user had claimed when it arrived.
public struct UnclaimedTransaction: Hashable, Sendable {
    public var environment: String
    public var transactionId: String
    public var productId: String
    public var purchasedAt: Date
    public var receivedAt: Date
    /// The purchase that claimed it later, if any.
    public var claimedByPurchaseId: Int64?

    public init(environment: String, transactionId: String, productId: String, purchasedAt: Date, receivedAt: Date, claimedByPurchaseId: Int64?) {
        self.environment = environment
        self.transactionId = transactionId
        self.productId = productId
        self.purchasedAt = purchasedAt
        self.receivedAt = receivedAt
        self.claimedByPurchaseId = claimedByPurchaseId
    }
}

import Foundation

/// What Berth owes Google for one Play purchase it applied: an acknowledgement (subscriptions,
/// unlocks) or a consumption (consumables: credit packs, bookings), which Google requires within
/// three days or it refunds the purchase. Written in the unit of work that applied the purchase;
/// done by ``PlayJobs`` (a background job on every instance, one lease per row).
public struct PlayAcknowledgement: Hashable, Sendable {
    public enum Action: String, Codable, Hashable, Sendable {
        case acknowledgeProduct = "acknowledge_product"
        case consume
        case acknowledgeSubscription = "acknowledge_subscription"
    }

    public enum Status: String, Codable, Hashable, Sendable {
        case pending
        /// Google took it (or already had it).
        case done
        /// Google cannot take it any more (the purchase was voided or expired): nothing is owed.
        case gone
    }

    public var id: Int64
    public var tenantId: String
    public var packageName: String
    public var googleProductId: String
    public var purchaseToken: String
    public var action: Action
    public var purchaseId: Int64?
    public var status: Status
    public var attempts: Int
    public var lastError: String?
    public var nextAttemptAt: Date
    public var purchasedAt: Date
    public var createdAt: Date
    public var doneAt: Date?

    public init(
        id: Int64,
        tenantId: String,
        packageName: String,
        googleProductId: String,
        purchaseToken: String,
        action: Action,
        purchaseId: Int64?,
        status: Status = .pending,
        attempts: Int = 0,
        lastError: String? = nil,
        nextAttemptAt: Date,
        purchasedAt: Date,
        createdAt: Date,
        doneAt: Date? = nil
    ) {
        self.id = id
        self.tenantId = tenantId
        self.packageName = packageName
        self.googleProductId = googleProductId
        self.purchaseToken = purchaseToken
        self.action = action
        self.purchaseId = purchaseId
        self.status = status
        self.attempts = attempts
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
        self.purchasedAt = purchasedAt
        self.createdAt = createdAt
        self.doneAt = doneAt
    }

    /// When to try again after `attempts` failures (``JobRetry/playAcknowledgements``).
    public static func retryDelay(afterAttempts attempts: Int) -> TimeInterval { JobRetry.playAcknowledgements.delay(afterAttempts: attempts) }
}

import Foundation

/// Where an auto-renewable subscription stands at a moment (computed from its record and the clock).
public enum SubscriptionState: String, Codable, Hashable, Sendable, CaseIterable {
    /// Paid up: its current period has not ended.
    case active
    /// Renewal failed, Apple retries, and the app's billing grace period still grants access.
    case gracePeriod = "grace_period"
    /// Renewal failed and Apple keeps retrying; no access.
    case billingRetry = "billing_retry"
    case expired
    /// Refunded or revoked (Family Sharing removed): no access, whatever the dates say.
    case revoked
    /// Replaced by a higher level of the same group; the newer product carries on.
    case upgraded

    /// Whether this state grants the entitlement.
    public var entitles: Bool { self == .active || self == .gracePeriod }
}

/// One auto-renewable subscription as Berth knows it, keyed by Apple's originalTransactionId. Its
/// fields are facts from verified sources; its state follows the clock (``state(at:)``).
public struct Subscription: Hashable, Sendable {
    public var tenantId: String
    public var originalTransactionId: String
    /// `Production` or `Sandbox`.
    public var environment: StoreEnvironment
    /// The product of the latest transaction.
    public var productId: String
    /// The entitlement, tier and cycle of that product in the catalog.
    public var entitlement: String
    public var tier: String?
    public var cycle: String?
    public var latestTransactionId: String
    /// Start and end of the latest period.
    public var purchasedAt: Date
    public var expiresAt: Date?
    public var originalPurchasedAt: Date?
    /// Whether it renews at the end of the period (nil until a source says), and into which product.
    public var autoRenew: Bool?
    public var autoRenewProductId: String?
    public var inBillingRetry: Bool
    public var gracePeriodExpiresAt: Date?
    /// Apple's expirationIntent (1 cancelled, 2 billing error, 3 price increase declined, 4 unavailable, 5 other).
    public var expirationIntent: Int?
    /// Apple's priceIncreaseStatus (0 not yet answered, 1 accepted), from PRICE_INCREASE.
    public var priceIncreaseStatus: Int?
    public var revokedAt: Date?
    public var upgraded: Bool
    /// Apple said it expired (EXPIRED), whatever the clock says.
    public var ended: Bool
    /// The account that owns it (nil while nobody has claimed it).
    public var userId: String?
    /// The newest signed date of the facts applied: older facts never move it backwards.
    public var signedAt: Date
    public var createdAt: Date
    public var updatedAt: Date
    /// The store that sells it: `app_store` (keyed by Apple's originalTransactionId) or `google_play` (by its first purchase token).
    public var store: StoreName
    /// The win-back offers Apple's latest renewal info says the customer may redeem (App Store; empty otherwise).
    public var eligibleWinBackOfferIds: [String] = []
    /// Whether the owner has it through Family Sharing (Apple's inAppOwnershipType FAMILY_SHARED), not by paying.
    public var familyShared: Bool = false

    public init(
        tenantId: String,
        originalTransactionId: String,
        environment: StoreEnvironment,
        productId: String,
        entitlement: String,
        tier: String? = nil,
        cycle: String? = nil,
        latestTransactionId: String,
        purchasedAt: Date,
        expiresAt: Date?,
        originalPurchasedAt: Date? = nil,
        autoRenew: Bool? = nil,
        autoRenewProductId: String? = nil,
        inBillingRetry: Bool = false,
        gracePeriodExpiresAt: Date? = nil,
        expirationIntent: Int? = nil,
        priceIncreaseStatus: Int? = nil,
        revokedAt: Date? = nil,
        upgraded: Bool = false,
        ended: Bool = false,
        userId: String? = nil,
        signedAt: Date,
        createdAt: Date,
        updatedAt: Date,
        store: StoreName = .appStore,
        eligibleWinBackOfferIds: [String] = [],
        familyShared: Bool = false
    ) {
        self.store = store
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.familyShared = familyShared
        self.tenantId = tenantId
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.productId = productId
        self.entitlement = entitlement
        self.tier = tier
        self.cycle = cycle
        self.latestTransactionId = latestTransactionId
        self.purchasedAt = purchasedAt
        self.expiresAt = expiresAt
        self.originalPurchasedAt = originalPurchasedAt
        self.autoRenew = autoRenew
        self.autoRenewProductId = autoRenewProductId
        self.inBillingRetry = inBillingRetry
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.expirationIntent = expirationIntent
        self.priceIncreaseStatus = priceIncreaseStatus
        self.revokedAt = revokedAt
        self.upgraded = upgraded
        self.ended = ended
        self.userId = userId
        self.signedAt = signedAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The state at `now`: revoked and upgraded first, then the period, the grace period and billing retry.
    public func state(at now: Date) -> SubscriptionState {
        if revokedAt != nil { return .revoked }
        if upgraded { return .upgraded }
        if !ended, let expiresAt, expiresAt > now { return .active }
        if !ended, inBillingRetry, let grace = gracePeriodExpiresAt, grace > now { return .gracePeriod }
        if !ended, inBillingRetry { return .billingRetry }
        return .expired
    }

    /// Until when it grants access as things stand: the grace period's end while in grace, else the period's end.
    public func accessUntil(at now: Date) -> Date? {
        state(at: now) == .gracePeriod ? gracePeriodExpiresAt : expiresAt
    }
}

/// What one verified source says about a subscription at one signed moment: a StoreKit 2
/// transaction and/or renewal info, a receipt's latest entry, an App Store Server API answer or a
/// notification. Nil fields say nothing.
public struct SubscriptionFacts: Codable, Hashable, Sendable {
    public struct TransactionFacts: Codable, Hashable, Sendable {
        public var transactionId: String
        public var productId: String
        public var purchasedAt: Date
        public var expiresAt: Date?
        public var originalPurchasedAt: Date?
        public var revokedAt: Date?
        public var upgraded: Bool
        /// Apple's inAppOwnershipType is FAMILY_SHARED (nil: the source does not say).
        public var familyShared: Bool?
        /// What the period costs, where the store says it (Google's recurring price), in milliunits.
        public var priceMilliunits: Int64?
        public var currency: String?

        public init(
            transactionId: String,
            productId: String,
            purchasedAt: Date,
            expiresAt: Date?,
            originalPurchasedAt: Date? = nil,
            revokedAt: Date? = nil,
            upgraded: Bool = false,
            familyShared: Bool? = nil
        ) {
            self.familyShared = familyShared
            self.transactionId = transactionId
            self.productId = productId
            self.purchasedAt = purchasedAt
            self.expiresAt = expiresAt
            self.originalPurchasedAt = originalPurchasedAt
            self.revokedAt = revokedAt
            self.upgraded = upgraded
        }
    }

    public struct RenewalFacts: Codable, Hashable, Sendable {
        public var autoRenew: Bool?
        public var autoRenewProductId: String?
        public var inBillingRetry: Bool?
        public var gracePeriodExpiresAt: Date?
        public var expirationIntent: Int?
        public var priceIncreaseStatus: Int?
        /// Apple's eligibleWinBackOfferIds (an empty list when renewal info carries none; nil: the source does not say).
        public var eligibleWinBackOfferIds: [String]?

        public init(
            autoRenew: Bool? = nil,
            autoRenewProductId: String? = nil,
            inBillingRetry: Bool? = nil,
            gracePeriodExpiresAt: Date? = nil,
            expirationIntent: Int? = nil,
            priceIncreaseStatus: Int? = nil,
            eligibleWinBackOfferIds: [String]? = nil
        ) {
            self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
            self.autoRenew = autoRenew
            self.autoRenewProductId = autoRenewProductId
            self.inBillingRetry = inBillingRetry
            self.gracePeriodExpiresAt = gracePeriodExpiresAt
            self.expirationIntent = expirationIntent
            self.priceIncreaseStatus = priceIncreaseStatus
        }
    }

    public var originalTransactionId: String
    public var environment: StoreEnvironment
    /// When the source signed (or, for receipts without one, produced) these facts.
    public var signedAt: Date
    public var transaction: TransactionFacts?
    public var renewal: RenewalFacts?
    /// What the facts came from: `jws`, `receipt`, `verify_receipt`, `server_api`, `notification:DID_RENEW`, …
    public var source: String
    /// The notification that brought them, when one did (its type decides the extra effects).
    public var notificationType: NotificationType?
    public var notificationSubtype: String?
    /// The store the facts come from (nil: the App Store).
    public var store: StoreName?
    /// The subscription (its originalTransactionId) this one replaces: Google Play's
    /// `linkedPurchaseToken` of an upgrade, downgrade or resubscription. The replaced one ends.
    public var replaces: String?

    public init(
        originalTransactionId: String,
        environment: StoreEnvironment,
        signedAt: Date,
        transaction: TransactionFacts?,
        renewal: RenewalFacts?,
        source: String,
        notificationType: NotificationType? = nil,
        notificationSubtype: String? = nil,
        store: StoreName? = nil
    ) {
        self.store = store
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.signedAt = signedAt
        self.transaction = transaction
        self.renewal = renewal
        self.source = source
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
    }
}

/// A product's place in the catalog, for a subscription record.
public struct SubscriptionProductInfo: Hashable, Sendable {
    public var entitlement: String
    public var tier: String?
    public var cycle: String?

    public init(entitlement: String, tier: String?, cycle: String?) {
        self.entitlement = entitlement
        self.tier = tier
        self.cycle = cycle
    }
}

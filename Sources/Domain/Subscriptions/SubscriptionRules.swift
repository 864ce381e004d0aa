import Foundation

extension NotificationType {
    public static let didChangeRenewalStatus = NotificationType(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    public static let didChangeRenewalPref = NotificationType(rawValue: "DID_CHANGE_RENEWAL_PREF")
    public static let didFailToRenew = NotificationType(rawValue: "DID_FAIL_TO_RENEW")
    public static let gracePeriodExpired = NotificationType(rawValue: "GRACE_PERIOD_EXPIRED")
    public static let expired = NotificationType(rawValue: "EXPIRED")
    public static let renewalExtended = NotificationType(rawValue: "RENEWAL_EXTENDED")
    public static let priceIncrease = NotificationType(rawValue: "PRICE_INCREASE")

    /// The notification types that speak of an auto-renewable subscription.
    public static let subscriptionTypes: Set<NotificationType> = [
        .subscribed, .didRenew, .didChangeRenewalStatus, .didChangeRenewalPref, .didFailToRenew, .gracePeriodExpired, .expired,
        .refund, .revoke, .refundReversed, .renewalExtended, .offerRedeemed, .priceIncrease,
    ]
}

/// How a set of facts changed a subscription.
public struct SubscriptionUpdate: Hashable, Sendable {
    /// The record to save (unchanged when the facts were stale).
    public var subscription: Subscription
    /// The facts were older than what the record already holds: nothing moved.
    public var stale: Bool
    /// Something a client can see changed (state, dates, renewal, product, owner).
    public var changed: Bool
}

/// Applying facts from verified sources to a subscription record. Pure.
public enum SubscriptionRules {
    /// Merges `facts` into `existing` (or starts a record). Facts signed before the newest ones
    /// already applied never move the record backwards; among transactions, the latest period wins.
    public static func apply(
        _ facts: SubscriptionFacts,
        to existing: Subscription?,
        tenantId: String,
        product: (String) -> SubscriptionProductInfo?,
        now: Date
    ) -> SubscriptionUpdate? {
        guard var record = existing ?? start(facts, tenantId: tenantId, product: product, now: now) else { return nil }
        if let existing, facts.signedAt < existing.signedAt {
            return SubscriptionUpdate(subscription: existing, stale: true, changed: false)
        }
        if let transaction = facts.transaction, existing == nil || isCurrentOrNewer(transaction, than: record) {
            let newPeriod = transaction.transactionId != record.latestTransactionId
            record.latestTransactionId = transaction.transactionId
            record.productId = transaction.productId
            if let info = product(transaction.productId) {
                (record.entitlement, record.tier, record.cycle) = (info.entitlement, info.tier, info.cycle)
            }
            record.purchasedAt = transaction.purchasedAt
            record.expiresAt = transaction.expiresAt
            if let original = transaction.originalPurchasedAt { record.originalPurchasedAt = original }
            record.revokedAt = transaction.revokedAt
            record.upgraded = transaction.upgraded
            if let shared = transaction.familyShared { record.familyShared = shared }
            if newPeriod, let expiresAt = transaction.expiresAt, expiresAt > facts.signedAt {
                // A new paid period ends any failed renewal and Apple's "expired".
                record.ended = false
                record.inBillingRetry = false
                record.gracePeriodExpiresAt = nil
            }
        }
        if let renewal = facts.renewal {
            if let autoRenew = renewal.autoRenew { record.autoRenew = autoRenew }
            if let product = renewal.autoRenewProductId { record.autoRenewProductId = product }
            if let retry = renewal.inBillingRetry {
                record.inBillingRetry = retry
                record.gracePeriodExpiresAt = retry ? renewal.gracePeriodExpiresAt : nil
            } else if let grace = renewal.gracePeriodExpiresAt {
                record.gracePeriodExpiresAt = grace
            }
            if let intent = renewal.expirationIntent { record.expirationIntent = intent }
            if let status = renewal.priceIncreaseStatus { record.priceIncreaseStatus = status }
            if let offers = renewal.eligibleWinBackOfferIds { record.eligibleWinBackOfferIds = offers }
        }
        switch facts.notificationType {
        case .expired?:
            record.ended = true
            record.inBillingRetry = false
            record.gracePeriodExpiresAt = nil
        case .gracePeriodExpired?:
            // The grace period is over; Apple may still retry billing.
            if let grace = record.gracePeriodExpiresAt, grace > facts.signedAt { record.gracePeriodExpiresAt = facts.signedAt }
        case .refund?, .revoke?:
            if record.revokedAt == nil, facts.transaction?.transactionId == record.latestTransactionId {
                record.revokedAt = facts.transaction?.revokedAt ?? facts.signedAt
            }
        case .didChangeRenewalStatus?:
            if record.autoRenew == nil, let subtype = facts.notificationSubtype {
                record.autoRenew = subtype == "AUTO_RENEW_ENABLED"
            }
        default:
            break
        }
        record.signedAt = max(record.signedAt, facts.signedAt)
        let changed = existing.map { visible($0, now: now) != visible(record, now: now) } ?? true
        if changed { record.updatedAt = now }
        return SubscriptionUpdate(subscription: record, stale: false, changed: changed)
    }

    /// A new record from facts that carry a transaction (renewal info alone cannot start one).
    static func start(_ facts: SubscriptionFacts, tenantId: String, product: (String) -> SubscriptionProductInfo?, now: Date) -> Subscription? {
        guard let transaction = facts.transaction else { return nil }
        let info = product(transaction.productId)
        return Subscription(
            tenantId: tenantId,
            originalTransactionId: facts.originalTransactionId,
            environment: facts.environment,
            productId: transaction.productId,
            entitlement: info?.entitlement ?? "premium",
            tier: info?.tier,
            cycle: info?.cycle,
            latestTransactionId: transaction.transactionId,
            purchasedAt: transaction.purchasedAt,
            expiresAt: transaction.expiresAt,
            originalPurchasedAt: transaction.originalPurchasedAt,
            signedAt: facts.signedAt,
            createdAt: now,
            updatedAt: now,
            store: facts.store ?? .appStore
        )
    }

    /// The same transaction again, or a later period (by purchase date, then expiry).
    static func isCurrentOrNewer(_ transaction: SubscriptionFacts.TransactionFacts, than record: Subscription) -> Bool {
        if transaction.transactionId == record.latestTransactionId { return true }
        if transaction.purchasedAt != record.purchasedAt { return transaction.purchasedAt > record.purchasedAt }
        return (transaction.expiresAt ?? .distantPast) > (record.expiresAt ?? .distantPast)
    }

    /// What subscribers and webhooks see of a record.
    struct Visible: Hashable {
        var state: SubscriptionState
        var productId: String
        var expiresAt: Date?
        var autoRenew: Bool?
        var autoRenewProductId: String?
        var grace: Date?
        var userId: String?
        var transaction: String
        var winBackOffers: [String]
        var familyShared: Bool
    }

    static func visible(_ s: Subscription, now: Date) -> Visible {
        Visible(
            state: s.state(at: now),
            productId: s.productId,
            expiresAt: s.expiresAt,
            autoRenew: s.autoRenew,
            autoRenewProductId: s.autoRenewProductId,
            grace: s.gracePeriodExpiresAt,
            userId: s.userId,
            transaction: s.latestTransactionId,
            winBackOffers: s.eligibleWinBackOfferIds,
            familyShared: s.familyShared
        )
    }

    /// The `subscription.updated` event of a record.
    public static func event(_ s: Subscription, now: Date, reason: String) -> WebhookEvent {
        var data = [
            "originalTransactionId": s.originalTransactionId, "productId": s.productId, "entitlement": s.entitlement,
            "state": s.state(at: now).rawValue, "environment": s.environment.rawValue, "transactionId": s.latestTransactionId, "reason": reason,
            "store": s.store.rawValue,
        ]
        if let userId = s.userId { data["userId"] = userId }
        if let expiresAt = s.expiresAt { data["expiresAt"] = BerthJSON.timestamp(expiresAt) }
        if let autoRenew = s.autoRenew { data["autoRenew"] = String(autoRenew) }
        return WebhookEvent(type: .subscriptionUpdated, data: data, subject: "subscription:\(s.originalTransactionId)")
    }
}

extension WebhookEventType {
    public static let subscriptionUpdated = WebhookEventType(rawValue: "subscription.updated")
}

import Foundation

/// A Pub/Sub push delivery (`{message: {data, messageId, attributes}, subscription}`).
public struct PubSubPush: Codable, Hashable, Sendable {
    public struct Message: Codable, Hashable, Sendable {
        /// Base64 of the published bytes (here a ``DeveloperNotification``).
        public var data: String?
        public var messageId: String?
        /// Pub/Sub also sends the id in snake case.
        public var message_id: String?
        public var publishTime: String?
        public var attributes: [String: String]?

        public init(data: String?, messageId: String?, publishTime: String?) {
            self.data = data
            self.messageId = messageId
            self.message_id = messageId
            self.publishTime = publishTime
        }

        public var id: String? { messageId ?? message_id }
    }

    public var message: Message?
    public var subscription: String?

    public init(message: Message, subscription: String) {
        self.message = message
        self.subscription = subscription
    }
}

/// Google Play's real-time developer notification: what changed, never the whole state (the Play
/// Developer API has that).
public struct DeveloperNotification: Codable, Hashable, Sendable {
    public var version: String?
    public var packageName: String?
    public var eventTimeMillis: String?
    public var subscriptionNotification: SubscriptionNotification?
    public var oneTimeProductNotification: OneTimeProductNotification?
    public var voidedPurchaseNotification: VoidedPurchaseNotification?
    public var testNotification: TestNotification?

    public struct SubscriptionNotification: Codable, Hashable, Sendable {
        public var version: String?
        public var notificationType: Int?
        public var purchaseToken: String?
        public var subscriptionId: String?
        public init(notificationType: Int, purchaseToken: String, subscriptionId: String?) {
            self.version = "1.0"
            self.notificationType = notificationType
            self.purchaseToken = purchaseToken
            self.subscriptionId = subscriptionId
        }
    }

    public struct OneTimeProductNotification: Codable, Hashable, Sendable {
        public var version: String?
        /// 1 purchased, 2 canceled (a pending purchase that never completed).
        public var notificationType: Int?
        public var purchaseToken: String?
        public var sku: String?
        public init(notificationType: Int, purchaseToken: String, sku: String) {
            self.version = "1.0"
            self.notificationType = notificationType
            self.purchaseToken = purchaseToken
            self.sku = sku
        }
    }

    public struct VoidedPurchaseNotification: Codable, Hashable, Sendable {
        public var purchaseToken: String?
        public var orderId: String?
        /// 1 subscription, 2 one-time product.
        public var productType: Int?
        /// 1 full refund, 2 quantity-based partial refund.
        public var refundType: Int?
        public init(purchaseToken: String, orderId: String?, productType: Int, refundType: Int = 1) {
            self.purchaseToken = purchaseToken
            self.orderId = orderId
            self.productType = productType
            self.refundType = refundType
        }
    }

    public struct TestNotification: Codable, Hashable, Sendable {
        public var version: String?
        public init() { version = "1.0" }
    }

    public init(packageName: String, eventTime: Date) {
        self.version = "1.0"
        self.packageName = packageName
        self.eventTimeMillis = String(Int64((eventTime.timeIntervalSince1970 * 1000).rounded()))
    }

    /// The purchase token it is about (nil for a test notification).
    public var purchaseToken: String? {
        subscriptionNotification?.purchaseToken ?? oneTimeProductNotification?.purchaseToken ?? voidedPurchaseNotification?.purchaseToken
    }

    /// The subscription notification types by name (Google's numbering).
    public static let subscriptionTypes: [String: Int] = [
        "SUBSCRIPTION_RECOVERED": 1, "SUBSCRIPTION_RENEWED": 2, "SUBSCRIPTION_CANCELED": 3, "SUBSCRIPTION_PURCHASED": 4, "SUBSCRIPTION_ON_HOLD": 5,
        "SUBSCRIPTION_IN_GRACE_PERIOD": 6, "SUBSCRIPTION_RESTARTED": 7, "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED": 8, "SUBSCRIPTION_DEFERRED": 9,
        "SUBSCRIPTION_PAUSED": 10, "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED": 11, "SUBSCRIPTION_REVOKED": 12, "SUBSCRIPTION_EXPIRED": 13,
        "SUBSCRIPTION_PENDING_PURCHASE_CANCELED": 20,
    ]
    public static let oneTimeProductTypes: [String: Int] = ["ONE_TIME_PRODUCT_PURCHASED": 1, "ONE_TIME_PRODUCT_CANCELED": 2]
}

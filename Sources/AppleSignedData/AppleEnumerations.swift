// Apple's documented enumerations. Each is an open set: a value Apple adds later decodes,
// round-trips and compares like any other instead of failing the whole payload.

/// The server environment of a payload (`environment`, `receiptType`).
public struct AppStoreEnvironment: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    public static let production = Self(rawValue: "Production")
    public static let sandbox = Self(rawValue: "Sandbox")
    public static let xcode = Self(rawValue: "Xcode")
    public static let localTesting = Self(rawValue: "LocalTesting")
    /// Data signed outside Apple's production PKI (StoreKit testing in Xcode, local testing).
    public var isLocalTesting: Bool { self == .xcode || self == .localTesting }
}

/// `type` of a transaction.
public struct TransactionType: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let autoRenewableSubscription = Self(rawValue: "Auto-Renewable Subscription")
    public static let nonConsumable = Self(rawValue: "Non-Consumable")
    public static let consumable = Self(rawValue: "Consumable")
    public static let nonRenewingSubscription = Self(rawValue: "Non-Renewing Subscription")
}

/// `inAppOwnershipType` of a transaction.
public struct InAppOwnershipType: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let familyShared = Self(rawValue: "FAMILY_SHARED")
    public static let purchased = Self(rawValue: "PURCHASED")
}

/// `transactionReason` of a transaction.
public struct TransactionReason: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let purchase = Self(rawValue: "PURCHASE")
    public static let renewal = Self(rawValue: "RENEWAL")
}

/// `offerType` of a transaction or renewal info.
public struct OfferType: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let introductoryOffer = Self(rawValue: 1)
    public static let promotionalOffer = Self(rawValue: 2)
    public static let offerCode = Self(rawValue: 3)
    public static let winBackOffer = Self(rawValue: 4)
}

/// `offerDiscountType` of a transaction or renewal info.
public struct OfferDiscountType: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let freeTrial = Self(rawValue: "FREE_TRIAL")
    public static let payAsYouGo = Self(rawValue: "PAY_AS_YOU_GO")
    public static let payUpFront = Self(rawValue: "PAY_UP_FRONT")
    public static let oneTime = Self(rawValue: "ONE_TIME")
}

/// `revocationReason` of a transaction.
public struct RevocationReason: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let other = Self(rawValue: 0)
    public static let appIssue = Self(rawValue: 1)
}

/// `revocationType` of a transaction.
public struct RevocationType: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let refundFull = Self(rawValue: "REFUND_FULL")
    public static let refundProrated = Self(rawValue: "REFUND_PRORATED")
    public static let familyRevoke = Self(rawValue: "FAMILY_REVOKE")
}

/// `expirationIntent` of renewal info.
public struct ExpirationIntent: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let customerCancelled = Self(rawValue: 1)
    public static let billingError = Self(rawValue: 2)
    public static let customerDidNotConsentToPriceIncrease = Self(rawValue: 3)
    public static let productNotAvailable = Self(rawValue: 4)
    public static let other = Self(rawValue: 5)
}

/// `autoRenewStatus` of renewal info.
public struct AutoRenewStatus: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let off = Self(rawValue: 0)
    public static let on = Self(rawValue: 1)
}

/// `priceIncreaseStatus` of renewal info.
public struct PriceIncreaseStatus: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let customerHasNotResponded = Self(rawValue: 0)
    public static let customerConsentedOrWasNotifiedWithoutNeedingConsent = Self(rawValue: 1)
}

/// `status` of a subscription in a notification's data.
public struct SubscriptionStatus: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let active = Self(rawValue: 1)
    public static let expired = Self(rawValue: 2)
    public static let billingRetry = Self(rawValue: 3)
    public static let billingGracePeriod = Self(rawValue: 4)
    public static let revoked = Self(rawValue: 5)
}

/// `notificationType` of an App Store Server Notification v2.
public struct NotificationType: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    public static let subscribed = Self(rawValue: "SUBSCRIBED")
    public static let didChangeRenewalPref = Self(rawValue: "DID_CHANGE_RENEWAL_PREF")
    public static let didChangeRenewalStatus = Self(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    public static let offerRedeemed = Self(rawValue: "OFFER_REDEEMED")
    public static let didRenew = Self(rawValue: "DID_RENEW")
    public static let expired = Self(rawValue: "EXPIRED")
    public static let didFailToRenew = Self(rawValue: "DID_FAIL_TO_RENEW")
    public static let gracePeriodExpired = Self(rawValue: "GRACE_PERIOD_EXPIRED")
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    public static let refund = Self(rawValue: "REFUND")
    public static let refundDeclined = Self(rawValue: "REFUND_DECLINED")
    public static let refundReversed = Self(rawValue: "REFUND_REVERSED")
    public static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")
    public static let renewalExtended = Self(rawValue: "RENEWAL_EXTENDED")
    public static let renewalExtension = Self(rawValue: "RENEWAL_EXTENSION")
    public static let revoke = Self(rawValue: "REVOKE")
    public static let test = Self(rawValue: "TEST")
    public static let externalPurchaseToken = Self(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")
    public static let metadataUpdate = Self(rawValue: "METADATA_UPDATE")
    public static let migration = Self(rawValue: "MIGRATION")
    public static let priceChange = Self(rawValue: "PRICE_CHANGE")
}

/// `subtype` of an App Store Server Notification v2.
public struct NotificationSubtype: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    public static let initialBuy = Self(rawValue: "INITIAL_BUY")
    public static let resubscribe = Self(rawValue: "RESUBSCRIBE")
    public static let downgrade = Self(rawValue: "DOWNGRADE")
    public static let upgrade = Self(rawValue: "UPGRADE")
    public static let autoRenewEnabled = Self(rawValue: "AUTO_RENEW_ENABLED")
    public static let autoRenewDisabled = Self(rawValue: "AUTO_RENEW_DISABLED")
    public static let voluntary = Self(rawValue: "VOLUNTARY")
    public static let billingRetry = Self(rawValue: "BILLING_RETRY")
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    public static let gracePeriod = Self(rawValue: "GRACE_PERIOD")
    public static let pending = Self(rawValue: "PENDING")
    public static let accepted = Self(rawValue: "ACCEPTED")
    public static let billingRecovery = Self(rawValue: "BILLING_RECOVERY")
    public static let productNotForSale = Self(rawValue: "PRODUCT_NOT_FOR_SALE")
    public static let summary = Self(rawValue: "SUMMARY")
    public static let failure = Self(rawValue: "FAILURE")
    public static let unreported = Self(rawValue: "UNREPORTED")
}

/// `consumptionRequestReason` in a CONSUMPTION_REQUEST notification's data.
public struct ConsumptionRequestReason: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let unintendedPurchase = Self(rawValue: "UNINTENDED_PURCHASE")
    public static let fulfillmentIssue = Self(rawValue: "FULFILLMENT_ISSUE")
    public static let unsatisfiedWithPurchase = Self(rawValue: "UNSATISFIED_WITH_PURCHASE")
    public static let legal = Self(rawValue: "LEGAL")
    public static let other = Self(rawValue: "OTHER")
}

/// `originalPlatform` of an app transaction.
public struct PurchasePlatform: RawRepresentable, Codable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let iOS = Self(rawValue: "iOS")
    public static let macOS = Self(rawValue: "MacOS")
    public static let tvOS = Self(rawValue: "TvOS")
    public static let visionOS = Self(rawValue: "VisionOS")
}

import Foundation

/// The body Apple POSTs to a server notification URL: `{"signedPayload": "<JWS>"}`.
public struct NotificationRequestBody: Codable, Hashable, Sendable {
    public var signedPayload: String
    public init(signedPayload: String) { self.signedPayload = signedPayload }
}

/// The decoded `signedPayload` of an App Store Server Notification v2
/// (Apple: `ResponseBodyV2DecodedPayload`). Exactly one of `data`, `summary` and
/// `externalPurchaseToken` is present.
public struct NotificationPayload: Codable, Hashable, Sendable {
    public var notificationType: NotificationType?
    public var subtype: NotificationSubtype?
    public var notificationUUID: String?
    public var data: NotificationData?
    public var version: String?
    public var signedDate: AppleTimestamp?
    public var summary: NotificationSummary?
    public var externalPurchaseToken: ExternalPurchaseToken?

    public init(
        notificationType: NotificationType? = nil,
        subtype: NotificationSubtype? = nil,
        notificationUUID: String? = nil,
        data: NotificationData? = nil,
        version: String? = nil,
        signedDate: AppleTimestamp? = nil,
        summary: NotificationSummary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.data = data
        self.version = version
        self.signedDate = signedDate
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
    }
}

/// The app and its (still signed) transaction and renewal info in a notification.
public struct NotificationData: Codable, Hashable, Sendable {
    public var environment: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var bundleVersion: String?
    /// A nested JWS; verified by ``SignedDataVerifier/verifyNotification(_:expecting:)``.
    public var signedTransactionInfo: String?
    /// A nested JWS; verified by ``SignedDataVerifier/verifyNotification(_:expecting:)``.
    public var signedRenewalInfo: String?
    public var status: SubscriptionStatus?
    public var consumptionRequestReason: ConsumptionRequestReason?

    public init(
        environment: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        bundleVersion: String? = nil,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil,
        status: SubscriptionStatus? = nil,
        consumptionRequestReason: ConsumptionRequestReason? = nil
    ) {
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.bundleVersion = bundleVersion
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
    }
}

/// The summary of a renewal-date-extension request (`RENEWAL_EXTENSION` / `SUMMARY`).
public struct NotificationSummary: Codable, Hashable, Sendable {
    public var environment: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var productId: String?
    public var requestIdentifier: String?
    public var storefrontCountryCodes: [String]?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    public init(
        environment: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        requestIdentifier: String? = nil,
        storefrontCountryCodes: [String]? = nil,
        succeededCount: Int64? = nil,
        failedCount: Int64? = nil
    ) {
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.productId = productId
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// The external purchase token of an `EXTERNAL_PURCHASE_TOKEN` notification.
public struct ExternalPurchaseToken: Codable, Hashable, Sendable {
    public var externalPurchaseId: String?
    public var tokenCreationDate: AppleTimestamp?
    public var appAppleId: Int64?
    public var bundleId: String?

    public init(
        externalPurchaseId: String? = nil,
        tokenCreationDate: AppleTimestamp? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil
    ) {
        self.externalPurchaseId = externalPurchaseId
        self.tokenCreationDate = tokenCreationDate
        self.appAppleId = appAppleId
        self.bundleId = bundleId
    }

    /// Apple marks sandbox tokens by the `SANDBOX` prefix of their id.
    public var environment: AppStoreEnvironment {
        (externalPurchaseId ?? "").hasPrefix("SANDBOX") ? .sandbox : .production
    }
}

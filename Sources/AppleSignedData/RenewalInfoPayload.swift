import Foundation

/// The decoded payload of signed subscription renewal info (Apple: `JWSRenewalInfoDecodedPayload`).
/// It carries no bundle id.
public struct RenewalInfoPayload: Codable, Hashable, Sendable {
    public var expirationIntent: ExpirationIntent?
    public var originalTransactionId: String?
    public var autoRenewProductId: String?
    public var productId: String?
    public var autoRenewStatus: AutoRenewStatus?
    public var isInBillingRetryPeriod: Bool?
    public var priceIncreaseStatus: PriceIncreaseStatus?
    public var gracePeriodExpiresDate: AppleTimestamp?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var signedDate: AppleTimestamp?
    public var environment: AppStoreEnvironment?
    public var recentSubscriptionStartDate: AppleTimestamp?
    public var renewalDate: AppleTimestamp?
    /// ISO 4217 currency of `renewalPrice`.
    public var currency: String?
    /// Renewal price in milliunits of `currency`.
    public var renewalPrice: Int64?
    public var offerDiscountType: OfferDiscountType?
    public var eligibleWinBackOfferIds: [String]?
    public var appAccountToken: String?
    public var appTransactionId: String?
    public var offerPeriod: String?

    public init(
        expirationIntent: ExpirationIntent? = nil,
        originalTransactionId: String? = nil,
        autoRenewProductId: String? = nil,
        productId: String? = nil,
        autoRenewStatus: AutoRenewStatus? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        priceIncreaseStatus: PriceIncreaseStatus? = nil,
        gracePeriodExpiresDate: AppleTimestamp? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        signedDate: AppleTimestamp? = nil,
        environment: AppStoreEnvironment? = nil,
        recentSubscriptionStartDate: AppleTimestamp? = nil,
        renewalDate: AppleTimestamp? = nil,
        currency: String? = nil,
        renewalPrice: Int64? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        eligibleWinBackOfferIds: [String]? = nil,
        appAccountToken: String? = nil,
        appTransactionId: String? = nil,
        offerPeriod: String? = nil
    ) {
        self.expirationIntent = expirationIntent
        self.originalTransactionId = originalTransactionId
        self.autoRenewProductId = autoRenewProductId
        self.productId = productId
        self.autoRenewStatus = autoRenewStatus
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.priceIncreaseStatus = priceIncreaseStatus
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.signedDate = signedDate
        self.environment = environment
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.renewalDate = renewalDate
        self.currency = currency
        self.renewalPrice = renewalPrice
        self.offerDiscountType = offerDiscountType
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.appAccountToken = appAccountToken
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
    }
}

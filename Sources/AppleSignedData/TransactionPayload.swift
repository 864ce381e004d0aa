import Foundation

/// The decoded payload of a StoreKit 2 signed transaction (Apple: `JWSTransactionDecodedPayload`).
public struct TransactionPayload: Codable, Hashable, Sendable {
    public var originalTransactionId: String?
    public var transactionId: String?
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: AppleTimestamp?
    public var originalPurchaseDate: AppleTimestamp?
    public var expiresDate: AppleTimestamp?
    public var quantity: Int?
    public var type: TransactionType?
    public var appAccountToken: String?
    public var inAppOwnershipType: InAppOwnershipType?
    public var signedDate: AppleTimestamp?
    public var revocationReason: RevocationReason?
    public var revocationDate: AppleTimestamp?
    public var revocationType: RevocationType?
    /// Percentage of a prorated refund, in thousandths of a percent.
    public var revocationPercentage: Int?
    public var isUpgraded: Bool?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var environment: AppStoreEnvironment?
    public var storefront: String?
    public var storefrontId: String?
    public var transactionReason: TransactionReason?
    /// ISO 4217 currency of `price`.
    public var currency: String?
    /// Price in milliunits of `currency` (1990 = 1.99).
    public var price: Int64?
    public var offerDiscountType: OfferDiscountType?
    public var offerPeriod: String?
    public var appTransactionId: String?

    public init(
        originalTransactionId: String? = nil,
        transactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        purchaseDate: AppleTimestamp? = nil,
        originalPurchaseDate: AppleTimestamp? = nil,
        expiresDate: AppleTimestamp? = nil,
        quantity: Int? = nil,
        type: TransactionType? = nil,
        appAccountToken: String? = nil,
        inAppOwnershipType: InAppOwnershipType? = nil,
        signedDate: AppleTimestamp? = nil,
        revocationReason: RevocationReason? = nil,
        revocationDate: AppleTimestamp? = nil,
        revocationType: RevocationType? = nil,
        revocationPercentage: Int? = nil,
        isUpgraded: Bool? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        environment: AppStoreEnvironment? = nil,
        storefront: String? = nil,
        storefrontId: String? = nil,
        transactionReason: TransactionReason? = nil,
        currency: String? = nil,
        price: Int64? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        offerPeriod: String? = nil,
        appTransactionId: String? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.bundleId = bundleId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.type = type
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.revocationReason = revocationReason
        self.revocationDate = revocationDate
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.environment = environment
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.transactionReason = transactionReason
        self.currency = currency
        self.price = price
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.appTransactionId = appTransactionId
    }
}

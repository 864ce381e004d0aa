import Foundation

/// The decoded payload of a legacy App Store app receipt (PKCS#7, `Bundle.main.appStoreReceiptURL`).
public struct AppReceipt: Codable, Hashable, Sendable {
    /// `Production`, `ProductionSandbox` or `Xcode` (attribute 0; absent from old receipts).
    public var receiptType: String?
    public var bundleId: String?
    public var applicationVersion: String?
    public var originalApplicationVersion: String?
    public var creationDate: AppleTimestamp?
    public var expirationDate: AppleTimestamp?
    public var inAppPurchases: [InAppPurchase]

    /// The environment the receipt type names (`ProductionSandbox` is Sandbox).
    public var environment: AppStoreEnvironment? {
        switch receiptType {
        case "Production": .production
        case "ProductionSandbox", "Sandbox": .sandbox
        case "Xcode": .xcode
        case nil: nil
        case let other?: AppStoreEnvironment(rawValue: other)
        }
    }

    /// One in-app purchase entry of a receipt.
    public struct InAppPurchase: Codable, Hashable, Sendable {
        public var quantity: Int?
        public var productId: String?
        public var transactionId: String?
        public var originalTransactionId: String?
        public var purchaseDate: AppleTimestamp?
        public var originalPurchaseDate: AppleTimestamp?
        public var subscriptionExpirationDate: AppleTimestamp?
        public var cancellationDate: AppleTimestamp?
        public var webOrderLineItemId: Int64?
        public var isTrialPeriod: Bool?
        public var isInIntroOfferPeriod: Bool?
        public var promotionalOfferIdentifier: String?

        public init() {}
    }

    public init(
        receiptType: String? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        originalApplicationVersion: String? = nil,
        creationDate: AppleTimestamp? = nil,
        expirationDate: AppleTimestamp? = nil,
        inAppPurchases: [InAppPurchase] = []
    ) {
        self.receiptType = receiptType
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.creationDate = creationDate
        self.expirationDate = expirationDate
        self.inAppPurchases = inAppPurchases
    }
}

/// The ASN.1 attribute types of an app receipt and its in-app entries (Apple's documented numbers).
public enum ReceiptField {
    public static let receiptType = 0
    public static let bundleId = 2
    public static let applicationVersion = 3
    public static let opaqueValue = 4
    public static let sha1Hash = 5
    public static let creationDate = 12
    public static let inAppPurchase = 17
    public static let originalApplicationVersion = 19
    public static let expirationDate = 21

    public static let quantity = 1701
    public static let productId = 1702
    public static let transactionId = 1703
    public static let purchaseDate = 1704
    public static let originalTransactionId = 1705
    public static let originalPurchaseDate = 1706
    public static let subscriptionExpirationDate = 1708
    public static let webOrderLineItemId = 1711
    public static let cancellationDate = 1712
    public static let isTrialPeriod = 1713
    public static let isInIntroOfferPeriod = 1719
    public static let promotionalOfferIdentifier = 1721
}

import Foundation

/// The decoded payload of a signed app transaction (Apple: `AppTransaction`).
public struct AppTransactionPayload: Codable, Hashable, Sendable {
    /// The environment of the app transaction (Apple names it `receiptType`).
    public var receiptType: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    public var receiptCreationDate: AppleTimestamp?
    public var originalPurchaseDate: AppleTimestamp?
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDate: AppleTimestamp?
    public var appTransactionId: String?
    public var originalPlatform: PurchasePlatform?
    public var signedDate: AppleTimestamp?

    public init(
        receiptType: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        versionExternalIdentifier: Int64? = nil,
        receiptCreationDate: AppleTimestamp? = nil,
        originalPurchaseDate: AppleTimestamp? = nil,
        originalApplicationVersion: String? = nil,
        deviceVerification: String? = nil,
        deviceVerificationNonce: String? = nil,
        preorderDate: AppleTimestamp? = nil,
        appTransactionId: String? = nil,
        originalPlatform: PurchasePlatform? = nil,
        signedDate: AppleTimestamp? = nil
    ) {
        self.receiptType = receiptType
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.versionExternalIdentifier = versionExternalIdentifier
        self.receiptCreationDate = receiptCreationDate
        self.originalPurchaseDate = originalPurchaseDate
        self.originalApplicationVersion = originalApplicationVersion
        self.deviceVerification = deviceVerification
        self.deviceVerificationNonce = deviceVerificationNonce
        self.preorderDate = preorderDate
        self.appTransactionId = appTransactionId
        self.originalPlatform = originalPlatform
        self.signedDate = signedDate
    }
}

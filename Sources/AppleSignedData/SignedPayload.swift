/// What a payload says about the app and environment it belongs to.
public struct PayloadClaims: Hashable, Sendable {
    /// The bundle id, when this kind of payload carries one (renewal info does not).
    public var bundleId: String?
    public var carriesBundleId: Bool
    /// The App Store app id, when this kind of payload carries one (transactions do not).
    public var appAppleId: Int64?
    public var carriesAppAppleId: Bool
    public var environment: AppStoreEnvironment?
}

/// A payload type that Apple signs as a compact JWS.
public protocol SignedPayload: Codable, Hashable, Sendable {
    /// When Apple signed it.
    var signedDate: AppleTimestamp? { get }
    /// The time certificates are checked for validity at: `signedDate`, or another date of the
    /// payload that Apple's libraries use in its place; nil: the present.
    var signingTime: AppleTimestamp? { get }
    /// Members that hold whole numbers (a fraction there is refused by name).
    static var wholeNumberMembers: Set<String> { get }
    /// The app and environment the payload claims.
    var claims: PayloadClaims { get }
}

extension SignedPayload {
    public var signingTime: AppleTimestamp? { signedDate }
    /// Every integer member of Apple's payload models (dates are read with their fractions).
    public static var wholeNumberMembers: Set<String> {
        [
            "quantity", "revocationReason", "revocationPercentage", "offerType", "price", "autoRenewStatus", "expirationIntent",
            "priceIncreaseStatus", "renewalPrice", "appAppleId", "versionExternalIdentifier", "status", "version",
        ]
    }
}

extension TransactionPayload: SignedPayload {
    public var claims: PayloadClaims {
        PayloadClaims(bundleId: bundleId, carriesBundleId: true, appAppleId: nil, carriesAppAppleId: false, environment: environment)
    }
}

extension RenewalInfoPayload: SignedPayload {
    public var claims: PayloadClaims {
        PayloadClaims(bundleId: nil, carriesBundleId: false, appAppleId: nil, carriesAppAppleId: false, environment: environment)
    }
}

extension AppTransactionPayload: SignedPayload {
    /// Xcode's app transactions carry no `signedDate`; `receiptCreationDate` stands for it.
    public var signingTime: AppleTimestamp? { signedDate ?? receiptCreationDate }

    public var claims: PayloadClaims {
        PayloadClaims(bundleId: bundleId, carriesBundleId: true, appAppleId: appAppleId, carriesAppAppleId: true, environment: receiptType)
    }
}

extension NotificationPayload: SignedPayload {
    public var claims: PayloadClaims {
        if let data {
            return PayloadClaims(
                bundleId: data.bundleId,
                carriesBundleId: true,
                appAppleId: data.appAppleId,
                carriesAppAppleId: true,
                environment: data.environment
            )
        }
        if let summary {
            return PayloadClaims(
                bundleId: summary.bundleId,
                carriesBundleId: true,
                appAppleId: summary.appAppleId,
                carriesAppAppleId: true,
                environment: summary.environment
            )
        }
        if let token = externalPurchaseToken {
            return PayloadClaims(
                bundleId: token.bundleId,
                carriesBundleId: true,
                appAppleId: token.appAppleId,
                carriesAppAppleId: true,
                environment: token.environment
            )
        }
        return PayloadClaims(bundleId: nil, carriesBundleId: true, appAppleId: nil, carriesAppAppleId: true, environment: nil)
    }
}

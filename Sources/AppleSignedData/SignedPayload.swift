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
    /// When Apple signed it; certificates are checked for validity at this time.
    var signedDate: AppleTimestamp? { get }
    /// The app and environment the payload claims.
    var claims: PayloadClaims { get }
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
    public var claims: PayloadClaims {
        PayloadClaims(bundleId: bundleId, carriesBundleId: true, appAppleId: appAppleId, carriesAppAppleId: true, environment: receiptType)
    }
}

extension NotificationPayload: SignedPayload {
    public var claims: PayloadClaims {
        if let data {
            return PayloadClaims(bundleId: data.bundleId, carriesBundleId: true, appAppleId: data.appAppleId, carriesAppAppleId: true, environment: data.environment)
        }
        if let summary {
            return PayloadClaims(bundleId: summary.bundleId, carriesBundleId: true, appAppleId: summary.appAppleId, carriesAppAppleId: true, environment: summary.environment)
        }
        if let token = externalPurchaseToken {
            return PayloadClaims(bundleId: token.bundleId, carriesBundleId: true, appAppleId: token.appAppleId, carriesAppAppleId: true, environment: token.environment)
        }
        return PayloadClaims(bundleId: nil, carriesBundleId: true, appAppleId: nil, carriesAppAppleId: true, environment: nil)
    }
}

/// What a caller expects of signed data once its signature and chain are proven:
/// which app it belongs to and which App Store environment it comes from.
public struct AppExpectations: Hashable, Sendable {
    /// The app's bundle id; `nil` only for inspection (``inspectOnly``).
    public let bundleId: String?
    /// The app's App Store id; required when `environment` is Production.
    public let appAppleId: Int64?
    /// The accepted environments; `nil` only for inspection.
    public let environments: Set<AppStoreEnvironment>?
    /// Whether Xcode / LocalTesting data (not signed by Apple) is accepted. Never true for Production.
    public let allowsLocalTesting: Bool

    /// Expectations for one app in one environment.
    ///
    /// - Throws: `missing_app_apple_id` when `environment` is Production and `appAppleId` is nil;
    ///   `wrong_environment` when local testing is allowed for Production.
    public init(
        bundleId: String,
        appAppleId: Int64?,
        environment: AppStoreEnvironment,
        allowsLocalTesting: Bool = false
    ) throws(SignedDataError) {
        try self.init(bundleId: bundleId, appAppleId: appAppleId, environments: [environment], allowsLocalTesting: allowsLocalTesting)
    }

    /// Expectations for one app that accepts data from any of `environments` (e.g. an app whose
    /// reviewers buy in Sandbox while customers buy in Production).
    ///
    /// - Throws: `missing_app_apple_id` when Production is accepted and `appAppleId` is nil;
    ///   `wrong_environment` when local testing is allowed together with Production.
    public init(
        bundleId: String,
        appAppleId: Int64?,
        environments: Set<AppStoreEnvironment>,
        allowsLocalTesting: Bool = false
    ) throws(SignedDataError) {
        guard !environments.isEmpty else {
            throw SignedDataError(.wrongEnvironment, "at least one environment must be accepted")
        }
        if environments.contains(.production) {
            guard appAppleId != nil else {
                throw SignedDataError(.missingAppAppleId, "Production expectations need the app's appAppleId")
            }
            guard !allowsLocalTesting else {
                throw SignedDataError(.wrongEnvironment, "Xcode/LocalTesting data can never be accepted in Production")
            }
        }
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = environments
        self.allowsLocalTesting = allowsLocalTesting
    }

    /// Partial expectations for inspection tools: only what is given is checked. The Production
    /// rules still hold (appAppleId required, no local testing).
    public static func inspecting(
        bundleId: String?,
        appAppleId: Int64?,
        environment: AppStoreEnvironment?,
        allowsLocalTesting: Bool = false
    ) throws(SignedDataError) -> AppExpectations {
        if let environment {
            if let bundleId {
                return try AppExpectations(
                    bundleId: bundleId,
                    appAppleId: appAppleId,
                    environment: environment,
                    allowsLocalTesting: allowsLocalTesting
                )
            }
            // Validate the Production rules with a placeholder bundle, then drop it.
            let checked = try AppExpectations(bundleId: "", appAppleId: appAppleId, environment: environment, allowsLocalTesting: allowsLocalTesting)
            return AppExpectations(bundleId: nil, appAppleId: checked.appAppleId, environments: [environment], allowsLocalTesting: allowsLocalTesting)
        }
        return AppExpectations(bundleId: bundleId, appAppleId: appAppleId, environments: nil, allowsLocalTesting: allowsLocalTesting)
    }

    private init(bundleId: String?, appAppleId: Int64?, environments: Set<AppStoreEnvironment>?, allowsLocalTesting: Bool) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = environments
        self.allowsLocalTesting = allowsLocalTesting
    }

    private init(inspection: Void) {
        bundleId = nil
        appAppleId = nil
        environments = nil
        allowsLocalTesting = false
    }

    /// Checks only Apple's signature and chain, not which app or environment the data is for.
    /// For inspection tools (`berth verify` without options); never for applying purchases.
    public static let inspectOnly = AppExpectations(inspection: ())
}

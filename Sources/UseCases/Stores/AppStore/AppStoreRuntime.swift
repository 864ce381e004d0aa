import AppStoreAPI
import AppleSignedData
import AsyncHTTPClient
import Domain
import Foundation
import Logging
import X509

/// A tenant's App Store: the verifiers of its signed data and receipts (Apple's roots plus the
/// tenant's own), what its Apple data must say (bundle id, app id, environments), and its clients of
/// Apple's services when configured (the App Store Server API, legacy verifyReceipt, offer signing).
/// Built once per tenant at start, as each store's runtime is.
public struct AppStoreRuntime: Sendable {
    public let verifier: SignedDataVerifier
    /// Legacy app receipts: Apple Inc. Root plus the tenant's extra roots.
    public let receiptVerifier: ReceiptVerifier
    /// The App Store Server API, when the tenant configured a key (resolves bare transaction ids).
    public let serverAPI: AppStoreServerAPIClient?
    /// Signs subscription offers with the same In-App Purchase key, when it is configured.
    public var offerSigner: AppleOfferSigner? { serverAPI.map { AppleOfferSigner(credentials: $0.credentials) } }
    public let expectations: AppExpectations
    /// Apple's legacy verifyReceipt, when the tenant configured its shared secret.
    public let verifyReceiptClient: VerifyReceiptClient?
    /// Signed transactions and receipts this tenant already verified (retries and replays skip the checks).
    public let verifiedProofs = VerifiedProofs()

    /// - Parameters: as ``TenantRuntime``'s: the catalog's folder, the process environment, the
    ///   clock of payloads that do not say when they were signed, the outbound client.
    init(tenant: Tenant, baseDirectory: URL, environment: [String: String], clock: any BerthClock, httpClient: HTTPClient, logger: Logger) throws {
        var extraRoots: [Certificate] = []
        for file in tenant.apple.trustedRootFiles ?? [] {
            let url = URL(fileURLWithPath: file, relativeTo: baseDirectory)
            do {
                extraRoots += try TrustedRoots.load(contentsOf: url)
            } catch {
                logger.warning(
                    "tenant \(tenant.id): trusted root \(url.path) not loaded (\(error)); its test purchases will be refused as untrusted_root"
                )
            }
        }
        verifier = SignedDataVerifier(roots: try TrustedRoots.apple().adding(extraRoots), now: { clock.now() })
        receiptVerifier = ReceiptVerifier(roots: TrustedRoots([try TrustedRoots.appleIncRoot]).adding(extraRoots))
        expectations = try AppExpectations(
            bundleId: tenant.apple.bundleId,
            appAppleId: tenant.apple.appAppleId,
            environments: Set(tenant.apple.environments.map(AppStoreEnvironment.init)),
            allowsLocalTesting: tenant.apple.allowLocalTesting ?? false
        )
        if let settings = tenant.subscriptions?.verifyReceipt {
            if let secret = environment[settings.sharedSecretEnv], !secret.isEmpty {
                var endpoints = VerifyReceiptClient.Endpoints()
                if let production = settings.productionURL { endpoints.production = production }
                if let sandbox = settings.sandboxURL { endpoints.sandbox = sandbox }
                verifyReceiptClient = VerifyReceiptClient(
                    endpoints: endpoints,
                    sharedSecret: secret,
                    httpClient: httpClient,
                    retry: RetryPolicy(maxAttempts: 2, timeout: .seconds(3))
                )
            } else {
                logger.warning("tenant \(tenant.id): \(settings.sharedSecretEnv) is unset; receipts are verified offline only")
                verifyReceiptClient = nil
            }
        } else {
            verifyReceiptClient = nil
        }
        serverAPI = Self.serverAPI(
            for: tenant,
            baseDirectory: baseDirectory,
            verifier: verifier,
            expectations: expectations,
            httpClient: httpClient,
            logger: logger
        )
        if serverAPI == nil, let lost = tenant.withoutServerAPI {
            logger.warning("tenant \(tenant.id): \(lost)")
        }
    }

    private static func serverAPI(
        for tenant: Tenant,
        baseDirectory: URL,
        verifier: SignedDataVerifier,
        expectations: AppExpectations,
        httpClient: HTTPClient,
        logger: Logger
    ) -> AppStoreServerAPIClient? {
        guard let configuration = tenant.apple.serverAPI else { return nil }
        let url = URL(fileURLWithPath: configuration.privateKeyFile, relativeTo: baseDirectory)
        do {
            let pem = try String(contentsOf: url, encoding: .utf8)
            let credentials = try AppStoreAPICredentials(
                issuerId: configuration.issuerId,
                keyId: configuration.keyId,
                bundleId: tenant.apple.bundleId,
                privateKeyPEM: pem
            )
            var endpoints = AppStoreServerAPIClient.Endpoints()
            if let production = configuration.productionURL { endpoints.production = production }
            if let sandbox = configuration.sandboxURL { endpoints.sandbox = sandbox }
            return AppStoreServerAPIClient(
                credentials: credentials,
                endpoints: endpoints,
                httpClient: httpClient,
                verifier: verifier,
                expectations: expectations
            )
        } catch {
            logger.warning("tenant \(tenant.id): App Store Server API key \(url.path) not usable (\(error)); bare transaction ids are refused")
            return nil
        }
    }
}

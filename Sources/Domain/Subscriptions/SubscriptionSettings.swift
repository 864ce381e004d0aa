import Foundation

/// How a tenant's auto-renewable subscriptions are served (`subscriptions` in products.json).
public struct SubscriptionSettings: Codable, Hashable, Sendable {
    /// Keep each subscription's latest app receipt (base64) so that it can be refreshed from it
    /// later and handed back (`GET …/apple/receipt/{id}`). Off by default: only hashes are kept.
    public var keepReceipts: Bool?
    /// Also ask Apple's legacy verifyReceipt for the latest renewals (needs the app's shared secret);
    /// Berth falls back to the offline result when Apple cannot be reached.
    public var verifyReceipt: VerifyReceiptSettings?
    /// FT Chinese's API served under these path prefixes, each bound to one environment.
    public var ftcRoutes: [FTCRoutes]?

    public struct VerifyReceiptSettings: Codable, Hashable, Sendable {
        /// The environment variable holding the app-specific shared secret.
        public var sharedSecretEnv: String
        public var productionURL: String?
        public var sandboxURL: String?

        public init(sharedSecretEnv: String, productionURL: String? = nil, sandboxURL: String? = nil) {
            self.sharedSecretEnv = sharedSecretEnv
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
        }
    }

    public struct FTCRoutes: Codable, Hashable, Sendable {
        /// A path prefix such as `/ftc/v1` (`/apple/link` is then served at `/ftc/v1/apple/link`).
        public var prefix: String
        /// `Production` or `Sandbox`: the subscriptions this base serves.
        public var environment: StoreEnvironment

        public init(prefix: String, environment: StoreEnvironment) {
            self.prefix = prefix
            self.environment = environment
        }
    }

    public init(keepReceipts: Bool? = nil, verifyReceipt: VerifyReceiptSettings? = nil, ftcRoutes: [FTCRoutes]? = nil) {
        self.keepReceipts = keepReceipts
        self.verifyReceipt = verifyReceipt
        self.ftcRoutes = ftcRoutes
    }

    /// The segments after `/api/` that Berth's own routes use (a test checks the router against it).
    public static let berthAPISegments: Set<String> = [
        "admin", "answer-signing", "apple", "bookings", "consumption-consent", "credits", "entitlements", "google", "offers", "products", "resources",
        "restore-purchases", "stripe", "subscriptions", "validator", "verify-purchase", "verify-receipt",
    ]

    func validate(tenant: String) throws {
        for routes in ftcRoutes ?? [] {
            let parts = routes.prefix.split(separator: "/")
            guard routes.prefix.hasPrefix("/"), !parts.isEmpty,
                parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" } })
            else {
                throw CatalogError(
                    "tenant \(tenant): subscriptions.ftcRoutes prefix \(routes.prefix) must be /segment[/segment…] of letters, digits, - or _"
                )
            }
            // FT Chinese's own bases are /api/sandbox and /api/v1: under /api, any segment Berth does not use itself.
            let shadows =
                ["admin", "health", "healthz", "readyz", "metrics"].contains(String(parts[0]))
                || (parts[0] == "api" && (parts.count < 2 || Self.berthAPISegments.contains(String(parts[1]))))
            guard !shadows else {
                throw CatalogError("tenant \(tenant): subscriptions.ftcRoutes prefix \(routes.prefix) would shadow Berth's own routes")
            }
            guard StoreEnvironment.stores.contains(routes.environment) else {
                throw CatalogError("tenant \(tenant): subscriptions.ftcRoutes environment must be Production or Sandbox")
            }
        }
        if let secret = verifyReceipt?.sharedSecretEnv, secret.isEmpty {
            throw CatalogError("tenant \(tenant): subscriptions.verifyReceipt.sharedSecretEnv is empty")
        }
    }
}

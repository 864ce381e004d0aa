import Foundation

/// A tenant's Android app on Google Play: its package names, the service account Berth calls the
/// Play Developer API with (its JSON key from an environment variable or a file, never the catalog),
/// where the API is, and how its real-time developer notifications (Pub/Sub pushes) authenticate.
public struct GooglePlaySettings: Codable, Hashable, Sendable {
    /// The app's package name (`com.example.app`).
    public var packageName: String
    /// Further package names of the same app family, for `packageName` in verify-purchase bodies.
    public var additionalPackageNames: [String]?
    /// The environment variable holding the service account's JSON key.
    public var serviceAccountEnv: String?
    /// The environment variable naming a file that holds the JSON key.
    public var serviceAccountFileEnv: String?
    /// The Play Developer API (default `https://androidpublisher.googleapis.com`).
    public var apiBase: String?
    /// An environment variable whose value, when set, replaces `apiBase`. Without `apiBase`, the
    /// variable is required: Play is off while it is unset (a test tenant pointed at a stand-in).
    public var apiBaseEnv: String?
    /// Where access tokens are bought. Default: the key's `token_uri`, or `{apiBase}/token` when the
    /// API base is a loopback stand-in (which then serves the token endpoint and key set too).
    public var tokenURL: String?
    /// How pushes to `POST /api/google/notifications/{tenant}` prove they come from Google's Pub/Sub.
    public var push: PushSettings?
    /// Hours after which a purchase not yet acknowledged raises the alert metric (Google refunds at
    /// 72 hours). Default 24.
    public var acknowledgeAlertHours: Int?
    /// How often the voided-purchases sweep runs, in minutes. Default 60.
    public var voidedSweepMinutes: Int?

    /// The OIDC token Pub/Sub puts on each push (the subscription's "authentication" setting).
    public struct PushSettings: Codable, Hashable, Sendable {
        /// The audience the push subscription names.
        public var audience: String
        /// The service account the push subscription signs as (the token's verified `email`).
        public var serviceAccountEmail: String
        /// Google's key set (default `https://www.googleapis.com/oauth2/v3/certs`, or the stand-in's).
        public var jwksURL: String?

        public init(audience: String, serviceAccountEmail: String, jwksURL: String? = nil) {
            self.audience = audience
            self.serviceAccountEmail = serviceAccountEmail
            self.jwksURL = jwksURL
        }
    }

    public static let defaultAPIBase = "https://androidpublisher.googleapis.com"
    public static let defaultJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"
    public static let store = StoreName.googlePlay

    public init(
        packageName: String,
        serviceAccountEnv: String? = nil,
        serviceAccountFileEnv: String? = nil,
        apiBase: String? = nil,
        apiBaseEnv: String? = nil,
        tokenURL: String? = nil,
        push: PushSettings? = nil
    ) {
        self.packageName = packageName
        self.serviceAccountEnv = serviceAccountEnv
        self.serviceAccountFileEnv = serviceAccountFileEnv
        self.apiBase = apiBase
        self.apiBaseEnv = apiBaseEnv
        self.tokenURL = tokenURL
        self.push = push
    }

    /// Every package name of the tenant's app.
    public var packageNames: [String] { [packageName] + (additionalPackageNames ?? []) }
    public var alertAfter: TimeInterval { TimeInterval((acknowledgeAlertHours ?? 24) * 3600) }
    public var sweepInterval: TimeInterval { TimeInterval((voidedSweepMinutes ?? 60) * 60) }

    /// Whether `url` is a loopback stand-in (plain http allowed there only: an access token travels to it).
    public static func isLoopback(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let host = components.host?.lowercased() else { return false }
        return ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
    }

    public static func acceptable(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), components.host?.isEmpty == false,
            components.user == nil, components.password == nil
        else { return false }
        return scheme == "https" || (scheme == "http" && isLoopback(url))
    }

    static func validPackage(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count >= 2 && name.utf8.count <= 255
            && parts.allSatisfy { part in
                !part.isEmpty && part.first?.isLetter == true && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            }
    }

    func validate(tenant: String) throws {
        for name in packageNames where !Self.validPackage(name) {
            throw CatalogError("tenant \(tenant): googlePlay package name \"\(name)\" is not a package name (com.example.app)")
        }
        guard serviceAccountEnv?.isEmpty == false || serviceAccountFileEnv?.isEmpty == false else {
            throw CatalogError(
                "tenant \(tenant): googlePlay needs serviceAccountEnv or serviceAccountFileEnv (the service account's JSON key stays out of the catalog)"
            )
        }
        for (name, url) in [("apiBase", apiBase), ("tokenURL", tokenURL), ("push.jwksURL", push?.jwksURL)] {
            if let url, !Self.acceptable(url) {
                throw CatalogError("tenant \(tenant): googlePlay.\(name) must be an https URL (plain http only to a loopback address)")
            }
        }
        if let push, push.audience.isEmpty || !push.serviceAccountEmail.contains("@") {
            throw CatalogError("tenant \(tenant): googlePlay.push needs an audience and the push service account's email")
        }
        if let hours = acknowledgeAlertHours, !(1...71).contains(hours) {
            throw CatalogError("tenant \(tenant): googlePlay.acknowledgeAlertHours must be 1...71")
        }
        if let minutes = voidedSweepMinutes, !(1...1440).contains(minutes) {
            throw CatalogError("tenant \(tenant): googlePlay.voidedSweepMinutes must be 1...1440")
        }
    }
}

/// How a catalog product is sold on Google Play, when its id there differs from the catalog's.
public struct GoogleProduct: Codable, Hashable, Sendable {
    /// The Play Console product id (a subscription's id, whose base plans are below).
    public var productId: String?
    /// For a subscription: the base plans that are this product (default: any).
    public var basePlanIds: [String]?

    public init(productId: String? = nil, basePlanIds: [String]? = nil) {
        self.productId = productId
        self.basePlanIds = basePlanIds
    }
}

extension Product {
    /// The product's id on Google Play.
    public var googleProductId: String { google?.productId ?? id }
}

extension Tenant {
    /// The catalog product a Google purchase of `googleProductId` (and base plan) is.
    public func product(googleProductId: String, basePlanId: String?) -> Product? {
        products.first { product in
            guard product.googleProductId == googleProductId else { return false }
            guard let plans = product.google?.basePlanIds, let basePlanId else { return true }
            return plans.contains(basePlanId)
        }
    }

    /// The product an Android app names: by the catalog's id, or by its Play Console id.
    public func product(namedOnPlay id: String) -> Product? {
        product(id: id) ?? product(googleProductId: id, basePlanId: nil)
    }
}

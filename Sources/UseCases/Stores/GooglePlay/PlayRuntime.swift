import AsyncHTTPClient
import Domain
import Foundation
import GooglePlayAPI
import Logging

/// A tenant's Google Play as configured: its Play Developer API client (service account, API base,
/// token URL) and the keys that verify its pushes. Nil when the tenant sells nothing on Play or its
/// service account is not set (Play is then off for it: purchase tokens are refused with
/// `google_play_not_configured`, pushes with 404).
public struct PlayRuntime: Sendable {
    public let settings: GooglePlaySettings
    public let client: PlayClient
    /// Google's key set for push tokens (nil: the tenant takes no pushes).
    public let pushKeys: JWKSKeys?

    public static func load(_ tenant: Tenant, environment: [String: String], httpClient: HTTPClient, logger: Logger) -> PlayRuntime? {
        guard let settings = tenant.googlePlay else { return nil }
        var json: Data?
        if let name = settings.serviceAccountEnv, let value = environment[name], !value.isEmpty {
            json = Data(value.utf8)
        } else if let name = settings.serviceAccountFileEnv, let path = environment[name], !path.isEmpty {
            guard let contents = FileManager.default.contents(atPath: path) else {
                logger.warning("tenant \(tenant.id): the service account file named by \(name) cannot be read; Google Play is off")
                return nil
            }
            json = contents
        }
        guard let json else {
            logger.info("tenant \(tenant.id): no Google Play service account set; Google Play is off")
            return nil
        }
        let account: ServiceAccount
        do { account = try ServiceAccount(json: json) } catch {
            logger.warning("tenant \(tenant.id): \(error.message); Google Play is off")
            return nil
        }
        var base = settings.apiBase ?? GooglePlaySettings.defaultAPIBase
        if let name = settings.apiBaseEnv {
            if let value = environment[name], !value.isEmpty {
                base = value
            } else if settings.apiBase == nil {
                // A tenant that names only the variable (a test tenant pointed at a stand-in) never calls Google itself.
                logger.info("tenant \(tenant.id): \(name) is unset; Google Play is off")
                return nil
            }
        }
        guard GooglePlaySettings.acceptable(base) else {
            logger.warning("tenant \(tenant.id): the Google Play API base is not https (plain http only to a loopback address); Google Play is off")
            return nil
        }
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        // A loopback stand-in serves the token endpoint and the key set beside the API.
        let standIn = GooglePlaySettings.isLoopback(trimmed)
        let tokenURL = settings.tokenURL ?? (standIn ? trimmed + "/token" : account.tokenURI)
        guard GooglePlaySettings.acceptable(tokenURL) else {
            logger.warning("tenant \(tenant.id): the service account's token_uri is not https; Google Play is off")
            return nil
        }
        let jwksURL = settings.push.map { $0.jwksURL ?? (standIn ? trimmed + "/oauth2/v3/certs" : GooglePlaySettings.defaultJWKSURL) }
        return PlayRuntime(
            settings: settings,
            client: PlayClient(account: account, apiBase: trimmed, tokenURL: tokenURL, httpClient: httpClient),
            pushKeys: jwksURL.map { JWKSKeys(url: $0, client: httpClient, logger: logger) }
        )
    }

    /// The package a request names (nil: the tenant's own), if it is one of the tenant's.
    public func package(_ named: String?) -> String? {
        guard let named, !named.isEmpty else { return settings.packageName }
        return settings.packageNames.contains(named) ? named : nil
    }
}

extension DomainError {
    static func playUnavailable(_ error: PlayError) -> DomainError {
        DomainError(
            .unavailable,
            .googlePlayUnavailable,
            "Google Play could not be reached or refused Berth's credentials (\(error.reason)); try again shortly",
            retryAfter: 5
        )
    }
}

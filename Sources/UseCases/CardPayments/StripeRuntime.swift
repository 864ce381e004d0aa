import AsyncHTTPClient
import Domain
import Foundation
import Logging
import StripeAPI

/// A tenant's card rail as configured: its Stripe client (secret key, API base) and webhook secrets.
public struct StripeRuntime: Sendable {
    public let settings: StripeSettings
    public let client: StripeClient
    /// The endpoint's signing secrets (any of them signs a valid event).
    public let webhookSecrets: [Secret]

    /// `live` or `test`: the mode of the secret key (card purchases are recorded in it).
    public var environment: StoreEnvironment { client.livemode ? .live : .test }

    /// The rail when the tenant configured it and its secrets are set; nil (with a warning) otherwise:
    /// the tenant then offers no card payments and its webhook endpoint answers 404.
    public static func load(_ tenant: Tenant, environment: [String: String], httpClient: HTTPClient, logger: Logger) -> StripeRuntime? {
        guard let settings = tenant.stripe else { return nil }
        guard let key = environment[settings.secretKeyEnv], key.hasPrefix("sk_") || key.hasPrefix("rk_") else {
            logger.warning("tenant \(tenant.id): \(settings.secretKeyEnv) is unset or not a Stripe secret key; card payments are not offered")
            return nil
        }
        let secrets = settings.webhookSecretEnvs.compactMap { environment[$0] }.filter { !$0.isEmpty }
        guard !secrets.isEmpty else {
            logger.warning("tenant \(tenant.id): none of \(settings.webhookSecretEnvs.joined(separator: ", ")) is set; card payments are not offered")
            return nil
        }
        var base = settings.apiBase ?? StripeSettings.defaultAPIBase
        if let name = settings.apiBaseEnv, let value = environment[name], !value.isEmpty { base = value }
        guard StripeSettings.acceptable(apiBase: base) else {
            logger.warning(
                "tenant \(tenant.id): the Stripe API base is not https (plain http only to a loopback address); card payments are not offered"
            )
            return nil
        }
        return StripeRuntime(
            settings: settings,
            client: StripeClient(apiBase: base, secretKey: key, apiVersion: settings.apiVersion, httpClient: httpClient),
            webhookSecrets: secrets.map(Secret.init)
        )
    }
}

extension DomainError {
    static func providerUnavailable(_ error: StripeError) -> DomainError {
        DomainError(
            .unavailable,
            .paymentProviderUnavailable,
            "the payment provider could not be reached or refused the request (\(error.type)); try again shortly",
            retryAfter: 5
        )
    }
}

import AppleSignedData
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import UseCases

/// The App Store notification endpoints' common step (Berth's and FT Chinese's URL): only what fails
/// draws from the per-address limit, and an address whose failures used it up is refused before its
/// body is read (T8), until its budget refills or one of its notifications verifies. Behind one
/// proxy Apple and an attacker share an address: Apple retries a refused notification, and the
/// notification history reader recovers it.
struct NotificationIntake {
    let receive: ReceiveNotification
    let rateLimiter: RateLimiter
    let trustedProxies: TrustedProxies

    func callAsFunction(_ request: Request, context: BerthRequestContext, runtime: TenantRuntime) async throws -> ReceiveNotification.Result {
        let address = trustedProxies.clientAddress(peer: context.clientAddress, forwardedFor: request.headers[values: .xForwardedFor])
        try rateLimiter.admitNotification(tenant: runtime.tenant, clientAddress: address)
        do {
            let body = try await JSONCoding.decode(NotificationRequestBody.self, from: request)
            let result = try await receive(signedPayload: body.signedPayload, runtime: runtime)
            rateLimiter.notificationVerified(tenant: runtime.tenant, clientAddress: address)
            return result
        } catch {
            // Storage trouble (5xx) is not the sender's failure; Apple retries it.
            if !Self.isServerSide(error) {
                try rateLimiter.checkNotification(tenant: runtime.tenant, clientAddress: address)
            }
            throw error
        }
    }

    /// Whether Berth, not the sender, failed (answered 5xx): storage, or a use case that could not finish.
    static func isServerSide(_ error: any Error) -> Bool {
        switch error {
        case is StoreUnavailable: true
        case let error as APIError: error.status.code >= 500
        case let error as DomainError: error.kind == .unavailable
        default: false
        }
    }
}

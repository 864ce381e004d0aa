import Domain
import Foundation
import Hummingbird
import UseCases

/// `POST /api/google/notifications/{tenant}`: the push endpoint of the tenant's Pub/Sub subscription
/// for Google Play's real-time developer notifications. The push's OIDC token is checked first; a
/// message id already received answers 200 with no second effect; Google's state is read and
/// applied before Pub/Sub gets its 200 (a 503 makes Pub/Sub retry). Failed pushes draw from the
/// per-address notification limit, like the App Store's.
struct GooglePlayRoutes {
    let receive: ReceivePlayNotification
    let tenants: TenantRegistry
    let rateLimiter: RateLimiter
    let trustedProxies: TrustedProxies
    var metrics: BerthMetrics?

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<BerthRequestContext> {
        let router = RouteCollection(context: BerthRequestContext.self)
        router.post("/api/google/notifications/{tenant}", use: postGoogleNotifications)
        return router
    }

    /// `POST /api/google/notifications/{tenant}`
    func postGoogleNotifications(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        try await self.push(request, context)
    }

    func push(_ request: Request, _ context: BerthRequestContext) async throws -> Response {
        guard let tenantId = context.parameters.get("tenant"), let runtime = tenants.tenant(id: tenantId), runtime.play?.settings.push != nil else {
            throw APIError(.notFound, .tenantNotFound, "no app takes Google Play notifications at this URL", field: "tenant")
        }
        let address = trustedProxies.clientAddress(peer: context.clientAddress, forwardedFor: request.headers[values: .xForwardedFor])
        var request = request
        let result: ReceivePlayNotification.Result
        try rateLimiter.admitNotification(tenant: runtime.tenant, clientAddress: address)
        try rateLimiter.checkPush(tenant: runtime.tenant)
        do {
            let buffer: ByteBuffer
            do { buffer = try await request.collectBody(upTo: JSONCoding.bodyLimit) } catch {
                throw APIError(.contentTooLarge, .bodyTooLarge, "request bodies are limited to 64 KiB")
            }
            result = try await receive(body: Data(buffer.readableBytesView), authorization: request.headers[.authorization], runtime: runtime)
        } catch {
            metrics?.notification(type: "google_play", outcome: BerthMetrics.errorCode(error))
            if !NotificationIntake.isServerSide(error) { try rateLimiter.checkNotification(tenant: runtime.tenant, clientAddress: address) }
            throw error
        }
        rateLimiter.notificationVerified(tenant: runtime.tenant, clientAddress: address)
        metrics?.notification(type: "google_play:" + result.kind, outcome: result.duplicate ? "duplicate" : result.outcome)
        return try JSONCoding.response(NotificationAck(outcome: result.outcome, duplicate: result.duplicate))
    }
}

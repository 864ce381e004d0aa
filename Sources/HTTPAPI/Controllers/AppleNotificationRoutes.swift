import AppleSignedData
import Domain
import Foundation
import Hummingbird
import UseCases

/// `POST /api/apple/notifications/{tenant}`: the URL each app gives App Store Connect (Production
/// and Sandbox may share it). The signedPayload and its nested data are verified for the tenant;
/// the notification and its effect commit together before Apple gets its 200. A redelivered uuid
/// answers 200 with no second effect; data that can never verify gets 4xx; storage trouble 503 so
/// that Apple retries.
struct AppleNotificationRoutes {
    let intake: NotificationIntake
    let tenants: TenantRegistry
    var metrics: BerthMetrics?

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<BerthRequestContext> {
        let router = RouteCollection(context: BerthRequestContext.self)
        router.post("/api/apple/notifications/{tenant}", use: receive)
        return router
    }

    func receive(_ request: Request, _ context: BerthRequestContext) async throws -> Response {
        guard let tenantId = context.parameters.get("tenant"), let runtime = tenants.tenant(id: tenantId) else {
            throw APIError(.notFound, .tenantNotFound, "no app is configured at this notification URL", field: "tenant")
        }
        let result: ReceiveNotification.Result
        do {
            result = try await intake(request, context: context, runtime: runtime)
        } catch {
            metrics?.notification(type: "unverified", outcome: BerthMetrics.errorCode(error))
            throw error
        }
        metrics?.notification(type: result.type, outcome: result.duplicate ? "duplicate" : result.outcome)
        if let consumption = result.consumption { metrics?.consumptionAnswer(tenant: runtime.id, outcome: consumption) }
        return try JSONCoding.response(NotificationAck(outcome: result.outcome, duplicate: result.duplicate))
    }
}

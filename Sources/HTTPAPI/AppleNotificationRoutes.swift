import AppleSignedData
import Domain
import Foundation
import Hummingbird

/// `POST /api/apple/notifications/{tenant}`: the URL each app gives App Store Connect (Production
/// and Sandbox may share it). The signedPayload and its nested data are verified for the tenant;
/// the notification and its effect commit together before Apple gets its 200. A redelivered uuid
/// answers 200 with no second effect; data that can never verify gets 4xx; storage trouble 503 so
/// that Apple retries.
struct AppleNotificationRoutes {
    let services: BerthServices

    func register(on router: Router<BerthRequestContext>) {
        router.post("/api/apple/notifications/{tenant}") { request, context in try await receive(request, context) }
    }

    func receive(_ request: Request, _ context: BerthRequestContext) async throws -> Response {
        guard let tenantId = context.parameters.get("tenant"), let runtime = services.tenants.tenant(id: tenantId) else {
            throw APIError(.notFound, "tenant_not_found", "no app is configured at this notification URL", field: "tenant")
        }
        // Unauthenticated: limited per tenant and client address before any body is read or verified.
        try services.rateLimiter.checkNotification(tenant: runtime.tenant, clientAddress: context.clientAddress)
        let body = try await JSONCoding.decode(NotificationRequestBody.self, from: request)
        let payloadHash = SHA256Hex.of(Data(body.signedPayload.utf8))
        let verified: VerifiedNotification
        do {
            verified = try await runtime.verifier.verifyNotification(body.signedPayload, expecting: runtime.expectations)
        } catch {
            context.logger.warning("notification refused", metadata: ["payload.sha256": .string(String(payloadHash.prefix(16))), "code": .string(error.code.rawValue)])
            let status: HTTPResponse.Status = error.code == .malformed ? .badRequest : .unprocessableContent
            throw APIError(status, error.code.rawValue, error.reason, field: "signedPayload")
        }
        let payload = verified.payload
        guard let uuid = payload.notificationUUID, let type = payload.notificationType?.rawValue else {
            throw APIError(.badRequest, "malformed", "the notification lacks notificationUUID or notificationType", field: "signedPayload")
        }
        let environment = payload.claims.environment?.rawValue ?? verified.transaction?.payload.environment?.rawValue ?? "Production"
        let incoming = IncomingNotification(
            tenantId: runtime.id, uuid: uuid, type: type, subtype: payload.subtype?.rawValue, environment: environment,
            signedAt: verified.notification.signedDate.date, transactionId: verified.transaction?.payload.transactionId, payloadHash: payloadHash,
            originalTransactionId: verified.transaction?.payload.originalTransactionId, productId: verified.transaction?.payload.productId,
            purchasedAt: verified.transaction?.payload.purchaseDate?.date, emitsEvents: runtime.webhook != nil
        )
        let result: (outcome: String, duplicate: Bool)
        do {
            result = try await services.notifications.applyNotification(incoming, resources: runtime.tenant.resources, now: services.clock.now(), decide: NotificationRules.decide)
        } catch {
            context.logger.error("notification not stored: \(String(reflecting: error))")
            throw APIError(.serviceUnavailable, "temporarily_unavailable", "the notification could not be stored; Apple will retry", headers: [.retryAfter: "60"])
        }
        context.logger.info("notification", metadata: ["uuid": .string(uuid), "type": .string(type), "outcome": .string(result.outcome), "duplicate": .stringConvertible(result.duplicate)])
        if type == "CONSUMPTION_REQUEST", !result.duplicate {
            await answerConsumptionRequest(incoming, runtime: runtime, context: context)
        }
        return try JSONCoding.response(NotificationAck(outcome: result.outcome, duplicate: result.duplicate))
    }

    /// Sends Apple what Berth knows of the consumable (delivered, consumed) when the tenant opted in.
    /// Failures are logged: the notification itself is already stored and acknowledged.
    private func answerConsumptionRequest(_ notification: IncomingNotification, runtime: TenantRuntime, context: BerthRequestContext) async {
        guard runtime.tenant.apple.answerConsumptionRequests == true, let api = runtime.serverAPI, let transactionId = notification.transactionId else { return }
        do {
            let known = try await services.notifications.purchase(tenantId: runtime.id, environment: notification.environment, transactionId: transactionId)
            let report = ConsumptionReport(purchase: known?.0, booking: known?.1, now: services.clock.now())
            try await api.sendConsumptionInformation(transactionId, body: try JSONEncoder().encode(report), environment: AppStoreEnvironment(rawValue: notification.environment))
            context.logger.info("consumption information sent", metadata: ["transaction": .string(transactionId)])
        } catch {
            context.logger.warning("consumption information not sent: \(error)")
        }
    }
}

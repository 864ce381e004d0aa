import Domain
import Foundation
import Hummingbird
import UseCases

/// `GET|PUT /api/consumption-consent`: the user's consent, asked in the app, to Berth answering
/// Apple's refund questions about their purchases (Send Consumption Information).
struct ConsentRoutes {
    let consumptionConsents: ConsumptionConsents

    /// This controller's routes, one collection per group of callers (added in `buildRouter`).
    struct Routes {
        let reads = RouteCollection(context: UserContext.self)
        let writes = RouteCollection(context: AccountContext.self)
    }

    var routes: Routes {
        let routes = Routes()
        routes.reads.get("/api/consumption-consent", use: getConsumptionConsent)
        routes.writes.put("/api/consumption-consent", use: putConsumptionConsent)
        return routes
    }

    /// `GET /api/consumption-consent`
    func getConsumptionConsent(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let consent = try await consumptionConsents.current(runtime: context.tenant, userId: context.userId)
        return try JSONCoding.response(ConsumptionConsentDTO(consent, userId: context.userId))
    }

    /// `PUT /api/consumption-consent`
    func putConsumptionConsent(_ request: Request, context: AccountContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(ConsumptionConsentRequest.self, from: request)
        let version = try SubscriptionRoutes.text(body.textVersion, field: "textVersion")
        let consent = try await consumptionConsents.record(
            runtime: context.tenant,
            userId: context.userId,
            consented: body.consented,
            textVersion: version,
            actor: context.caller.actor
        )
        return try JSONCoding.response(ConsumptionConsentDTO(consent, userId: context.userId))
    }
}

/// `PUT /api/consumption-consent`: what the user answered, and which wording they saw.
struct ConsumptionConsentRequest: Codable, RefusesNull {
    var consented: Bool
    var textVersion: String
}

/// The user's latest answer; `consented` false and no `recordedAt` when they never answered.
struct ConsumptionConsentDTO: Codable {
    var userId: String
    var consented: Bool
    var textVersion: String?
    var recordedAt: APITime?

    init(_ consent: ConsumptionConsent?, userId: String) {
        self.userId = userId
        consented = consent?.consented ?? false
        textVersion = consent?.textVersion
        recordedAt = consent.map { APITime($0.recordedAt) }
    }
}

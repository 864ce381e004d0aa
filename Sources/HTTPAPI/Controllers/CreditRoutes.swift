import Domain
import Foundation
import Hummingbird
import UseCases

/// `/api/credits…`: a user's balances, history, lots, reservations and purchase eligibility.
struct CreditRoutes {
    let creditQueries: CreditQueries
    let verifyPurchase: VerifyPurchase
    let reserveCredits: ReserveCredits
    let commitReservation: CommitReservation
    let releaseReservation: ReleaseReservation
    let clock: any BerthClock

    /// Reads (client keys too) and spending (the user's own token or the backend's server key).
    /// This controller's routes, one collection per group of callers (added in `buildRouter`).
    struct Routes {
        let reads = RouteCollection(context: UserContext.self)
        let spending = RouteCollection(context: AccountContext.self)
    }

    var routes: Routes {
        let routes = Routes()
        routes.reads.get("/api/credits", use: getCredits)
        routes.reads.get("/api/credits/transactions", use: getCreditsTransactions)
        routes.reads.get("/api/credits/lots", use: getCreditsLots)
        routes.reads.get("/api/credits/purchase-eligibility", use: getCreditsPurchaseEligibility)
        routes.spending.post("/api/credits/reservations", use: postCreditsReservations)
        routes.spending.post("/api/credits/reservations/{id}/commit", use: postCreditsReservationsCommit)
        routes.spending.post("/api/credits/reservations/{id}/release", use: postCreditsReservationsRelease)
        return routes
    }

    /// `GET /api/credits`
    func getCredits(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let (runtime, userId) = (context.tenant, context.userId)
        let balances = try await creditQueries.balances(
            runtime,
            userId: userId,
            claimingWaitingWith: (context.caller.provesUser ? verifyPurchase.claims : nil)
        )
        return try JSONCoding.response(CreditsResponse(credits: balances.map(CreditBalanceDTO.init)))
    }

    /// `GET /api/credits/transactions`
    func getCreditsTransactions(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let (runtime, userId) = (context.tenant, context.userId)
        let page = try Paging.page(request)
        let filter = try LedgerQuery.filter(request, settings: try CreditRequests.settings(runtime), forAdmin: false)
        let result = try await creditQueries.history(runtime, userId: userId, filter: filter, page: page)
        return try JSONCoding.response(
            CreditTransactionsResponse(
                transactions: result.items.map(LedgerEntryDTO.init),
                meta: LedgerPageMeta(total: result.total, limit: page.limit, offset: page.offset)
            )
        )
    }

    /// `GET /api/credits/lots`
    func getCreditsLots(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let (runtime, userId) = (context.tenant, context.userId)
        let type = request.uri.queryParameters["creditType"].map(String.init)
        let page = try Paging.page(request)
        let lots = try await creditQueries.lots(runtime, userId: userId, creditType: type, page: page)
        return try JSONCoding.response(
            CreditLotsResponse(
                lots: lots.items.map { CreditLotDTO($0.lot, uses: $0.uses) },
                meta: LedgerPageMeta(total: lots.total, limit: page.limit, offset: page.offset)
            )
        )
    }

    /// `GET /api/credits/purchase-eligibility`
    func getCreditsPurchaseEligibility(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let (runtime, userId) = (context.tenant, context.userId)
        guard let productId = request.uri.queryParameters["productId"].map(String.init), !productId.isEmpty else {
            throw APIError(.badRequest, .missingField, "productId is required", field: "productId")
        }
        let answer = try await creditQueries.eligibility(runtime, userId: userId, productId: productId)
        return try JSONCoding.response(
            EligibilityResponse(
                productId: productId,
                creditType: answer.product.creditType,
                eligible: answer.eligible,
                reason: answer.reason
            )
        )
    }

    /// `POST /api/credits/reservations`
    func postCreditsReservations(_ request: Request, context: AccountContext) async throws -> some ResponseGenerator {
        let (runtime, userId) = (context.tenant, context.userId)
        let body = try await JSONCoding.decode(ReserveCreditsRequest.self, from: request)
        // An Idempotency-Key is the reservation's reference when the body names none (V5).
        let reference = try Self.text(body.reference, field: "reference") ?? IdempotencyKey.read(request)
        let profileId = try Self.text(body.profileId, field: "profileId")
        let result = try await reserveCredits(
            runtime,
            userId: userId,
            amount: body.amount,
            creditType: body.creditType,
            reference: reference,
            profileId: profileId
        )
        return try respond(result, status: result.repeated ? .ok : .created)
    }

    /// `POST /api/credits/reservations/{id}/commit`
    func postCreditsReservationsCommit(_ request: Request, context: AccountContext) async throws -> some ResponseGenerator {
        let result = try await commitReservation(
            context.tenant,
            userId: context.userId,
            reservationId: try Self.reservationId(context),
            actor: context.caller.actor
        )
        return try respond(result, status: .ok)
    }

    /// `POST /api/credits/reservations/{id}/release`
    func postCreditsReservationsRelease(_ request: Request, context: AccountContext) async throws -> some ResponseGenerator {
        let result = try await releaseReservation(context.tenant, userId: context.userId, reservationId: try Self.reservationId(context))
        return try respond(result, status: .ok)
    }

    private func respond(_ result: CreditReservationResult, status: HTTPResponse.Status) throws -> Response {
        try JSONCoding.response(
            ReservationResponse(reservation: ReservationDTO(result.reservation, now: clock.now()), credits: CreditBalanceDTO(result.credits)),
            status: status
        )
    }

    static func reservationId(_ context: some RequestContext) throws -> Int64 {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw APIError(.notFound, .reservationNotFound, "reservation ids are positive integers", field: "id")
        }
        return id
    }

    /// An optional app-supplied string: trimmed, nil when empty, at most 200 characters.
    static func text(_ value: String?, field: String) throws -> String? {
        guard let value = value?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else { return nil }
        guard Text.length(value) <= 200 else { throw APIError(.badRequest, .invalidField, "\(field) is limited to 200 characters", field: field) }
        return value
    }
}

/// Ledger filters from a query string: `type` (entry type), `creditType`, `status`, `from`, `to`,
/// and for operators `userId` and `productId`.
enum LedgerQuery {
    static func filter(_ request: Request, settings: CreditSettings, forAdmin: Bool) throws -> LedgerFilter {
        let query = request.uri.queryParameters
        var filter = LedgerFilter()
        if let text = query["type"] {
            guard let type = LedgerEntryType(rawValue: String(text)) else {
                throw APIError(
                    .badRequest,
                    .invalidQuery,
                    "type must be one of \(LedgerEntryType.allCases.map(\.rawValue).joined(separator: ", "))",
                    field: "type"
                )
            }
            filter.type = type
        }
        if let text = query["creditType"] {
            guard settings.types.contains(String(text)) else {
                throw APIError(.badRequest, .invalidQuery, "creditType must be one of \(settings.types.joined(separator: ", "))", field: "creditType")
            }
            filter.creditType = String(text)
        }
        if let text = query["status"] {
            guard let status = LedgerEntryStatus(rawValue: String(text)) else {
                throw APIError(
                    .badRequest,
                    .invalidQuery,
                    "status must be one of \(LedgerEntryStatus.allCases.map(\.rawValue).joined(separator: ", "))",
                    field: "status"
                )
            }
            filter.status = status
        }
        filter.from = try Paging.time(request, "from")
        filter.to = try Paging.time(request, "to")
        if forAdmin {
            filter.userId = query["userId"].map(String.init)
            filter.productId = query["productId"].map(String.init)
        }
        return filter
    }
}

// MARK: - Request and answer types of these routes

struct CreditsResponse: Codable {
    var credits: [CreditBalanceDTO]
}

struct CreditTransactionsResponse: Codable {
    var transactions: [LedgerEntryDTO]
    var meta: LedgerPageMeta
}

struct CreditLotsResponse: Codable {
    var lots: [CreditLotDTO]
    var meta: LedgerPageMeta
}

struct ReserveCreditsRequest: Codable, RefusesNull {
    var amount: Int64
    var creditType: String?
    var reference: String?
    var profileId: String?
}

struct ReservationResponse: Codable {
    var success = true
    var reservation: ReservationDTO
    var credits: CreditBalanceDTO
}

struct EligibilityResponse: Codable {
    var productId: String
    var creditType: String
    var eligible: Bool
    /// `eligible`, `unused_credit` (a credit of this type waits to be used), `product_inactive`.
    var reason: String
}

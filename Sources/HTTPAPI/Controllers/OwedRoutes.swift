import Domain
import Foundation
import Hummingbird
import UseCases

/// `GET /api/admin/owed` and `POST /api/admin/owed/{id}/resolve`: money owed to customers for
/// bookings that will not take place, and an operator's closing of a store-paid one.
struct OwedRoutes {
    let owed: OwedToCustomers
    let bookingLookup: BookingLookup

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<AdminRequestContext> {
        let router = RouteCollection(context: AdminRequestContext.self)
        router.get("/api/admin/owed", use: list)
        router.post("/api/admin/owed/{id}/resolve", use: resolve)
        return router
    }

    func list(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let status = request.uri.queryParameters["status"].map(String.init) ?? "open"
        guard status == "open" || status == "resolved" else {
            throw APIError(.badRequest, .invalidQuery, "status must be open or resolved", field: "status")
        }
        let items = try await owed.list(runtime: context.tenant, resolved: status == "resolved")
        let resources = context.tenant.tenant.resourceNames
        return try JSONCoding.response(
            OwedListResponse(
                status: status,
                items: items.map { OwedPaymentDTO($0, resourceName: resources[$0.booking.resourceId]) },
                totals: OwedTotal.of(items).map(OwedTotalDTO.init)
            )
        )
    }

    func resolve(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        let body = try await JSONCoding.decode(ResolveOwedRequest.self, from: request)
        guard let how = OwedPayment.Resolution(rawValue: body.how), how != .policyKept else {
            throw APIError(.badRequest, .invalidField, "how must be customer_told, credited or refunded_elsewhere", field: "how")
        }
        let note = body.note?.trimmingCharacters(in: .whitespacesAndNewlines)
        if let note, Text.length(note) > 500 { throw APIError(.badRequest, .invalidField, "note is limited to 500 characters", field: "note") }
        let closed = try await owed.resolve(
            runtime: context.tenant,
            bookingId: id,
            how: how,
            note: note?.isEmpty == true ? nil : note,
            actor: context.actor
        )
        let resources = context.tenant.tenant.resourceNames
        return try JSONCoding.response(ResolveOwedResponse(items: closed.map { OwedPaymentDTO($0, resourceName: resources[$0.booking.resourceId]) }))
    }
}

struct ResolveOwedRequest: Codable, RefusesNull {
    var how: String
    var note: String?
}

struct ResolveOwedResponse: Codable {
    var items: [OwedPaymentDTO]
}

struct OwedListResponse: Codable {
    var status: String
    var items: [OwedPaymentDTO]
    var totals: [OwedTotalDTO]
}

struct OwedTotalDTO: Codable {
    var currency: String
    var count: Int
    var amountMinor: Int64

    init(_ total: OwedTotal) { (currency, count, amountMinor) = (total.currency, total.count, total.amountMinor) }
}

/// One booking's money owed through one rail.
struct OwedPaymentDTO: Codable {
    var bookingId: Int64
    var reference: String
    var userId: String
    var resourceId: String
    var resourceName: String?
    var start: APITime
    var end: APITime
    var localStart: String
    var localEnd: String
    var timeZone: String
    var bookingStatus: String
    var statusReason: String?
    var rail: String
    var reason: String
    var amountMinor: Int64
    var currency: String
    /// The store signed no price: the amount is the booking's price for the units paid.
    var amountFromBooking: Bool
    var purchaseIds: [Int64]
    var since: APITime
    /// `refund` (card: Berth refunds it) or `customer` (a store refunds it: tell the customer).
    var resolvedBy: String
    var guidance: String
    var resolution: OwedResolutionDTO?

    init(_ owed: OwedPayment, resourceName: String?) {
        let b = owed.booking
        bookingId = b.id
        reference = b.reference
        userId = b.userId
        resourceId = b.resourceId
        self.resourceName = resourceName
        start = APITime(b.start)
        end = APITime(b.end)
        localStart = b.localStart
        localEnd = b.localEnd
        timeZone = b.zoneName
        bookingStatus = b.status.rawValue
        statusReason = b.statusReason
        rail = owed.rail.rawValue
        reason = owed.reason.rawValue
        amountMinor = owed.amountMinor
        currency = owed.currency
        amountFromBooking = owed.amountFromBooking
        purchaseIds = owed.purchaseIds
        since = APITime(owed.since)
        resolvedBy = owed.rail.resolvedBy
        guidance = owed.guidance
        resolution = owed.resolved.map { OwedResolutionDTO(how: $0.how.rawValue, note: $0.note, actor: $0.actor, at: APITime($0.at)) }
    }
}

struct OwedResolutionDTO: Codable {
    var how: String
    var note: String?
    var actor: String
    var at: APITime
}

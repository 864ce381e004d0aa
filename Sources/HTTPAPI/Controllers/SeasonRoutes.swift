import Domain
import Foundation
import HTTPTypes
import Hummingbird
import UseCases

/// A season's daily changes (issue "Run the season"): customers move and cancel their own bookings
/// under the cancellation policy; operators move any booking and set season prices.
struct SeasonRoutes {
    let move: MoveBooking
    let cancel: CancelBooking
    let inventory: ManageInventory
    let bookingLookup: BookingLookup
    let limiter: RateLimiter

    /// This controller's routes, one collection per group of callers (added in `buildRouter`).
    struct Routes {
        let changing = RouteCollection(context: BookingContext.self)
        let reading = RouteCollection(context: UserContext.self)
        let admin = RouteCollection(context: AdminRequestContext.self)
    }

    var routes: Routes {
        let routes = Routes()
        routes.changing.post("/api/bookings/{id}/move", use: postBookingsMove)
        routes.reading.get("/api/bookings/{id}/cancellation", use: getBookingsCancellation)
        routes.changing.post("/api/bookings/{id}/cancel", use: postBookingsCancel)
        routes.admin.post("/api/admin/bookings/{id}/move", use: postAdminBookingsMove)
        routes.admin.post("/api/admin/resources/{id}/prices", use: postAdminResourcesPrices)
        return routes
    }

    /// `POST /api/bookings/{id}/move`
    func postBookingsMove(_ request: Request, context: BookingContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(MoveBookingRequest.self, from: request)
        guard body.resourceId == nil else {
            throw APIError(.forbidden, .forbidden, "only an operator moves a booking to another resource", field: "resourceId")
        }
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        let moved = try await move(body.command(runtime: context.tenant, bookingId: id, userId: context.userId, actor: context.caller.actor))
        return try MoveBookingResponse.response(moved)
    }

    /// `GET /api/bookings/{id}/cancellation`
    func getBookingsCancellation(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        try await Paging.userBooking(context, lookup: bookingLookup, limiter: limiter) { id in
            let (booking, quote) = try await cancel.quote(runtime: context.tenant, bookingId: id, userId: context.userId)
            return try JSONCoding.response(CancellationQuoteResponse(booking: booking, quote: quote))
        }
    }

    /// `POST /api/bookings/{id}/cancel`
    func postBookingsCancel(_ request: Request, context: BookingContext) async throws -> some ResponseGenerator {
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        let done = try await cancel(runtime: context.tenant, bookingId: id, userId: context.userId, actor: context.caller.actor)
        return try JSONCoding.response(
            CancelBookingResponse(
                booking: BookingDTO(done.booking),
                cancellation: CancellationQuoteResponse(booking: done.booking, quote: done.quote),
                refund: done.refund.map { CancelBookingResponse.Refund(id: $0.id, amountMinor: $0.amountMinor, status: $0.status.rawValue) }
            )
        )
    }

    /// `POST /api/admin/bookings/{id}/move`
    func postAdminBookingsMove(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(MoveBookingRequest.self, from: request)
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        let moved = try await move(body.command(runtime: context.tenant, bookingId: id, userId: nil, actor: context.actor))
        return try MoveBookingResponse.response(moved)
    }

    /// `POST /api/admin/resources/{id}/prices`
    func postAdminResourcesPrices(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let rule = try await JSONCoding.decode(PriceRuleRequest.self, from: request).rule
        guard let id = context.parameters.get("id") else { throw APIError(.notFound, .resourceNotFound, "name a resource", field: "id") }
        let saved = try await inventory.update(runtime: context.tenant, id: id, actor: context.actor) { resource in
            var priced = resource
            priced.prices = (resource.prices ?? []) + [rule]
            return priced
        }
        return try JSONCoding.response(InventoryItemResponse(resource: InventoryItemDTO(saved)), status: .created)
    }
}

/// `POST /api/bookings/{id}/move` and `POST /api/admin/bookings/{id}/move`: the new place, as a
/// booking names it (a rental's start and end, an experience's slot); an operator may name another
/// resource of the same product.
struct MoveBookingRequest: Codable, RefusesNull {
    var start: BookingTimeText?
    var end: BookingTimeText?
    var slot: BookingTimeText?
    var resourceId: String?

    func command(runtime: TenantRuntime, bookingId: Int64, userId: String?, actor: Actor) -> MoveBooking.Command {
        MoveBooking.Command(
            runtime: runtime,
            bookingId: bookingId,
            userId: userId,
            actor: actor,
            start: start?.time,
            end: end?.time,
            slot: slot?.time,
            resourceId: resourceId
        )
    }
}

/// A move's answer: 200 with the booking at its new place; 202 when the new place costs more than
/// was paid: the booking as it is, and `difference`, a booking of the new place at the difference
/// that holds it while it is paid through the usual rails (card, or a rental's band product). Once
/// paid, the booking moves there and the difference's booking is gone (webhook `booking.moved`).
struct MoveBookingResponse: Codable {
    var booking: BookingDTO
    var difference: BookingDTO?
    var message: String?

    static func response(_ moved: MoveBooking.Moved) throws -> Response {
        guard let difference = moved.difference else { return try JSONCoding.response(MoveBookingResponse(booking: BookingDTO(moved.booking))) }
        let amount = CurrencyUnits.text(minor: difference.priceMinor, currency: difference.currency)
        return try JSONCoding.response(
            MoveBookingResponse(
                booking: BookingDTO(moved.booking),
                difference: BookingDTO(difference),
                message:
                    "the new place costs \(amount) more: it is held until \(APITime.format(difference.holdExpiresAt)); pay booking \(difference.reference) and the booking moves there"
            ),
            status: .accepted
        )
    }
}

/// `POST /api/admin/resources/{id}/prices`: a season's price (``PriceRule``), added after the others.
struct PriceRuleRequest: Codable, RefusesNull {
    var from: String
    var to: String
    var weekdays: [String]?
    var pricePerDayMinor: Int64?
    var pricePerSeatMinor: Int64?

    var rule: PriceRule {
        PriceRule(from: from, to: to, weekdays: weekdays, pricePerDayMinor: pricePerDayMinor, pricePerSeatMinor: pricePerSeatMinor)
    }
}

/// `GET /api/bookings/{id}/cancellation`: what cancelling now gives back.
struct CancellationQuoteResponse: Codable {
    var bookingId: Int64
    var status: String
    /// Whether the customer may cancel now; when not, `code` says why.
    var allowed: Bool
    var code: String?
    var refundPercent: Int
    var paidMinor: Int64
    var refundMinor: Int64
    var currency: String
    /// `card`, `app_store`, `google_play` or `none` (nothing paid through Berth).
    var rail: String
    /// Whole hours left before the start (negative once it began).
    var hoursBefore: Int
    /// What the app shows the customer.
    var message: String

    init(booking: Booking, quote: CancellationQuote) {
        bookingId = booking.id
        status = booking.status.rawValue
        allowed = quote.allowed
        code = quote.refusal?.rawValue
        refundPercent = quote.refundPercent
        paidMinor = quote.paidMinor
        refundMinor = quote.refundMinor
        currency = quote.currency
        rail = quote.rail.rawValue
        hoursBefore = Int(max(-1e9, min(1e9, quote.hoursLeft.rounded(.down))))
        message = quote.words
    }
}

/// `POST /api/bookings/{id}/cancel`: the booking as cancelled, what the policy gave back, and the
/// card refund asked of Stripe (its status follows Stripe's answer).
struct CancelBookingResponse: Codable {
    struct Refund: Codable {
        var id: Int64
        var amountMinor: Int64
        var status: String
    }

    var booking: BookingDTO
    var cancellation: CancellationQuoteResponse
    var refund: Refund?
}

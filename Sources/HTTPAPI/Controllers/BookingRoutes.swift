import Domain
import Foundation
import HTTPTypes
import Hummingbird
import UseCases

/// `POST /api/bookings`, `GET /api/bookings`, `GET /api/bookings/{id}`: a user's own bookings.
struct BookingRoutes {
    let createBooking: CreateBooking
    let metrics: BerthMetrics
    let queries: BookingQueries
    let bookingLookup: BookingLookup
    let limiter: RateLimiter

    /// This controller's routes, one collection per group of callers (added in `buildRouter`).
    struct Routes {
        let creating = RouteCollection(context: BookingContext.self)
        let reading = RouteCollection(context: UserContext.self)
    }

    var routes: Routes {
        let routes = Routes()
        routes.creating.post("/api/bookings", use: postBookings)
        routes.reading.get("/api/bookings", use: list)
        routes.reading.get("/api/bookings/{id}", use: getBookings)
        return routes
    }

    /// `POST /api/bookings`
    func postBookings(_ request: Request, context: BookingContext) async throws -> some ResponseGenerator {
        try await self.create(request, context)
    }

    /// `GET /api/bookings/{id}`
    func getBookings(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        try await show(context)
    }

    func create(_ request: Request, _ context: BookingContext) async throws -> Response {
        let (runtime, userId, via) = (context.tenant, context.userId, context.caller.actor)
        let body = try await JSONCoding.decode(CreateBookingRequest.self, from: request)
        let key = try IdempotencyKey.read(request)
        let created: CreateBooking.Created
        do {
            created = try await createBooking.create(
                .init(
                    runtime: runtime,
                    userId: userId,
                    createdVia: via,
                    request: BookingRequest(
                        resourceId: body.resourceId,
                        start: body.start?.time,
                        end: body.end?.time,
                        slot: body.slot?.time,
                        seats: body.seats
                    ),
                    idempotencyKey: key
                )
            )
        } catch let error as DomainError where error.code == .tooManyPendingBookings {
            // Operators alert on this: a slot full of unpaid holds refuses paying customers.
            metrics.count(
                "berth_booking_holds_refused_total",
                [("tenant", runtime.id), ("cap", error.field == "resourceId" ? "resource" : "user_or_key")]
            )
            throw error
        }
        // A repeated request answers as the first did (201), saying it is a repeat.
        var response = try JSONCoding.response(BookingResponse(booking: BookingDTO(created.booking)), status: .created)
        if created.repeated { response.headers[IdempotencyKey.replayed] = "true" }
        return response
    }

    func list(_ request: Request, _ context: UserContext) async throws -> Response {
        let (tenant, userId) = (context.tenant, context.userId)
        let page = try Paging.page(request)
        let result = try await queries.list(tenantId: tenant.id, userId: userId, page: page)
        return try JSONCoding.response(
            ListResponse(items: result.items.map { BookingDTO($0) }, total: result.total, limit: page.limit, offset: page.offset)
        )
    }

    func show(_ context: UserContext) async throws -> Response {
        let (tenant, userId) = (context.tenant, context.userId)
        return try await Paging.userBooking(context, lookup: bookingLookup, limiter: limiter) { id in
            guard let (booking, payment) = try await queries.own(id, tenantId: tenant.id, userId: userId) else {
                throw DomainError.bookingNotFound(id)
            }
            return try JSONCoding.response(BookingResponse(booking: BookingDTO(booking, payment: payment)))
        }
    }
}

/// Query and path parameters shared by listings.
enum Paging {
    static func page(_ request: Request) throws -> Page {
        let query = request.uri.queryParameters
        func integer(_ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
            guard let text = query[name[...]] else { return value }
            guard let number = Int(text), range.contains(number) else {
                throw APIError(.badRequest, .invalidQuery, "\(name) must be an integer in \(range.lowerBound)...\(range.upperBound)", field: name)
            }
            return number
        }
        return Page(
            limit: try integer("limit", default: 50, range: 1...Page.maximumLimit),
            offset: try integer("offset", default: 0, range: 0...Page.maximumOffset)
        )
    }

    /// The booking a path's `{id}` names: its id, or its reference (`K7MX2QA`, any case, spaces or
    /// dashes allowed) looked up within the tenant.
    static func bookingId(_ context: some RequestContext, tenantId: String, lookup: BookingLookup) async throws -> Int64 {
        guard let text = context.parameters.get("id") else {
            throw APIError(.notFound, .bookingNotFound, "name a booking by its id or its reference", field: "id")
        }
        return try await bookingId(text.removingPercentEncoding ?? text, field: "id", tenantId: tenantId, lookup: lookup)
    }

    /// A user's booking named by the path's `{id}`, handed to `body`. Whether the booking does not
    /// exist or is someone else's, the caller gets one answer naming what it sent (never the internal
    /// id of a reference it guessed), and the miss counts against its key's lookup budget: guessing
    /// references is refused with 429 once the budget is spent (V9).
    static func userBooking<T>(
        _ context: UserContext,
        lookup: BookingLookup,
        limiter: RateLimiter,
        _ body: (Int64) async throws -> T
    ) async throws -> T {
        let sent = context.parameters.get("id").map { $0.removingPercentEncoding ?? $0 } ?? ""
        try limiter.admitLookup(context.caller)
        func missing() -> APIError {
            limiter.lookupFailed(context.caller)
            let named = Int64(sent) != nil ? sent : (BookingReference.normalized(sent) ?? String(sent.prefix(32)))
            return APIError(.notFound, .bookingNotFound, "no booking \(named) for this user", field: "id")
        }
        do {
            return try await body(try await bookingId(context, tenantId: context.tenant.id, lookup: lookup))
        } catch let error as DomainError where error.code == .bookingNotFound {
            throw missing()
        } catch let error as APIError where error.code == .bookingNotFound {
            throw missing()
        }
    }

    /// A booking named by an operator or a path: its id (digits), or its reference looked up within the tenant.
    static func bookingId(_ text: String, field: String, tenantId: String, lookup: BookingLookup) async throws -> Int64 {
        if let id = Int64(text) {
            guard id > 0 else { throw APIError(.notFound, .bookingNotFound, "booking ids are positive integers", field: field) }
            return id
        }
        guard let reference = BookingReference.normalized(text) else {
            throw APIError(.notFound, .bookingNotFound, "a booking is named by its id (digits) or its 7-character reference", field: field)
        }
        guard let id = try await lookup.id(reference: reference, tenantId: tenantId) else {
            throw APIError(.notFound, .bookingNotFound, "no booking \(reference)", field: field)
        }
        return id
    }

    static func time(_ request: Request, _ name: String) throws -> Date? {
        guard let text = request.uri.queryParameters[name[...]] else { return nil }
        guard let date = APITime.parse(String(text)) else {
            throw APIError(.badRequest, .invalidQuery, "\(name) must be an ISO 8601 date-time", field: name)
        }
        return date
    }
}

/// The `Idempotency-Key` header of `POST /api/bookings` and `POST /api/credits/reservations` (V5): a
/// client that retries a creation after a lost answer sends the same key and gets the first one's
/// result. 1–200 visible ASCII characters.
enum IdempotencyKey {
    static let name = HTTPField.Name("Idempotency-Key")!
    /// Set on an answer that repeats an earlier request's.
    static let replayed = HTTPField.Name("Idempotent-Replayed")!

    static func read(_ request: Request) throws -> String? {
        guard let value = request.headers[name] else { return nil }
        guard (1...200).contains(value.utf8.count), value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError(.badRequest, .invalidField, "Idempotency-Key must be 1 to 200 visible ASCII characters", field: "Idempotency-Key")
        }
        return value
    }
}

// MARK: - Request and answer types of these routes

struct CreateBookingRequest: Codable, RefusesNull {
    var resourceId: String
    var start: BookingTimeText?
    var end: BookingTimeText?
    var slot: BookingTimeText?
    var seats: Int?
}

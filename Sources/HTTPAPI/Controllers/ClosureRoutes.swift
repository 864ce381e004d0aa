import Domain
import Foundation
import Hummingbird
import UseCases

/// Closures (admin key): `POST /api/admin/closures {resourceId?, from, to, reason}`, `GET
/// /api/admin/closures[?deleted=true]`, `DELETE /api/admin/closures/{id}`. `from` and `to` are local
/// dates (`2026-08-15`: the whole day; `to` is the last day closed), local times (`2026-08-15T14:00`)
/// in the resource's zone (else the app's), or instants with an offset.
struct ClosureRoutes {
    let closures: ManageClosures
    let refund: RefundCardBooking
    let cancel: AdminBookingTransition
    let move: MoveBooking
    let bookingLookup: BookingLookup

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<AdminRequestContext> {
        let router = RouteCollection(context: AdminRequestContext.self)
        router.post("/api/admin/closures", use: postAdminClosures)
        router.get("/api/admin/closures", use: getAdminClosures)
        router.post("/api/admin/closures/{id}/resolve", use: postAdminClosuresResolve)
        router.delete("/api/admin/closures/{id}", use: deleteAdminClosures)
        return router
    }

    /// `POST /api/admin/closures`
    func postAdminClosures(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(CreateClosureRequest.self, from: request)
        let zone = Self.zone(of: body.resourceId, in: context.tenant.tenant)
        let start = try Self.time(body.from, zone: zone, field: "from", endOfDay: false)
        let end = try Self.time(body.to, zone: zone, field: "to", endOfDay: true)
        let made = try await closures.create(
            runtime: context.tenant,
            resourceId: body.resourceId,
            start: start,
            end: end,
            reason: body.reason,
            actor: context.actor
        )
        return try JSONCoding.response(ClosureDTO(made, zone: zone), status: .created)
    }

    /// `GET /api/admin/closures`
    func getAdminClosures(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let deleted = request.uri.queryParameters["deleted"].map(String.init)
        guard deleted == nil || deleted == "true" || deleted == "false" else {
            throw APIError(.badRequest, .invalidQuery, "deleted must be true or false", field: "deleted")
        }
        let tenant = context.tenant.tenant
        let items = try await closures.list(runtime: context.tenant, includingDeleted: deleted == "true")
        return try JSONCoding.response(
            ClosureListResponse(
                closures: items.map { ClosureDTO($0, zone: Self.zone(of: $0.closure.resourceId, in: tenant)) }
            )
        )
    }

    /// `POST /api/admin/closures/{id}/resolve`
    func postAdminClosuresResolve(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let id = try Self.id(context)
        let body = try await JSONCoding.decode(ResolveClosureRequest.self, from: request)
        let runtime = context.tenant
        let closure: Closure, results: [ManageClosures.Resolved]
        switch body.action {
        case "cancel":
            guard body.moves == nil else { throw APIError(.badRequest, .invalidField, "moves go with action move", field: "moves") }
            (closure, results) = try await closures.cancelInside(
                runtime: runtime,
                id: id,
                actor: context.actor,
                refund: runtime.stripe == nil ? nil : refund,
                cancel: cancel
            )
        case "move":
            guard let moves = body.moves, !moves.isEmpty, moves.count <= 500 else {
                throw APIError(
                    .badRequest,
                    .missingField,
                    "action move names 1 to 500 moves: {bookingId, slot | start and end, resourceId?}",
                    field: "moves"
                )
            }
            var relocations: [ManageClosures.Relocation] = []
            for entry in moves {
                let bookingId = try await Paging.bookingId(entry.bookingId, field: "moves", tenantId: runtime.id, lookup: bookingLookup)
                relocations.append(
                    .init(
                        bookingId: bookingId,
                        start: entry.start?.time,
                        end: entry.end?.time,
                        slot: entry.slot?.time,
                        resourceId: entry.resourceId
                    )
                )
            }
            (closure, results) = try await closures.moveInside(runtime: runtime, id: id, actor: context.actor, moves: relocations, move: move)
        default:
            throw APIError(.badRequest, .invalidField, "action is cancel or move", field: "action")
        }
        let zone = Self.zone(of: closure.resourceId, in: runtime.tenant)
        return try JSONCoding.response(
            ResolveClosureResponse(
                closure: ClosureDTO(ManageClosures.Made(closure: closure, bookingsInside: []), zone: zone),
                results: results.map { ResolvedBookingDTO(booking: BookingDTO($0.booking), outcome: $0.outcome.rawValue, message: $0.message) }
            )
        )
    }

    /// `DELETE /api/admin/closures/{id}`
    func deleteAdminClosures(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        try await closures.delete(runtime: context.tenant, id: try Self.id(context), actor: context.actor)
        return Response(status: .noContent)
    }

    static func id(_ context: AdminRequestContext) throws -> Int64 {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw APIError(.badRequest, .invalidField, "name a closure by its id", field: "id")
        }
        return id
    }

    /// The zone a closure's dates are read and shown in: its resource's, else the app's.
    static func zone(of resourceId: String?, in tenant: Tenant) -> TimeZone {
        resourceId.flatMap { tenant.resource(id: $0) }.map { tenant.slotTimeZone($0) } ?? tenant.zone
    }

    /// A local date (its midnight; with `endOfDay` the next midnight, so the day is closed whole), a
    /// local time in `zone`, or an instant with its offset.
    static func time(_ text: String, zone: TimeZone, field: String, endOfDay: Bool) throws -> Date {
        if let local = LocalDateTime.parse(text) {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            guard let instant = local.instants(in: zone).first else {
                throw APIError(
                    .badRequest,
                    .invalidField,
                    "\(field): \(text) does not exist in \(ZonedTime.name(zone)) (a daylight-saving change)",
                    field: field
                )
            }
            guard local.dateOnly, endOfDay else { return instant }
            guard let next = calendar.date(byAdding: .day, value: 1, to: instant) else {
                throw APIError(.badRequest, .invalidField, "\(field): \(text) is out of range", field: field)
            }
            return next
        }
        guard let instant = APITime.parse(text) else {
            throw APIError(
                .badRequest,
                .invalidField,
                "\(field) is a local date (2026-08-15), a local time (2026-08-15T14:00) or an instant with its offset",
                field: field
            )
        }
        return instant
    }
}

struct CreateClosureRequest: Codable, RefusesNull {
    var resourceId: String?
    var from: String
    var to: String
    var reason: String
    static var nullable: Set<String> { ["resourceId"] }
}

struct ClosureDTO: Codable {
    var id: Int64
    /// Absent: every resource of the app.
    var resourceId: String?
    var from: APITime
    var to: APITime
    /// The same two times in the resource's zone, with its offset.
    var localFrom: String
    var localTo: String
    var timeZone: String
    var reason: String
    var createdAt: APITime
    var deletedAt: APITime?
    /// The confirmed bookings, and pending ones still in their hold, that the closure covers: the operator's to resolve.
    var bookingsInside: [BookingDTO]

    init(_ made: ManageClosures.Made, zone: TimeZone) {
        let c = made.closure
        id = c.id
        resourceId = c.resourceId
        from = APITime(c.start)
        to = APITime(c.end)
        localFrom = ZonedTime.format(c.start, in: zone)
        localTo = ZonedTime.format(c.end, in: zone)
        timeZone = ZonedTime.name(zone)
        reason = c.reason
        createdAt = APITime(c.createdAt)
        deletedAt = c.deletedAt.map(APITime.init)
        bookingsInside = made.bookingsInside.map { BookingDTO($0) }
    }
}

struct ClosureListResponse: Codable {
    var closures: [ClosureDTO]
}

struct ResolveClosureRequest: Codable, RefusesNull {
    /// One booking's new place: the booking (id or reference), and a slot or a start and end.
    struct Move: Codable, RefusesNull {
        /// The booking's id (a number, as bookings carry it) or its reference.
        var bookingId: String
        var start: BookingTimeText?
        var end: BookingTimeText?
        var slot: BookingTimeText?
        var resourceId: String?

        enum CodingKeys: String, CodingKey { case bookingId, start, end, slot, resourceId }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let number = try? container.decode(Int64.self, forKey: .bookingId) {
                bookingId = String(number)
            } else {
                bookingId = try container.decode(String.self, forKey: .bookingId)
            }
            start = try container.decodeIfPresent(BookingTimeText.self, forKey: .start)
            end = try container.decodeIfPresent(BookingTimeText.self, forKey: .end)
            slot = try container.decodeIfPresent(BookingTimeText.self, forKey: .slot)
            resourceId = try container.decodeIfPresent(String.self, forKey: .resourceId)
        }
    }

    /// `cancel`: every booking inside is cancelled (card payments refunded in full; store-paid ones
    /// owed). `move`: the bookings named in `moves` go to their new places.
    var action: String
    var moves: [Move]?
}

struct ResolvedBookingDTO: Codable {
    var booking: BookingDTO
    /// `refunded`, `cancelled_owed`, `cancelled` or `failed` (with `message`).
    var outcome: String
    var message: String?
}

struct ResolveClosureResponse: Codable {
    var closure: ClosureDTO
    var results: [ResolvedBookingDTO]
}

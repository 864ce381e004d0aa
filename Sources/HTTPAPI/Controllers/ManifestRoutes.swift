import Domain
import Foundation
import Hummingbird
import UseCases

/// `GET /api/admin/manifest?date=YYYY-MM-DD[&resourceId=][&format=csv]`: the day's departures, per
/// resource and slot, in each resource's local day.
struct ManifestRoutes {
    let views: OperatorViewQueries

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<AdminRequestContext> {
        let router = RouteCollection(context: AdminRequestContext.self)
        router.get("/api/admin/manifest", use: manifest)
        return router
    }

    func manifest(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let tenant = context.tenant.tenant
        guard let date = query["date"].map(String.init), Manifest.day(date, in: ZonedTime.utc) != nil else {
            throw APIError(.badRequest, .invalidQuery, "date must be a day, YYYY-MM-DD (the resources' local day)", field: "date")
        }
        let resourceId = query["resourceId"].map(String.init)
        if let resourceId, tenant.resources.first(where: { $0.id == resourceId }) == nil {
            throw APIError(.notFound, .resourceNotFound, "no resource \(resourceId)", field: "resourceId")
        }
        let tenantId = context.tenant.id
        let manifest = try await views.manifest(context.tenant, date: date, resourceId: resourceId)
        if try AdminCreditRoutes.wantsCSV(request) {
            return Response(
                status: .ok,
                headers: [.contentType: "text/csv; charset=utf-8", .contentDisposition: "attachment; filename=\"\(tenantId)-manifest-\(date).csv\""],
                body: .init(byteBuffer: ByteBuffer(string: ManifestCSV.render(manifest)))
            )
        }
        return try JSONCoding.response(ManifestResponse(manifest))
    }
}

struct ManifestResponse: Codable {
    struct Entry: Codable {
        var bookingId: Int64
        var reference: String
        var userId: String
        var seats: Int
        /// `paid`, `part_paid` or `unpaid`.
        var payment: String
        var paidVia: [String]
        var amountPaid: Int64
        var currency: String
        var status: String
        var statusReason: String?
        var holdExpiresAt: APITime?
    }

    struct Slot: Codable {
        var start: APITime
        var localStart: String
        var localEnd: String
        var seats: Int
        var bookings: [Entry]
    }

    struct Departures: Codable {
        var resourceId: String
        var name: String
        var kind: String
        var timeZone: String
        var dayStart: APITime
        var dayEnd: APITime
        var seats: Int
        var slots: [Slot]
    }

    var date: String
    var resources: [Departures]

    init(_ m: Manifest) {
        date = m.date
        resources = m.resources.map { d in
            Departures(
                resourceId: d.resource.id,
                name: d.resource.name,
                kind: d.resource.kind.rawValue,
                timeZone: d.timeZone,
                dayStart: APITime(d.dayStart),
                dayEnd: APITime(d.dayEnd),
                seats: d.slots.reduce(0) { $0 + $1.seats },
                slots: d.slots.map { s in
                    Slot(
                        start: APITime(s.start),
                        localStart: s.localStart,
                        localEnd: s.localEnd,
                        seats: s.seats,
                        bookings: s.entries.map { e in
                            Entry(
                                bookingId: e.booking.id,
                                reference: e.booking.reference,
                                userId: e.booking.userId,
                                seats: e.booking.seats,
                                payment: e.payment.rawValue,
                                paidVia: e.rails.map(\.rawValue),
                                amountPaid: e.amountPaidMinor,
                                currency: e.booking.currency,
                                status: e.booking.status.rawValue,
                                statusReason: e.booking.statusReason,
                                holdExpiresAt: e.booking.status == .pendingPayment ? APITime(e.booking.holdExpiresAt) : nil
                            )
                        }
                    )
                }
            )
        }
    }
}

/// The manifest as CSV (RFC 4180, text cells guarded like the other exports): one row per booking.
enum ManifestCSV {
    static let header = [
        "date", "resourceId", "resourceName", "timeZone", "localStart", "localEnd", "reference", "userId", "seats", "payment", "paidVia",
        "amountPaid", "currency", "status",
    ]

    static func render(_ manifest: Manifest) -> String {
        let text = LedgerCSV.text
        var lines = [header.joined(separator: ",")]
        for departures in manifest.resources {
            for slot in departures.slots {
                for entry in slot.entries {
                    lines.append(
                        [
                            manifest.date, text(departures.resource.id), text(departures.resource.name), departures.timeZone, slot.localStart,
                            slot.localEnd, entry.booking.reference, text(entry.booking.userId), String(entry.booking.seats), entry.payment.rawValue,
                            entry.rails.map(\.rawValue).joined(separator: " "), amount(entry.amountPaidMinor, entry.booking.currency),
                            entry.booking.currency, entry.booking.status.rawValue,
                        ].joined(separator: ",")
                    )
                }
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// `13500` EUR → `135.00`: the currency's own digits, without its code.
    static func amount(_ minor: Int64, _ currency: String) -> String {
        String(CurrencyUnits.text(minor: minor, currency: currency).split(separator: " ").first ?? "")
    }
}

import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Hummingbird
import Logging
import NIOCore
import UseCases

/// `/api/admin/…`: the app's own description and its booking administration (admin API key).
struct AdminRoutes {
    let records: OperatorRecords
    let bookingLookup: BookingLookup
    let resolveUnappliedPayment: ResolveUnappliedPayment
    let logger: Logger
    let clock: any BerthClock
    let adminTransition: AdminBookingTransition

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<AdminRequestContext> {
        let router = RouteCollection(context: AdminRequestContext.self)
        router.get("/api/admin/app", use: getAdminApp)
        router.get("/api/admin/bookings", use: bookings)
        router.post("/api/admin/bookings/{id}/confirm", use: confirm)
        router.post("/api/admin/bookings/{id}/cancel", use: cancel)
        let records = records
        listing(
            "/api/admin/unclaimed",
            on: router,
            fetch: { tenantId, page in try await records.unclaimed(tenantId: tenantId, page: page) },
            as: UnclaimedDTO.init
        )
        router.get("/api/admin/unapplied-payments", use: getAdminUnappliedPayments)
        router.post("/api/admin/unapplied-payments/{id}/apply", use: postAdminUnappliedPaymentsApply)
        router.post("/api/admin/unapplied-payments/{id}/refund", use: postAdminUnappliedPaymentsRefund)
        router.post("/api/admin/apple/test-notification", use: postAdminAppleTestNotification)
        listing(
            "/api/admin/webhooks/deliveries",
            on: router,
            fetch: { tenantId, page in try await records.webhookDeliveries(tenantId: tenantId, page: page) },
            as: WebhookDeliveryDTO.init
        )
        listing(
            "/api/admin/webhooks/dead-letters",
            on: router,
            fetch: { tenantId, page in try await records.deadLetters(tenantId: tenantId, page: page) },
            as: DeadLetterDTO.init
        )
        router.post("/api/admin/webhooks/deliveries/{id}/resend", use: postAdminWebhooksDeliveriesResend)
        router.get("/api/admin/purchases", use: purchases)
        listing(
            "/api/admin/replays",
            on: router,
            fetch: { tenantId, page in try await records.replays(tenantId: tenantId, page: page) },
            as: ReplayDTO.init
        )
        listing(
            "/api/admin/notifications",
            on: router,
            fetch: { tenantId, page in try await records.notifications(tenantId: tenantId, page: page) },
            as: NotificationDTO.init
        )
        router.get("/api/admin/audit", use: getAdminAudit)
        return router
    }

    /// `GET /api/admin/app`
    func getAdminApp(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (tenant, _) = (context.tenant, context.keyId)
        return try JSONCoding.response(
            AppResponse(
                app: AppDTO(
                    tenant.tenant,
                    appStoreServerAPI: tenant.appStore.serverAPI != nil,
                    webhook: tenant.webhook != nil,
                    cardPayments: tenant.stripe != nil && tenant.tenant.bookingPaymentRails.contains(.card)
                )
            )
        )
    }

    /// `GET /api/admin/unapplied-payments`
    func getAdminUnappliedPayments(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let tenantId = context.tenant.id
        let page = try Paging.page(request)
        var status: UnappliedPayment.Status?
        if let text = request.uri.queryParameters["status"] {
            guard let value = UnappliedPayment.Status(rawValue: String(text)) else {
                throw APIError(
                    .badRequest,
                    .invalidQuery,
                    "status must be one of \(UnappliedPayment.Status.allCases.map(\.rawValue).joined(separator: ", "))",
                    field: "status"
                )
            }
            status = value
        }
        let result = try await records.unappliedPayments(tenantId: tenantId, status: status, page: page)
        return try JSONCoding.response(
            ListResponse(
                items: result.items.map(UnappliedPaymentDTO.init),
                total: result.total,
                limit: page.limit,
                offset: page.offset
            )
        )
    }

    /// `POST /api/admin/unapplied-payments/{id}/apply`
    func postAdminUnappliedPaymentsApply(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let id = try Self.unappliedId(context)
        let body = try await JSONCoding.decode(ApplyUnappliedRequest.self, from: request)
        let bookingId = try await body.bookingId?.resolve(field: "bookingId", tenantId: context.tenant.id, lookup: bookingLookup)
        let userId = try body.userId.map { try Authenticator.userId($0, field: "userId", tenant: context.tenant.tenant) }.flatMap {
            $0.isEmpty ? nil : $0
        }
        let (payment, result) = try await resolveUnappliedPayment.apply(
            id,
            runtime: context.tenant,
            actor: context.actor,
            userId: userId,
            bookingId: bookingId
        )
        if let refusal = VerifyPurchaseRoutes.refusal(result.outcome, namesBooking: bookingId != nil), payment.currentStatus == .open {
            throw refusal
        }
        // An operator attributed an App Store payment: Apple's later notifications of it should name its owner.
        if let owner = result.outcome.purchase?.userId {
            await SetAppAccountToken(logger: logger).afterAttribution(
                runtime: context.tenant,
                store: payment.store,
                originalTransactionId: payment.proven.originalTransactionId,
                environment: payment.proven.environment,
                owner: owner,
                current: payment.proven.appAccountToken
            )
        }
        return try JSONCoding.response(UnappliedPaymentResponse(unappliedPayment: UnappliedPaymentDTO(payment)))
    }

    /// `POST /api/admin/unapplied-payments/{id}/refund`
    func postAdminUnappliedPaymentsRefund(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let id = try Self.unappliedId(context)
        let body = try await JSONCoding.decode(RefundUnappliedRequest.self, from: request)
        let note = Text.trimmed(body.note ?? "")
        guard !note.isEmpty else { throw APIError(.badRequest, .missingField, "say why it is refunded (note)", field: "note") }
        try Self.checkReason(note)
        let payment = try await resolveUnappliedPayment.markForRefund(id, runtime: context.tenant, actor: context.actor, note: note)
        return try JSONCoding.response(UnappliedPaymentResponse(unappliedPayment: UnappliedPaymentDTO(payment)))
    }

    /// `POST /api/admin/apple/test-notification`
    func postAdminAppleTestNotification(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (tenant, _) = (context.tenant, context.keyId)
        guard let api = tenant.appStore.serverAPI else {
            throw APIError(.unprocessableContent, .appleNotConfigured, "this app has no App Store Server API key configured")
        }
        let environment = request.uri.queryParameters["environment"].map { AppStoreEnvironment(rawValue: String($0)) } ?? .sandbox
        guard environment == .sandbox || environment == .production else {
            throw APIError(.badRequest, .invalidQuery, "environment must be Production or Sandbox", field: "environment")
        }
        let token: String
        do {
            token = try await api.requestTestNotification(environment: environment)
        } catch {
            throw APIError(error.retryable ? .serviceUnavailable : .unprocessableContent, ErrorCode(rawValue: error.code.rawValue), error.reason)
        }
        return try JSONCoding.response(TestNotificationResponse(testNotificationToken: token))
    }

    /// `POST /api/admin/webhooks/deliveries/{id}/resend`
    func postAdminWebhooksDeliveriesResend(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (tenant, _) = (context.tenant, context.keyId)
        let tenantId = tenant.id, now = clock.now()
        guard let text = context.parameters.get("id"), let id = Int64(text),
            try await records.resend(deliveryId: id, tenantId: tenantId, now: now)
        else {
            throw APIError(.notFound, .deliveryNotFound, "no webhook delivery with this id for this app", field: "id")
        }
        return try JSONCoding.response(ResendResponse(queued: true))
    }

    /// `GET /api/admin/audit`
    func getAdminAudit(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (tenant, _) = (context.tenant, context.keyId)
        let page = try Paging.page(request)
        var bookingId: Int64?
        if let text = request.uri.queryParameters["bookingId"] {
            guard Int64(text).map({ $0 > 0 }) ?? (BookingReference.normalized(text) != nil) else {
                throw APIError(
                    .badRequest,
                    .invalidQuery,
                    "bookingId is a booking's id (a positive integer) or its reference",
                    field: "bookingId"
                )
            }
            bookingId = try await Paging.bookingId(String(text), field: "bookingId", tenantId: tenant.id, lookup: bookingLookup)
        }
        let tenantId = tenant.id, booking = bookingId
        let result = try await records.audit(tenantId: tenantId, bookingId: booking, page: page)
        return try JSONCoding.response(
            ListResponse(items: result.items.map(AuditDTO.init), total: result.total, limit: page.limit, offset: page.offset)
        )
    }

    /// A paginated, newest-first admin listing of one kind of record.
    private func listing<Item: Sendable, DTO: Codable & Sendable>(
        _ path: RouterPath,
        on router: RouteCollection<AdminRequestContext>,
        fetch: @escaping @Sendable (String, Page) async throws -> (items: [Item], total: Int),
        as present: @escaping @Sendable (Item) -> DTO
    ) {
        router.get(path, use: AdminListing(fetch: fetch, present: present).list)
    }

    static func unappliedId(_ context: some RequestContext) throws -> Int64 {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw APIError(.notFound, .unappliedPaymentNotFound, "unapplied payment ids are positive integers", field: "id")
        }
        return id
    }

    /// `GET /api/admin/purchases`: filters userId, productId, status, environment, from, to; CSV
    /// with `format=csv` or `Accept: text/csv` (oldest first, up to 100,000 rows).
    func purchases(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let (tenant, _) = (context.tenant, context.keyId)
        let query = request.uri.queryParameters
        var filter = PurchaseFilter()
        filter.userId = query["userId"].map { String($0).precomposedStringWithCanonicalMapping }
        filter.productId = query["productId"].map(String.init)
        if let text = query["status"] {
            guard let status = PurchaseStatus(rawValue: String(text)) else {
                throw APIError(.badRequest, .invalidQuery, "status must be one of applied, needs_refund, refunded", field: "status")
            }
            filter.status = status
        }
        if let text = query["environment"] {
            // App Store purchases are Production or Sandbox; card payments live or test (the Stripe key's mode).
            let environment = StoreEnvironment(rawValue: String(text))
            guard StoreEnvironment.all.contains(environment) else {
                throw APIError(.badRequest, .invalidQuery, "environment must be Production, Sandbox, live or test", field: "environment")
            }
            filter.environment = environment
        }
        filter.from = try Paging.time(request, "from")
        filter.to = try Paging.time(request, "to")
        let tenantId = tenant.id, purchaseFilter = filter
        if try AdminCreditRoutes.wantsCSV(request) {
            let rows = try await records.exportPurchases(tenantId: tenantId, filter: purchaseFilter, limit: AdminCreditRoutes.exportLimit)
            return Response(
                status: .ok,
                headers: [.contentType: "text/csv; charset=utf-8", .contentDisposition: "attachment; filename=\"\(tenantId)-purchases.csv\""],
                body: .init(byteBuffer: ByteBuffer(string: PurchaseCSV.render(rows, zone: tenant.tenant.zone)))
            )
        }
        let page = try Paging.page(request)
        let result = try await records.purchases(tenantId: tenantId, filter: purchaseFilter, page: page)
        return try JSONCoding.response(
            ListResponse(items: result.items.map(PurchaseDTO.init), total: result.total, limit: page.limit, offset: page.offset)
        )
    }

    func bookings(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let (tenant, _) = (context.tenant, context.keyId)
        let query = request.uri.queryParameters
        var filter = BookingFilter()
        if let status = query["status"] {
            guard let value = BookingStatus(rawValue: String(status)) else {
                throw APIError(
                    .badRequest,
                    .invalidQuery,
                    "status must be one of \(BookingStatus.allCases.map(\.rawValue).joined(separator: ", "))",
                    field: "status"
                )
            }
            filter.status = value
        }
        filter.resourceId = query["resourceId"].map(String.init)
        filter.userId = query["userId"].map { String($0).precomposedStringWithCanonicalMapping }
        filter.from = try Paging.time(request, "from")
        filter.to = try Paging.time(request, "to")
        // The operator's list is in trip order: what has not sailed yet first, soonest first.
        let order = query["order"].map(String.init) ?? "trip"
        guard order == "trip" || order == "created" else {
            throw APIError(.badRequest, .invalidQuery, "order must be trip (upcoming first) or created (newest made first)", field: "order")
        }
        if order == "trip" { filter.upcomingFirst = clock.now() }
        let page = try Paging.page(request)
        let tenantId = tenant.id, bookingFilter = filter
        if try AdminCreditRoutes.wantsCSV(request) {
            let rows = try await records.exportBookings(tenantId: tenantId, filter: bookingFilter, limit: AdminCreditRoutes.exportLimit)
            return Response(
                status: .ok,
                headers: [.contentType: "text/csv; charset=utf-8", .contentDisposition: "attachment; filename=\"\(tenantId)-bookings.csv\""],
                body: .init(byteBuffer: ByteBuffer(string: BookingCSV.render(rows)))
            )
        }
        let (result, paid) = try await records.bookings(tenantId: tenantId, filter: bookingFilter, page: page)
        let names = tenant.tenant.resourceNames
        let now = clock.now()
        let items = result.items.map { booking in
            var dto = BookingDTO(booking)
            dto.resourceName = names[booking.resourceId]
            if let paid = paid[booking.id] {
                dto.paidVia = paid.rails.map(\.rawValue)
                dto.amountPaid = paid.amountMinor
            }
            if booking.status == .pendingPayment, booking.holdExpiresAt <= now { dto.holdLapsed = true }
            return dto
        }
        return try JSONCoding.response(ListResponse(items: items, total: result.total, limit: page.limit, offset: page.offset))
    }

    /// A reason is kept in the audit log: at most 500 characters, like an adjustment's.
    static func checkReason(_ reason: String) throws {
        guard Text.length(reason) <= 500 else { throw APIError(.badRequest, .invalidField, "reason is limited to 500 characters", field: "reason") }
    }

    func confirm(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let (tenant, keyId) = (context.tenant, context.keyId)
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        let body = try await JSONCoding.decode(AdminConfirmRequest.self, from: request)
        let reason = Text.trimmed(body.reason)
        guard !reason.isEmpty else { throw APIError(.badRequest, .missingField, "a manual confirmation needs a reason", field: "reason") }
        try Self.checkReason(reason)
        let booking = try await adminTransition(id, to: .confirmed, runtime: tenant, actor: .admin(keyId: keyId), reason: reason)
        return try JSONCoding.response(BookingResponse(booking: BookingDTO(booking)))
    }

    func cancel(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let (tenant, keyId) = (context.tenant, context.keyId)
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        var reason: String?
        if request.headers[.contentLength].map({ $0 != "0" }) ?? (request.headers[.transferEncoding] != nil) {
            reason = try await JSONCoding.decode(AdminCancelRequest.self, from: request).reason.map(Text.trimmed)
            if let reason { try Self.checkReason(reason) }
        }
        let booking = try await adminTransition(id, to: .cancelled, runtime: tenant, actor: .admin(keyId: keyId), reason: reason)
        return try JSONCoding.response(BookingResponse(booking: BookingDTO(booking)))
    }
}

/// Bookings as CSV (RFC 4180), oldest first: each time as the UTC instant and as the wall-clock time
/// where the booking happens, with its offset and zone.
enum BookingCSV {
    static let header = [
        "id", "reference", "createdAt", "userId", "resourceId", "status", "statusReason", "start", "end", "localStart", "localEnd", "timeZone",
        "seats", "priceMinor", "currency", "requiredProductId", "requiredQuantity", "paidQuantity", "environment", "purchaseId",
    ]

    static func render(_ bookings: [Booking]) -> String {
        var lines = [header.joined(separator: ",")]
        let text = LedgerCSV.text
        for b in bookings {
            lines.append(
                [
                    String(b.id), b.reference, APITime.format(b.createdAt), text(b.userId), text(b.resourceId), b.status.rawValue,
                    text(b.statusReason),
                    APITime.format(b.start), APITime.format(b.end), b.localStart, b.localEnd, b.zoneName, String(b.seats), String(b.priceMinor),
                    b.currency,
                    text(b.requiredProductId), String(b.requiredQuantity), String(b.paidQuantity), text(b.environment?.rawValue),
                    b.purchaseId.map(String.init) ?? "",
                ]
                .joined(separator: ",")
            )
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}

/// Purchases as CSV (RFC 4180), like the ledger's export: a header row, oldest first, amounts in
/// Apple's milliunits, text cells that a spreadsheet would run as a formula prefixed with `'`. Times
/// are UTC instants; the last columns repeat the purchase and refund times in the app's zone, with
/// their offset.
enum PurchaseCSV {
    static let header = [
        "id", "createdAt", "purchasedAt", "userId", "productId", "status", "outcomeCode", "environment", "transactionId",
        "originalTransactionId", "bookingId", "creditType", "credits", "subscription", "priceMilliunits", "currency", "quantity", "store",
        "refundedAt", "localPurchasedAt", "localRefundedAt", "timeZone",
    ]

    static func render(_ purchases: [Purchase], zone: TimeZone = ZonedTime.utc) -> String {
        var lines = [header.joined(separator: ",")]
        let text = LedgerCSV.text
        for p in purchases {
            let number: (Int64?) -> String = { $0.map(String.init) ?? "" }
            lines.append(
                [
                    String(p.id), APITime.format(p.createdAt), APITime.format(p.purchasedAt), text(p.userId), text(p.productId), p.status.rawValue,
                    text(p.outcomeCode), text(p.environment.rawValue), text(p.transactionId), text(p.originalTransactionId), number(p.bookingId),
                    text(p.creditType), number(p.credits), p.kind == .subscription ? "true" : "false", number(p.priceMilliunits), text(p.currency),
                    p.quantity.map(String.init) ?? "", p.store.rawValue,
                    p.refundedAt.map(APITime.format) ?? "", ZonedTime.format(p.purchasedAt, in: zone),
                    p.refundedAt.map { ZonedTime.format($0, in: zone) } ?? "", ZonedTime.name(zone),
                ].joined(separator: ",")
            )
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}

/// The handler of a paginated, newest-first admin listing: `fetch` reads a page of the tenant's
/// records, `present` gives each its answer's shape.
struct AdminListing<Item: Sendable, DTO: Codable & Sendable>: Sendable {
    let fetch: @Sendable (String, Page) async throws -> (items: [Item], total: Int)
    let present: @Sendable (Item) -> DTO

    func list(_ request: Request, context: AdminRequestContext) async throws -> Response {
        let page = try Paging.page(request)
        let result = try await fetch(context.tenant.id, page)
        return try JSONCoding.response(
            ListResponse(items: result.items.map(present), total: result.total, limit: page.limit, offset: page.offset)
        )
    }
}

// MARK: - Request and answer types of these routes

struct ReplayDTO: Codable {
    var id: Int64
    var userId: String
    var bookingId: Int64?
    var environment: StoreEnvironment
    var transactionId: String
    var existingPurchaseId: Int64
    var reason: String
    var proofHash: String
    var at: APITime

    init(_ replay: ReplayAttempt) {
        id = replay.id
        userId = replay.userId
        bookingId = replay.target?.bookingId
        environment = replay.environment
        transactionId = replay.transactionId
        existingPurchaseId = replay.existingPurchaseId
        reason = replay.reason
        proofHash = replay.proofHash
        at = APITime(replay.at)
    }
}

struct AuditDTO: Codable {
    var id: Int64
    var actor: String
    var action: String
    var bookingId: Int64?
    var purchaseId: Int64?
    var detail: String?
    var at: APITime

    init(_ entry: AuditEntry) {
        id = entry.id
        actor = entry.actor
        action = entry.action
        bookingId = entry.bookingId
        purchaseId = entry.purchaseId
        detail = entry.detail
        at = APITime(entry.at)
    }
}

struct NotificationDTO: Codable {
    var notificationUUID: String
    var notificationType: String
    var subtype: String?
    var environment: StoreEnvironment
    var transactionId: String?
    var outcome: String
    var payloadHash: String
    var signedDate: APITime
    var receivedAt: APITime

    init(_ stored: StoredNotification) {
        notificationUUID = stored.uuid
        notificationType = stored.type
        subtype = stored.subtype
        environment = stored.environment
        transactionId = stored.transactionId
        outcome = stored.outcome
        payloadHash = stored.payloadHash
        signedDate = APITime(stored.signedAt)
        receivedAt = APITime(stored.receivedAt)
    }
}

struct WebhookDeliveryDTO: Codable {
    var id: Int64
    var eventId: Int64
    var eventType: String
    var attempt: Int
    var statusCode: Int?
    var error: String?
    var at: APITime

    init(_ delivery: WebhookDelivery) {
        id = delivery.id
        eventId = delivery.outboxId
        eventType = delivery.eventType
        attempt = delivery.attempt
        statusCode = delivery.statusCode
        error = delivery.error
        at = APITime(delivery.at)
    }
}

/// A message the deliverer gave up on; re-send it through `lastDeliveryId`.
struct DeadLetterDTO: Codable {
    var eventId: Int64
    var eventType: String
    var subject: String?
    var attempts: Int
    var createdAt: APITime
    var deadAt: APITime
    var lastDeliveryId: Int64?

    init(_ letter: DeadLetter) {
        eventId = letter.outboxId
        eventType = letter.eventType
        subject = letter.subject
        attempts = letter.attempts
        createdAt = APITime(letter.createdAt)
        deadAt = APITime(letter.deadAt)
        lastDeliveryId = letter.lastDeliveryId
    }
}

struct UnclaimedDTO: Codable {
    var environment: StoreEnvironment
    var transactionId: String
    var productId: String
    var purchasedAt: APITime
    var receivedAt: APITime
    var claimedByPurchaseId: Int64?

    init(_ unclaimed: UnclaimedTransaction) {
        environment = unclaimed.environment
        transactionId = unclaimed.transactionId
        productId = unclaimed.productId
        purchasedAt = APITime(unclaimed.purchasedAt)
        receivedAt = APITime(unclaimed.receivedAt)
        claimedByPurchaseId = unclaimed.claimedByPurchaseId
    }
}

struct UnappliedPaymentResponse: Codable {
    var unappliedPayment: UnappliedPaymentDTO
}

/// `POST /api/admin/unapplied-payments/{id}/apply`: the user (default: the one it was claimed for)
/// and the booking (default: none; the product decides) to apply it to.
struct ApplyUnappliedRequest: Codable {
    var userId: String?
    /// The booking's id, or its reference (what an operator has at hand).
    var bookingId: BookingKey?
}

/// `POST /api/admin/unapplied-payments/{id}/refund`: why (shown in the audit log and the listing).
struct RefundUnappliedRequest: Codable {
    var note: String?
}

/// `GET /api/admin/app`: the app an admin key belongs to, as the admin page needs it.
struct AppResponse: Codable {
    var app: AppDTO
}

struct TestNotificationResponse: Codable {
    var testNotificationToken: String
}

struct ResendResponse: Codable {
    var queued: Bool
}

struct AdminConfirmRequest: Codable, RefusesNull {
    var reason: String
}

struct AdminCancelRequest: Codable, RefusesNull {
    var reason: String?
}

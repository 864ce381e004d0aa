import Domain
import Foundation
import Hummingbird
import NIOCore
import UseCases

/// The card rail: `POST /api/bookings/{id}/card-payment` (the app's Payment Sheet), Stripe's
/// `POST /api/stripe/webhooks/{tenant}`, and the operators' `POST /api/admin/bookings/{id}/refund`
/// and `GET /api/admin/bookings/{id}/payments`.
struct CardPaymentRoutes {
    let bookingQueries: BookingQueries
    let bookingLookup: BookingLookup
    let cardDeposits: CardDeposits
    let startCardPayment: StartCardPayment
    let tenants: TenantRegistry
    let trustedProxies: TrustedProxies
    let rateLimiter: RateLimiter
    let receiveStripeEvent: ReceiveStripeEvent
    let metrics: BerthMetrics
    let refundCardBooking: RefundCardBooking

    struct Routes {
        let users = RouteCollection(context: UserContext.self)
        let open = RouteCollection(context: BerthRequestContext.self)
        let admin = RouteCollection(context: AdminRequestContext.self)
    }

    /// Stripe's events are small (a few KiB); larger bodies are refused unread.
    static let webhookBodyLimit = 256 * 1024

    var routes: Routes {
        let groups = Routes()
        groups.users.post("/api/bookings/{id}/card-payment", use: postBookingsCardPayment)
        groups.open.post("/api/stripe/webhooks/{tenant}", use: webhook)
        groups.admin.post("/api/admin/bookings/{id}/refund", use: refund)
        groups.admin.get("/api/admin/bookings/{id}/payments", use: getAdminBookingsPayments)
        groups.admin.post("/api/admin/bookings/{id}/deposit", use: postAdminBookingsDeposit)
        groups.admin.post("/api/admin/bookings/{id}/deposit/capture", use: postAdminBookingsDepositCapture)
        groups.admin.post("/api/admin/bookings/{id}/deposit/release", use: postAdminBookingsDepositRelease)
        return groups
    }

    /// `POST /api/bookings/{id}/card-payment`
    func postBookingsCardPayment(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        try await start(context)
    }

    /// `GET /api/admin/bookings/{id}/payments`
    func getAdminBookingsPayments(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        try await payments(context)
    }

    /// `POST /api/admin/bookings/{id}/deposit`
    func postAdminBookingsDeposit(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        let body = try await JSONCoding.decode(DepositRequest.self, from: request)
        let result = try await cardDeposits.start(runtime: context.tenant, bookingId: id, amountMinor: body.amountMinor, actor: context.actor)
        return try JSONCoding.response(DepositStartDTO(result), status: result.created ? .created : .ok)
    }

    /// `POST /api/admin/bookings/{id}/deposit/capture`
    func postAdminBookingsDepositCapture(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        let body = try await JSONCoding.decode(DepositCaptureRequest.self, from: request, emptyAs: DepositCaptureRequest())
        let payment = try await cardDeposits.capture(runtime: context.tenant, bookingId: id, amountMinor: body.amountMinor, actor: context.actor)
        return try JSONCoding.response(DepositResponse(deposit: CardPaymentDTO(payment, refunds: [])))
    }

    /// `POST /api/admin/bookings/{id}/deposit/release`
    func postAdminBookingsDepositRelease(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        let payment = try await cardDeposits.release(runtime: context.tenant, bookingId: id, actor: context.actor)
        return try JSONCoding.response(DepositResponse(deposit: CardPaymentDTO(payment, refunds: [])))
    }

    func start(_ context: UserContext) async throws -> Response {
        try await Paging.userBooking(context, lookup: bookingLookup, limiter: rateLimiter) { id in
            let result = try await startCardPayment(runtime: context.tenant, userId: context.userId, bookingId: id)
            return try JSONCoding.response(CardPaymentStartDTO(result), status: result.created ? .created : .ok)
        }
    }

    func webhook(_ request: Request, _ context: BerthRequestContext) async throws -> Response {
        guard let tenantId = context.parameters.get("tenant"), let runtime = tenants.tenant(id: tenantId), runtime.stripe != nil else {
            throw APIError(.notFound, .tenantNotFound, "no app takes card payments at this webhook URL", field: "tenant")
        }
        var request = request
        let address = trustedProxies.clientAddress(peer: context.clientAddress, forwardedFor: request.headers[values: .xForwardedFor])
        // An address whose failures used up its budget is refused before its body is read (T8); Stripe retries.
        try rateLimiter.admitNotification(tenant: runtime.tenant, clientAddress: address)
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: Self.webhookBodyLimit)
        } catch {
            throw APIError(.contentTooLarge, .bodyTooLarge, "webhook bodies are limited to 256 KiB")
        }
        do {
            let result = try await receiveStripeEvent(
                runtime: runtime,
                body: Data(buffer.readableBytesView),
                signature: request.headers[.init("Stripe-Signature")!]
            )
            rateLimiter.notificationVerified(tenant: runtime.tenant, clientAddress: address)
            metrics.notification(type: "stripe:\(result.type)", outcome: result.duplicate ? "duplicate" : result.outcome)
            return try JSONCoding.response(StripeWebhookAck(received: true, outcome: result.outcome, duplicate: result.duplicate))
        } catch {
            // Only what fails draws from the per-address limit (Stripe's genuine events are never refused for others' junk).
            if !NotificationIntake.isServerSide(error) { try rateLimiter.checkNotification(tenant: runtime.tenant, clientAddress: address) }
            throw error
        }
    }

    func refund(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        let body = try await JSONCoding.decode(AdminRefundRequest.self, from: request)
        let reason = Text.trimmed(body.reason)
        guard !reason.isEmpty else { throw APIError(.badRequest, .missingField, "say why the booking is refunded", field: "reason") }
        try AdminRoutes.checkReason(reason)
        let result = try await refundCardBooking(
            runtime: context.tenant,
            bookingId: id,
            amountMinor: body.amountMinor,
            reason: reason,
            actor: context.actor
        )
        return try JSONCoding.response(
            AdminRefundResponse(
                refund: CardRefundDTO(result.refund),
                payment: CardPaymentDTO(result.payment, refunds: []),
                booking: BookingDTO(result.booking)
            ),
            status: result.refund.status == .failed ? .badGateway : .ok
        )
    }

    func payments(_ context: AdminRequestContext) async throws -> Response {
        let id = try await Paging.bookingId(context, tenantId: context.tenant.id, lookup: bookingLookup)
        guard let payments = try await bookingQueries.cardPayments(of: id, tenantId: context.tenant.id) else {
            throw APIError(.notFound, .bookingNotFound, "no booking \(id)", field: "id")
        }
        return try JSONCoding.response(CardPaymentListDTO(payments: payments.map { CardPaymentDTO($0.payment, refunds: $0.refunds) }))
    }
}

/// `POST /api/bookings/{id}/card-payment`: what the Payment Sheet needs.
struct CardPaymentStartDTO: Codable {
    var provider: String
    var paymentIntentId: String
    var clientSecret: String
    var publishableKey: String
    /// Minor units of `currency` (the booking's price).
    var amount: Int64
    var currency: String
    /// Until when the slot is held for this payment.
    var holdExpiresAt: APITime

    init(_ result: StartCardPayment.Result) {
        provider = result.payment.provider
        paymentIntentId = result.payment.providerRef ?? ""
        clientSecret = result.clientSecret
        publishableKey = result.publishableKey
        amount = result.payment.amountMinor
        currency = result.payment.currency
        holdExpiresAt = APITime(result.holdExpiresAt)
    }
}

/// What a booking answer shows of its latest card payment (the app polls it after the sheet closes).
struct BookingPaymentDTO: Codable {
    var provider: String
    /// `requires_payment`, `requires_action`, `processing`, `succeeded`, `partially_refunded`, `refunded`, `disputed`, `canceled`.
    var status: String
    var paymentIntentId: String?
    var amount: Int64
    var amountRefunded: Int64
    var currency: String

    init(_ payment: CardPayment) {
        provider = payment.provider
        status = payment.displayStatus
        paymentIntentId = payment.providerRef
        amount = payment.amountMinor
        amountRefunded = payment.amountRefunded
        currency = payment.currency
    }
}

struct StripeWebhookAck: Codable {
    var received: Bool
    var outcome: String
    var duplicate: Bool
}

struct AdminRefundRequest: Codable, RefusesNull {
    /// Minor units; default what is left of the payment.
    var amountMinor: Int64?
    var reason: String
}

struct CardRefundDTO: Codable {
    var id: Int64
    var providerRef: String?
    var amount: Int64
    /// `pending` (the provider has not answered yet; Berth keeps asking with the same key), `succeeded`, `failed`.
    var status: String
    var reason: String
    var initiatedBy: String
    var actor: String
    var attempts: Int
    var lastError: String?
    var createdAt: APITime

    init(_ refund: CardRefund) {
        id = refund.id
        providerRef = refund.providerRef
        amount = refund.amountMinor
        status = refund.status.rawValue
        reason = refund.reason
        initiatedBy = refund.initiatedBy.rawValue
        actor = refund.actor
        attempts = refund.attempts
        lastError = refund.lastError
        createdAt = APITime(refund.createdAt)
    }
}

struct CardPaymentDTO: Codable {
    var id: Int64
    var bookingId: Int64
    var userId: String
    /// `booking` (the price) or `deposit` (authorized at check-in, captured in part or released).
    var purpose: String
    var provider: String
    var environment: StoreEnvironment
    var paymentIntentId: String?
    var amount: Int64
    var currency: String
    /// Berth's state: `creating`, `open`, `succeeded`, `canceled`.
    var status: String
    /// What the app is shown (see ``BookingPaymentDTO``).
    var displayStatus: String
    var providerStatus: String?
    var amountRefunded: Int64
    /// A deposit: what was captured.
    var amountCaptured: Int64
    /// An authorized deposit: when Berth releases it unless captured.
    var captureBefore: APITime?
    var disputeStatus: String?
    var purchaseId: Int64?
    var createdAt: APITime
    var updatedAt: APITime
    var refunds: [CardRefundDTO]

    init(_ payment: CardPayment, refunds: [CardRefund]) {
        id = payment.id
        bookingId = payment.bookingId
        userId = payment.userId
        purpose = payment.purpose.rawValue
        amountCaptured = payment.amountCaptured
        captureBefore = payment.captureBefore.map(APITime.init)
        provider = payment.provider
        environment = payment.environment
        paymentIntentId = payment.providerRef
        amount = payment.amountMinor
        currency = payment.currency
        status = payment.status.rawValue
        displayStatus = payment.displayStatus
        providerStatus = payment.providerStatus
        amountRefunded = payment.amountRefunded
        disputeStatus = payment.disputeStatus
        purchaseId = payment.purchaseId
        createdAt = APITime(payment.createdAt)
        updatedAt = APITime(payment.updatedAt)
        self.refunds = refunds.map(CardRefundDTO.init)
    }
}

/// `POST /api/admin/bookings/{id}/deposit {amountMinor}`: a security deposit at check-in.
struct DepositRequest: Codable, RefusesNull {
    var amountMinor: Int64
}

/// `POST /api/admin/bookings/{id}/deposit/capture {amountMinor?}` (default all of it).
struct DepositCaptureRequest: Codable, RefusesNull {
    var amountMinor: Int64?
}

/// What the Payment Sheet needs to authorize a deposit (manual capture).
struct DepositStartDTO: Codable {
    var provider: String
    var paymentIntentId: String
    var clientSecret: String
    var publishableKey: String
    var amount: Int64
    var currency: String

    init(_ result: StartCardPayment.Result) {
        provider = result.payment.provider
        paymentIntentId = result.payment.providerRef ?? ""
        clientSecret = result.clientSecret
        publishableKey = result.publishableKey
        amount = result.payment.amountMinor
        currency = result.payment.currency
    }
}

struct DepositResponse: Codable {
    var deposit: CardPaymentDTO
}

struct CardPaymentListDTO: Codable {
    var payments: [CardPaymentDTO]
}

struct AdminRefundResponse: Codable {
    var refund: CardRefundDTO
    var payment: CardPaymentDTO
    var booking: BookingDTO
}

import Foundation

/// An event told to a tenant's own backend: `booking.confirmed`, `booking.refunded`,
/// `purchase.refunded`, `replay.detected` (and later `credits.changed`, `subscription.updated`).
public struct WebhookEvent: Hashable, Sendable {
    public var type: String
    public var data: [String: String]

    public init(type: String, data: [String: String]) {
        self.type = type
        self.data = data
    }

    static func booking(_ type: String, _ booking: Booking, purchase: Purchase?) -> WebhookEvent {
        var data = ["bookingId": String(booking.id), "userId": booking.userId, "status": booking.status.rawValue, "resourceId": booking.resourceId]
        if let environment = purchase?.environment ?? booking.environment { data["environment"] = environment }
        if let purchase {
            data["purchaseId"] = String(purchase.id)
            data["transactionId"] = purchase.transactionId
            data["productId"] = purchase.productId
        }
        return WebhookEvent(type: type, data: data)
    }
}

extension PurchaseDecision {
    /// The events this decision's effect produces once applied.
    public func events(booking: Booking, purchase: Purchase) -> [WebhookEvent] {
        switch self {
        case .confirm: [.booking("booking.confirmed", booking, purchase: purchase)]
        case .replay(let existing, let reason):
            [WebhookEvent(type: "replay.detected", data: ["bookingId": String(booking.id), "userId": booking.userId, "transactionId": existing.transactionId,
                                                          "environment": existing.environment, "reason": reason])]
        case .repeatOf, .needsRefund, .refuse: []
        }
    }
}

extension NotificationEffect {
    /// The events this effect produces once applied.
    public func events(booking: Booking?, purchase: Purchase?) -> [WebhookEvent] {
        switch self {
        case .refundBooking:
            guard let booking, let purchase else { return [] }
            return [.booking("booking.refunded", booking, purchase: purchase), .booking("purchase.refunded", booking, purchase: purchase)]
        case .refundPurchaseOnly:
            guard let booking, let purchase else { return [] }
            return [.booking("purchase.refunded", booking, purchase: purchase)]
        case .reinstateBooking:
            guard let booking, let purchase else { return [] }
            return [.booking("booking.confirmed", booking, purchase: purchase)]
        case .recordOnly, .keepUnclaimed, .rememberRevoked, .forgetRevoked:
            return []
        }
    }
}

/// One queued webhook, as the delivery service and admins see it.
public struct OutboxMessage: Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var eventType: String
    /// The JSON body, exactly as signed and sent.
    public var payload: String
    public var attempts: Int
    /// What the event is about (`booking:<id>`); events of one subject are delivered in `sequence` order.
    public var subject: String?
    public var sequence: Int64

    public init(id: Int64, tenantId: String, eventType: String, payload: String, attempts: Int, subject: String? = nil, sequence: Int64 = 0) {
        self.subject = subject
        self.sequence = sequence
        self.id = id
        self.tenantId = tenantId
        self.eventType = eventType
        self.payload = payload
        self.attempts = attempts
    }
}

/// One delivery attempt.
public struct WebhookDelivery: Hashable, Sendable {
    public var id: Int64
    public var outboxId: Int64
    public var eventType: String
    public var attempt: Int
    public var statusCode: Int?
    public var error: String?
    public var at: Date

    public init(id: Int64, outboxId: Int64, eventType: String, attempt: Int, statusCode: Int?, error: String?, at: Date) {
        self.id = id
        self.outboxId = outboxId
        self.eventType = eventType
        self.attempt = attempt
        self.statusCode = statusCode
        self.error = error
        self.at = at
    }
}

/// Persistence of the webhook outbox and its delivery log.
public protocol WebhookStore: Sendable {
    /// Pending messages due at `now`, oldest first; a message whose subject has an earlier message
    /// still waiting for its retry is held back, so that one subject's events arrive in order.
    func dueMessages(now: Date, limit: Int) async throws -> [OutboxMessage]
    /// Records an attempt; success marks the message delivered, failure schedules the next attempt.
    func recordAttempt(_ message: OutboxMessage, statusCode: Int?, error: String?, delivered: Bool, nextAttemptAt: Date?, now: Date) async throws
    /// Marks a message as not deliverable (the tenant has no webhook).
    func skip(_ message: OutboxMessage, now: Date) async throws
    func deliveries(tenantId: String, page: Page) async throws -> (items: [WebhookDelivery], total: Int)
    /// Queues the message of a delivery again; false when the delivery is not the tenant's.
    func resend(deliveryId: Int64, tenantId: String, now: Date) async throws -> Bool
}

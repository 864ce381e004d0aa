import Foundation

/// An event told to a tenant's own backend: `booking.confirmed`, `booking.refunded`,
/// `purchase.refunded`, `replay.detected` `credits.changed` (and later `subscription.updated`).
public struct WebhookEvent: Hashable, Sendable {
    public var type: WebhookEventType
    public var data: [String: String]
    /// What the event is about, when its events must arrive in order (`booking:<id>`,
    /// `credits:<type>:<user>`); nil for events that need no order.
    public var subject: String?

    public init(type: WebhookEventType, data: [String: String], subject: String? = nil) {
        self.type = type
        self.data = data
        self.subject = subject
    }

    public static func bookingSubject(_ id: Int64) -> String { "booking:\(id)" }

    static func booking(_ type: WebhookEventType, _ booking: Booking, purchase: Purchase?) -> WebhookEvent {
        var data = ["bookingId": String(booking.id), "userId": booking.userId, "status": booking.status.rawValue, "resourceId": booking.resourceId]
        if let environment = purchase?.environment ?? booking.environment { data["environment"] = environment.rawValue }
        // When: the UTC instants and the wall-clock times where the booking happens, with their offset.
        data["start"] = UTCTimestamp.format(epochMilliseconds: booking.start.epochMilliseconds, milliseconds: false)
        data["end"] = UTCTimestamp.format(epochMilliseconds: booking.end.epochMilliseconds, milliseconds: false)
        data["localStart"] = booking.localStart
        data["localEnd"] = booking.localEnd
        data["timeZone"] = booking.zoneName
        if !booking.reference.isEmpty { data["reference"] = booking.reference }
        if booking.status == .cancelled { data["reason"] = BookingCancellation.reasonCode(booking.statusReason) }
        if let purchase {
            data["purchaseId"] = String(purchase.id)
            data["transactionId"] = purchase.transactionId
            data["store"] = purchase.store.rawValue
            data["productId"] = purchase.productId
        }
        return WebhookEvent(type: type, data: data, subject: bookingSubject(booking.id))
    }
}

/// The type of a webhook event.
public struct WebhookEventType: RawRepresentable, Hashable, Sendable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let bookingConfirmed = WebhookEventType(rawValue: "booking.confirmed")
    public static let bookingRefunded = WebhookEventType(rawValue: "booking.refunded")
    /// An operator cancelled the booking.
    public static let bookingCancelled = WebhookEventType(rawValue: "booking.cancelled")
    /// The booking moved to another slot, day or resource (its customer's or an operator's move).
    public static let bookingMoved = WebhookEventType(rawValue: "booking.moved")
    public static let purchaseRefunded = WebhookEventType(rawValue: "purchase.refunded")
    public static let replayDetected = WebhookEventType(rawValue: "replay.detected")
    /// An operator closed what a booking owed its customer: told them how to ask the store, credited
    /// them, or refunded them some other way.
    public static let owedResolved = WebhookEventType(rawValue: "owed.resolved")
    public static let creditsChanged = WebhookEventType(rawValue: "credits.changed")
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

/// A message the deliverer gave up on after its last allowed attempt (a dead letter): kept, not
/// retried, until an operator re-sends it (through its last delivery).
public struct DeadLetter: Hashable, Sendable {
    public var outboxId: Int64
    public var eventType: String
    public var subject: String?
    public var attempts: Int
    public var createdAt: Date
    public var deadAt: Date
    public var lastDeliveryId: Int64?

    public init(outboxId: Int64, eventType: String, subject: String?, attempts: Int, createdAt: Date, deadAt: Date, lastDeliveryId: Int64?) {
        self.outboxId = outboxId
        self.eventType = eventType
        self.subject = subject
        self.attempts = attempts
        self.createdAt = createdAt
        self.deadAt = deadAt
        self.lastDeliveryId = lastDeliveryId
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

import Foundation

/// The life of a booking.
///
/// `pending_payment` → `confirmed` → `cancelled` | `refunded`; `payment_needs_refund` marks money
/// received that cannot be honoured (the slot was taken after the hold expired, or the booking was
/// cancelled before the payment arrived).
public enum BookingStatus: String, Codable, Hashable, Sendable, CaseIterable {
    case pendingPayment = "pending_payment"
    case confirmed
    case cancelled
    case refunded
    case paymentNeedsRefund = "payment_needs_refund"

    /// Whether an admin may move a booking from this status to `target`.
    public func adminMay(moveTo target: BookingStatus) -> Bool {
        switch (self, target) {
        case (.pendingPayment, .confirmed), (.paymentNeedsRefund, .confirmed): true
        case (.pendingPayment, .cancelled), (.confirmed, .cancelled), (.paymentNeedsRefund, .cancelled): true
        default: false
        }
    }
}

/// A booking of a resource by a user.
public struct Booking: Codable, Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var userId: String
    public var resourceId: String
    public var resourceKind: Resource.Kind
    public var start: Date
    public var end: Date
    public var seats: Int
    public var priceMinor: Int64
    public var currency: String
    public var requiredProductId: String
    /// How many units of `requiredProductId` the purchase must carry (seats or days when the tenant
    /// sells per unit; 1 otherwise).
    public var requiredQuantity: Int
    public var status: BookingStatus
    public var holdExpiresAt: Date
    /// Whether the booking still waits for payment past its hold (its slot may have been taken since).
    public func holdLapsed(at now: Date) -> Bool { status == .pendingPayment && holdExpiresAt <= now }
    public var createdAt: Date
    public var updatedAt: Date
    public var confirmedAt: Date?
    public var purchaseId: Int64?
    public var statusReason: String?
    /// `Production` or `Sandbox`: the environment of the purchase that confirmed it.
    public var environment: StoreEnvironment?
    /// Units of `requiredProductId` paid so far: a client that always buys one unit (quantity 1)
    /// pays an N-seat booking with N transactions; the booking is confirmed when this reaches
    /// `requiredQuantity`.
    public var paidQuantity: Int
    /// The short reference people read out (`BookingReference`), unique within the tenant.
    public var reference: String
    /// The IANA zone the booking was made in (its resource's, else its tenant's; nil: UTC). Kept
    /// with the booking: a later change of the catalog does not move what was sold.
    public var timeZone: String?
    /// A hold for the difference of a dearer move: the booking it changes (paid, this hold's
    /// payments pass to it and it moves here; ``BookingMove``).
    public var changeOf: Int64?

    /// The zone its wall-clock times are shown in.
    public var zone: TimeZone { timeZone.flatMap(TimeZone.init(identifier:)) ?? ZonedTime.utc }
    /// `UTC` or the IANA name.
    public var zoneName: String { timeZone == nil ? "UTC" : ZonedTime.name(zone) }
    /// Start and end as wall-clock times with their offset: `2026-07-14T17:30:00+02:00`.
    public var localStart: String { ZonedTime.format(start, in: timeZone == nil ? nil : zone) }
    public var localEnd: String { ZonedTime.format(end, in: timeZone == nil ? nil : zone) }

    /// Units still to pay before the booking is confirmed.
    public var remainingQuantity: Int { status == .confirmed ? 0 : max(0, requiredQuantity - paidQuantity) }

    public init(
        id: Int64,
        tenantId: String,
        userId: String,
        resourceId: String,
        resourceKind: Resource.Kind,
        start: Date,
        end: Date,
        seats: Int,
        priceMinor: Int64,
        currency: String,
        requiredProductId: String,
        status: BookingStatus,
        holdExpiresAt: Date,
        createdAt: Date,
        updatedAt: Date,
        confirmedAt: Date? = nil,
        purchaseId: Int64? = nil,
        statusReason: String? = nil,
        requiredQuantity: Int = 1,
        environment: StoreEnvironment? = nil,
        paidQuantity: Int = 0,
        reference: String = "",
        timeZone: String? = nil
    ) {
        self.reference = reference
        self.timeZone = timeZone
        self.paidQuantity = paidQuantity
        self.requiredQuantity = requiredQuantity
        self.environment = environment
        self.id = id
        self.tenantId = tenantId
        self.userId = userId
        self.resourceId = resourceId
        self.resourceKind = resourceKind
        self.start = start
        self.end = end
        self.seats = seats
        self.priceMinor = priceMinor
        self.currency = currency
        self.requiredProductId = requiredProductId
        self.status = status
        self.holdExpiresAt = holdExpiresAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.confirmedAt = confirmedAt
        self.purchaseId = purchaseId
        self.statusReason = statusReason
    }

    /// Whether this booking occupies its slot at `now`: confirmed, or pending within its hold.
    public func holdsSlot(at now: Date) -> Bool {
        status == .confirmed || (status == .pendingPayment && holdExpiresAt > now)
    }
}

/// What already holds a resource over a span of time: how many bookings, how many seats.
public struct Occupancy: Hashable, Sendable {
    public var bookings: Int
    public var seats: Int

    public init(bookings: Int, seats: Int) {
        self.bookings = bookings
        self.seats = seats
    }

    public static let none = Occupancy(bookings: 0, seats: 0)
}

/// The rule for how many bookings a resource can take at once.
public enum Capacity {
    /// Whether a booking of `seats` fits next to what already holds an overlapping slot.
    public static func fits(_ resource: Resource, seats: Int, occupancy: Occupancy) -> Bool {
        switch resource.kind {
        case .rental:
            return occupancy.bookings < (resource.units ?? 1)
        case .experience:
            return occupancy.seats + seats <= (resource.seatsPerSlot ?? 0)
        }
    }
}

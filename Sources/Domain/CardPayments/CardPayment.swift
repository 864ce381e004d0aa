import Foundation

/// Where a card payment stands, as Berth moves it: only forward.
///
/// `creating` (Berth asked the provider; its answer is not recorded yet) → `open` (the app can pay;
/// a declined attempt stays open) → `succeeded` | `canceled`; a deposit passes through `authorized`
/// (the card holds the amount) to `succeeded` (captured, in full or in part) or `canceled` (released).
/// Refunds and disputes of a succeeded payment are counted beside the status
/// (``CardPayment/amountRefunded``, ``CardPayment/disputeStatus``).
public enum CardPaymentStatus: String, Codable, Hashable, Sendable, CaseIterable {
    case creating
    case open
    case authorized
    case succeeded
    case canceled

    /// Whether the app may still pay it.
    public var isOpen: Bool { self == .creating || self == .open }
    /// Whether Berth still waits for something of it (a payment, a capture or a release).
    public var isActive: Bool { isOpen || self == .authorized }

    /// Whether a payment in this status may move to `next` (a late "failed" or "canceled" never undoes a success).
    public func mayMove(to next: CardPaymentStatus) -> Bool {
        switch (self, next) {
        case (.creating, _): true
        case (.open, .open), (.open, .authorized), (.open, .succeeded), (.open, .canceled): true
        case (.authorized, .succeeded), (.authorized, .canceled): true
        default: false
        }
    }
}

/// What a card payment is for.
public enum CardPaymentPurpose: String, Codable, Hashable, Sendable {
    /// The booking's price, captured at once: its success pays the booking.
    case booking
    /// A security deposit taken at check-in: authorized, then captured in part or released (never pays the booking).
    case deposit
}

/// One payment of a booking through a card payment provider (Stripe: one PaymentIntent).
public struct CardPayment: Codable, Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var bookingId: Int64
    public var userId: String
    public var purpose: CardPaymentPurpose
    /// For a deposit: what was captured of the authorization.
    public var amountCaptured: Int64
    /// For an authorized deposit: when it must be captured or released (the card networks' window).
    public var captureBefore: Date?
    /// `stripe`.
    public var provider: String
    /// `live` or `test`: the mode of the provider account's key.
    public var environment: StoreEnvironment
    /// The provider's id (`pi_…`); nil until the provider answered the creation.
    public var providerRef: String?
    public var amountMinor: Int64
    /// ISO 4217, upper case.
    public var currency: String
    public var status: CardPaymentStatus
    /// The provider's own status word (`requires_payment_method`, `requires_action`, `processing`, …).
    public var providerStatus: String?
    /// Refunded so far, in minor units (only grows).
    public var amountRefunded: Int64
    /// `needs_response`, `under_review`, `won`, `lost`… (won and lost are final).
    public var disputeStatus: String?
    /// The key of the creation request: a retry after a lost answer finds the same PaymentIntent.
    public var idempotencyKey: String
    /// The purchase its success recorded.
    public var purchaseId: Int64?
    /// When Berth next asks the provider about it (an open payment: its events may be overdue, or the hold lapses).
    public var nextCheckAt: Date?
    /// Checks that failed in a row (the next one waits longer).
    public var checkFailures: Int
    public var createdAt: Date
    public var updatedAt: Date
    /// The `created` time of the newest provider event applied.
    public var lastEventAt: Date?

    public init(
        id: Int64,
        tenantId: String,
        bookingId: Int64,
        userId: String,
        purpose: CardPaymentPurpose = .booking,
        provider: String = "stripe",
        environment: StoreEnvironment,
        providerRef: String?,
        amountMinor: Int64,
        currency: String,
        status: CardPaymentStatus,
        providerStatus: String? = nil,
        amountRefunded: Int64 = 0,
        amountCaptured: Int64 = 0,
        captureBefore: Date? = nil,
        disputeStatus: String? = nil,
        idempotencyKey: String,
        purchaseId: Int64? = nil,
        nextCheckAt: Date? = nil,
        checkFailures: Int = 0,
        createdAt: Date,
        updatedAt: Date,
        lastEventAt: Date? = nil
    ) {
        self.id = id
        self.purpose = purpose
        self.amountCaptured = amountCaptured
        self.captureBefore = captureBefore
        self.tenantId = tenantId
        self.bookingId = bookingId
        self.userId = userId
        self.provider = provider
        self.environment = environment
        self.providerRef = providerRef
        self.amountMinor = amountMinor
        self.currency = currency
        self.status = status
        self.providerStatus = providerStatus
        self.amountRefunded = amountRefunded
        self.disputeStatus = disputeStatus
        self.idempotencyKey = idempotencyKey
        self.purchaseId = purchaseId
        self.nextCheckAt = nextCheckAt
        self.checkFailures = checkFailures
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.lastEventAt = lastEventAt
    }

    /// What is left to refund (of a booking payment).
    public var refundable: Int64 { status == .succeeded && purpose == .booking ? max(0, amountMinor - amountRefunded) : 0 }
    /// Refunded in full.
    public var fullyRefunded: Bool { status == .succeeded && purpose == .booking && amountRefunded >= amountMinor }

    /// What the app shows while it waits: `requires_payment`, `processing`, `succeeded`, `partially_refunded`,
    /// `refunded`, `disputed`, `canceled`; for a deposit `authorized`, `captured`, `released`.
    public var displayStatus: String {
        switch status {
        case .creating: return "requires_payment"
        case .open:
            return providerStatus == "processing" ? "processing" : (providerStatus == "requires_action" ? "requires_action" : "requires_payment")
        case .authorized: return "authorized"
        case .canceled: return purpose == .deposit ? "released" : "canceled"
        case .succeeded where purpose == .deposit: return "captured"
        case .succeeded:
            if let disputeStatus, disputeStatus != "won" { return disputeStatus == "lost" ? "refunded" : "disputed" }
            if fullyRefunded { return "refunded" }
            return amountRefunded > 0 ? "partially_refunded" : "succeeded"
        }
    }
}

/// Where a refund Berth asked for stands.
public enum CardRefundStatus: String, Codable, Hashable, Sendable {
    /// Recorded; Berth has not had the provider's answer yet (the job asks, with the same key, until it has).
    case pending
    case succeeded
    /// The provider refused it or it failed later: an operator must look.
    case failed
}

/// Who asked for a refund.
public enum RefundInitiator: String, Codable, Hashable, Sendable {
    /// An operator, from the admin API or page.
    case admin
    /// Berth, for a payment that arrived after its slot went to someone else (the tenant's `autoRefundLatePayments`).
    case autoLatePayment = "auto_late_payment"
}

/// A refund of a card payment, recorded before the provider is asked (so a crash cannot lose or repeat it).
public struct CardRefund: Codable, Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var paymentId: Int64
    /// The provider's refund id (`re_…`), once it answered.
    public var providerRef: String?
    public var amountMinor: Int64
    public var status: CardRefundStatus
    public var reason: String
    public var initiatedBy: RefundInitiator
    /// Who: `admin:<key id>` or `system`.
    public var actor: String
    /// Fixed when recorded: every retry sends the same, so the provider refunds once.
    public var idempotencyKey: String
    public var attempts: Int
    public var lastError: String?
    public var nextAttemptAt: Date?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: Int64,
        tenantId: String,
        paymentId: Int64,
        providerRef: String? = nil,
        amountMinor: Int64,
        status: CardRefundStatus = .pending,
        reason: String,
        initiatedBy: RefundInitiator,
        actor: String,
        idempotencyKey: String,
        attempts: Int = 0,
        lastError: String? = nil,
        nextAttemptAt: Date?,
        createdAt: Date,
        updatedAt: Date
    ) {
        self.id = id
        self.tenantId = tenantId
        self.paymentId = paymentId
        self.providerRef = providerRef
        self.amountMinor = amountMinor
        self.status = status
        self.reason = reason
        self.initiatedBy = initiatedBy
        self.actor = actor
        self.idempotencyKey = idempotencyKey
        self.attempts = attempts
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A provider event as received (one row per event id: a redelivery changes nothing).
public struct PaymentEventRecord: Hashable, Sendable {
    public var tenantId: String
    public var provider: String
    public var eventId: String
    public var type: String
    public var objectId: String
    public var created: Date
    public var livemode: Bool
    public var receivedAt: Date
    public var outcome: String
    public var payloadHash: String

    public init(
        tenantId: String,
        provider: String,
        eventId: String,
        type: String,
        objectId: String,
        created: Date,
        livemode: Bool,
        receivedAt: Date,
        outcome: String,
        payloadHash: String
    ) {
        self.tenantId = tenantId
        self.provider = provider
        self.eventId = eventId
        self.type = type
        self.objectId = objectId
        self.created = created
        self.livemode = livemode
        self.receivedAt = receivedAt
        self.outcome = outcome
        self.payloadHash = payloadHash
    }
}

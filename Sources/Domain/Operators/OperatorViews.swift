import Foundation

/// One thing an operator's search found within the tenant.
public struct SearchHit: Hashable, Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case booking, purchase, user, cardPayment = "card_payment", unappliedPayment = "unapplied_payment"
    }
    public var kind: Kind
    /// The booking's or purchase's id, the card payment's id, the user id.
    public var id: String
    /// What matched: `reference`, `id`, `transactionId`, `originalTransactionId`, `orderId`,
    /// `appleOrderId`, `paymentIntent`, `userId`.
    public var matched: String
    public var userId: String?
    public var bookingId: Int64?
    public var purchaseId: Int64?
    /// A line for people: "booking K7MX2QA · sunset-cruise · confirmed".
    public var summary: String
    /// When it happened: a purchase's or payment's time, a booking's start.
    public var at: Date?
    /// Its amount as the currency writes it ("135.00 EUR"), where it has one.
    public var amount: String?

    public init(
        kind: Kind,
        id: String,
        matched: String,
        userId: String?,
        bookingId: Int64? = nil,
        purchaseId: Int64? = nil,
        summary: String,
        at: Date?,
        amount: String? = nil
    ) {
        (self.kind, self.id, self.matched, self.userId, self.bookingId, self.purchaseId, self.summary, self.at, self.amount) =
            (kind, id, matched, userId, bookingId, purchaseId, summary, at, amount)
    }
}

/// One moment in a customer's history.
public struct TimelineEntry: Hashable, Sendable {
    /// `purchase`, `booking`, `booking_change`, `credits`, `subscription`, `notification`, `grant`,
    /// `unapplied_payment`, `card_payment`, `refund`, `consent`, `webhook`.
    public var kind: String
    public var at: Date
    /// A line for people.
    public var summary: String
    /// The facts behind it (store, amount, environment, status, reason…), as text.
    public var detail: [String: String]
    public var bookingId: Int64?
    public var purchaseId: Int64?

    public init(kind: String, at: Date, summary: String, detail: [String: String], bookingId: Int64? = nil, purchaseId: Int64? = nil) {
        (self.kind, self.at, self.summary, self.detail, self.bookingId, self.purchaseId) = (kind, at, summary, detail, bookingId, purchaseId)
    }
}

/// What the store counts for an overview, before it is cut into the operator's days, weeks or
/// months (`Overview.make`). Sums are per UTC hour: zones with half-hour offsets see an hour's
/// money in the hour it started.
public struct OverviewFacts: Hashable, Sendable {
    public struct Money: Hashable, Sendable {
        public var hour: Int64  // hours since 1970-01-01T00:00Z
        public var store: String
        public var currency: String
        public var status: String
        public var count: Int
        public var milliunits: Int64
        public init(hour: Int64, store: String, currency: String, status: String, count: Int, milliunits: Int64) {
            (self.hour, self.store, self.currency, self.status, self.count, self.milliunits) = (hour, store, currency, status, count, milliunits)
        }
    }
    public struct Count: Hashable, Sendable {
        public var hour: Int64
        public var count: Int
        public var amount: Int64
        public init(hour: Int64, count: Int, amount: Int64 = 0) { (self.hour, self.count, self.amount) = (hour, count, amount) }
    }
    public struct Held: Hashable, Sendable {
        public var resourceId: String
        public var start: Date
        public var end: Date
        public var seats: Int
        public var confirmed: Bool
        public init(resourceId: String, start: Date, end: Date, seats: Int, confirmed: Bool) {
            (self.resourceId, self.start, self.end, self.seats, self.confirmed) = (resourceId, start, end, seats, confirmed)
        }
    }
    public struct Active: Hashable, Sendable {
        public var productId: String
        public var currency: String?
        public var milliunits: Int64?
        public var count: Int
        public init(productId: String, currency: String?, milliunits: Int64?, count: Int) {
            (self.productId, self.currency, self.milliunits, self.count) = (productId, currency, milliunits, count)
        }
    }

    /// Money in: every purchase of the period with a signed price, at its purchase hour (refunded
    /// ones too: the money came in; their refund is in `refunds`).
    public var money: [Money] = []
    /// Money that went back, at the hour it went back: store refunds of purchases and card refunds
    /// (a card refund in part counts its part).
    public var refunds: [Money] = []
    /// Purchases of the period whose store signed no price (StoreKit 1 receipts, some test
    /// transactions), per store: counted and shown, never silently left out of the money.
    public var withoutAmount: [String: Int] = [:]
    public var newSubscriptions: [Count] = []
    public var endedSubscriptions: [Count] = []
    public var creditPacks: [Count] = []
    public var creditsSpent: [Count] = []
    /// Bookings created per hour; `amount` counts those of them nothing was paid for.
    public var bookingsMade: [Count] = []
    /// Bookings holding a slot in the next days (confirmed, or pending within their hold).
    public var held: [Held] = []
    public var activeSubscriptions: [Active] = []
    public var unappliedPayments = 0
    public var deadLetters = 0
    public var webhookBacklog = 0
    public var overduePlayAcknowledgements = 0
    public var bookingsNeedingRefund = 0
    public var purchasesNeedingRefund = 0

    public init() {}
}

/// What operators read about their tenant, beyond the listings.
public protocol OperatorViewRepository {
    /// Bookings, purchases, card payments, unapplied payments and users of the tenant that `text`
    /// names exactly (id, reference, transaction or original transaction id, Google order number,
    /// Stripe PaymentIntent, user id); at most `limit` hits.
    func search(tenantId: String, text: String, reference: String?, limit: Int) throws -> [SearchHit]
    /// Purchases whose transaction id is one of `transactionIds` (an Apple order's transactions).
    func purchases(tenantId: String, transactionIds: [String]) throws -> [SearchHit]
    /// Everything about one user, newest first, at most `limit` entries of each kind.
    func timeline(tenantId: String, userId: String, limit: Int) throws -> [TimelineEntry]
    /// One customer's totals over their whole history (the customer page's header).
    func customerFacts(tenantId: String, userId: String) throws -> CustomerFacts
    /// The figures of [from, to) and of the bookings in [now, heldUntil).
    func overview(tenantId: String, from: Date, to: Date, now: Date, heldUntil: Date, playOverdueBefore: Date) throws -> OverviewFacts
    /// The bookings that may owe customers money (cancelled or awaiting a refund, or lapsed after a
    /// part payment, with a store payment applied or awaiting a refund, or card money left to refund;
    /// or any booking with a store payment awaiting a refund), with those payments and their
    /// resolution; the most recently changed first, at most `limit`; with `bookingId`, that one only.
    func owedFacts(tenantId: String, now: Date, bookingId: Int64?, limit: Int) throws -> [OwedFacts]
    /// What each of `bookingIds` was paid through, and how much (minor units of the booking's
    /// currency): applied store purchases at their signed price (else the booking's price for their
    /// units) and succeeded card payments less their refunds.
    func bookingPayments(tenantId: String, bookingIds: [Int64]) throws -> [Int64: BookingPaid]
    /// The confirmed and pending bookings that overlap [from, to), of one resource or all, by start
    /// (at most 5,000): the day's departures.
    func bookingsOverlapping(tenantId: String, from: Date, to: Date, resourceId: String?) throws -> [Booking]
    /// Records how an operator closed what a booking owes; false when it was closed already.
    func resolveOwed(tenantId: String, bookingId: Int64, resolved: OwedPayment.Resolved) throws -> Bool
}

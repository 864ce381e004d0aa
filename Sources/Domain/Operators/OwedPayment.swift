import Foundation

/// Money a customer paid for a booking that will not take place: cancelled (by the operator or a
/// closure), a part-paid hold that lapsed, or a payment that lost its slot or came twice. It is owed
/// until the rail that took it gives it back: a card payment is refunded by Berth; the App Store and
/// Google Play refund their own purchases (the customer asks them; Berth applies their refund notice
/// itself), and the operator records what the customer was told.
public struct OwedPayment: Hashable, Sendable {
    /// The rail that took the money.
    public enum Rail: String, Sendable, CaseIterable, Comparable {
        case appStore = "app_store"
        case googlePlay = "google_play"
        case card

        public static func < (a: Rail, b: Rail) -> Bool { a.rawValue < b.rawValue }

        /// The rail of a purchase's store (`purchases.store`).
        public init?(store: StoreName) {
            switch store {
            case .appStore: self = .appStore
            case .googlePlay: self = .googlePlay
            case .card: self = .card
            default: return nil
            }
        }

        /// What resolves it: a refund Berth makes (card) or words for the customer (the stores).
        public var resolvedBy: String { self == .card ? "refund" : "customer" }
    }

    /// Why the booking will not take place.
    public enum Reason: String, Sendable {
        /// The operator (or a closure) cancelled a paid booking.
        case cancelled
        /// A booking paid in part whose hold ran out before the rest was paid.
        case holdLapsed = "hold_lapsed"
        /// A payment that came after the slot was taken (or the booking had expired).
        case slotLost = "slot_lost"
        /// A payment for a booking already paid, or one Berth could not honour.
        case notHonoured = "not_honoured"
    }

    /// How an operator closed a store-paid one.
    public enum Resolution: String, Sendable, CaseIterable {
        /// The customer was told how to ask the store for the refund.
        case customerTold = "customer_told"
        /// The customer got something else instead (a new date, a voucher).
        case credited
        /// The money went back some other way (cash, a bank transfer, the provider's dashboard).
        case refundedElsewhere = "refunded_elsewhere"
        /// The customer cancelled late: the cancellation policy gave part (or none) back, the rest is kept.
        case policyKept = "policy_kept"
    }

    public struct Resolved: Hashable, Sendable {
        public var how: Resolution
        public var note: String?
        public var actor: String
        public var at: Date

        public init(how: Resolution, note: String?, actor: String, at: Date) {
            (self.how, self.note, self.actor, self.at) = (how, note, actor, at)
        }
    }

    public var booking: Booking
    public var rail: Rail
    public var reason: Reason
    /// What is owed, in minor units of `currency`: the store's price when it signed one, else the
    /// booking's price for the units paid (`amountFromBooking`); for a card, what is left to refund.
    public var amountMinor: Int64
    public var currency: String
    public var amountFromBooking: Bool
    /// The store purchases (or card payments' purchases) behind it.
    public var purchaseIds: [Int64]
    /// Since when it is owed (the booking's last change, or the lapse of its hold).
    public var since: Date
    public var resolved: Resolved?

    /// What the operator does or says, in plain words.
    public var guidance: String { Self.guidance(rail) }

    public static func guidance(_ rail: Rail) -> String {
        switch rail {
        case .appStore:
            "Apple refunds App Store purchases, not Berth: tell the customer to ask Apple at reportaproblem.apple.com "
                + "(or in the App Store: account, Purchase History, Report a Problem) for this purchase. When Apple refunds it, "
                + "Berth receives Apple's refund notice and records it by itself. Then mark this as \"customer told\"."
        case .googlePlay:
            "Google refunds Google Play purchases: tell the customer to ask for the refund in Google Play (play.google.com, "
                + "Order history, Request a refund), or refund the order yourself in the Play Console. Berth receives Google's "
                + "voided-purchase notice and records it by itself. Then mark this as \"customer told\"."
        case .card:
            "Refund the card payment from Berth (Refund): Stripe returns it to the customer's card, usually within 5 to 10 business days."
        }
    }
}

/// How a booking was paid so far: the rails, and the amount in minor units of its currency.
public struct BookingPaid: Hashable, Sendable {
    public var rails: [OwedPayment.Rail]
    public var amountMinor: Int64

    public init(rails: [OwedPayment.Rail], amountMinor: Int64) {
        (self.rails, self.amountMinor) = (rails, amountMinor)
    }
}

/// What is owed in one currency: how many entries and how much, in minor units.
public struct OwedTotal: Hashable, Sendable {
    public var currency: String
    public var count: Int
    public var amountMinor: Int64

    public init(currency: String, count: Int, amountMinor: Int64) {
        (self.currency, self.count, self.amountMinor) = (currency, count, amountMinor)
    }

    /// Per currency, sorted by currency.
    public static func of(_ owed: [OwedPayment]) -> [OwedTotal] {
        var totals: [String: OwedTotal] = [:]
        for entry in owed {
            var total = totals[entry.currency] ?? OwedTotal(currency: entry.currency, count: 0, amountMinor: 0)
            total.count += 1
            total.amountMinor = Overview.sum(total.amountMinor, entry.amountMinor)
            totals[entry.currency] = total
        }
        return totals.values.sorted { $0.currency < $1.currency }
    }
}

/// The facts the store reads for one booking that may owe money (``OwedRules``).
public struct OwedFacts: Hashable, Sendable {
    public struct StorePayment: Hashable, Sendable {
        public var purchaseId: Int64
        public var store: StoreName
        public var status: PurchaseStatus
        public var priceMilliunits: Int64?
        public var currency: String?
        public var quantity: Int?
        public var outcomeCode: String?

        public init(
            purchaseId: Int64,
            store: StoreName,
            status: PurchaseStatus,
            priceMilliunits: Int64?,
            currency: String?,
            quantity: Int?,
            outcomeCode: String?
        ) {
            (self.purchaseId, self.store, self.status, self.priceMilliunits, self.currency, self.quantity, self.outcomeCode) =
                (purchaseId, store, status, priceMilliunits, currency, quantity, outcomeCode)
        }
    }

    public var booking: Booking
    /// Its App Store and Google Play purchases that are applied or await a refund.
    public var storePayments: [StorePayment]
    /// What is left to refund of its succeeded card payments (booking purpose), and their purchases.
    public var cardRefundable: Int64
    public var cardCurrency: String?
    public var cardPurchaseIds: [Int64]
    public var resolved: OwedPayment.Resolved?

    public init(
        booking: Booking,
        storePayments: [StorePayment],
        cardRefundable: Int64,
        cardCurrency: String?,
        cardPurchaseIds: [Int64],
        resolved: OwedPayment.Resolved?
    ) {
        (self.booking, self.storePayments, self.cardRefundable, self.cardCurrency, self.cardPurchaseIds, self.resolved) =
            (booking, storePayments, cardRefundable, cardCurrency, cardPurchaseIds, resolved)
    }
}

/// Decides what a booking owes, and through which rails.
public enum OwedRules {
    /// The booking will not take place: cancelled, lapsed after a part payment, or its late payment lost the slot.
    public static func reason(_ booking: Booking, now: Date) -> OwedPayment.Reason? {
        switch booking.status {
        case .cancelled: return .cancelled
        case .paymentNeedsRefund: return .slotLost
        case .pendingPayment where booking.paidQuantity > 0 && booking.holdExpiresAt <= now: return .holdLapsed
        default: return nil
        }
    }

    /// What `facts` owe now, one entry per rail; empty when nothing is owed. A resolved store rail is
    /// returned with its resolution (the caller lists open or resolved ones); a card rail is owed
    /// while anything is left to refund, unless it was resolved as refunded elsewhere or as kept
    /// under the cancellation policy (the customer cancelled late).
    public static func owed(_ facts: OwedFacts, now: Date) -> [OwedPayment] {
        let booking = facts.booking
        let gone = reason(booking, now: now)
        var byRail: [OwedPayment.Rail: (amount: Int64, currency: String, fromBooking: Bool, ids: [Int64], reason: OwedPayment.Reason)] = [:]
        for payment in facts.storePayments {
            guard let rail = OwedPayment.Rail(store: payment.store), rail != .card else { continue }
            let why: OwedPayment.Reason
            switch payment.status {
            case .needsRefund: why = gone ?? (payment.outcomeCode == ErrorCode.slotUnavailable.rawValue ? .slotLost : .notHonoured)
            case .applied:
                guard let gone else { continue }
                why = gone
            default: continue
            }
            let (amount, currency, fromBooking) = Self.amount(payment, booking: booking)
            var entry = byRail[rail] ?? (0, currency, fromBooking, [], why)
            if entry.currency == currency {
                entry.amount = Overview.sum(entry.amount, amount)
            }
            entry.fromBooking = entry.fromBooking || fromBooking
            entry.ids.append(payment.purchaseId)
            byRail[rail] = entry
        }
        if let gone, facts.cardRefundable > 0 {
            byRail[.card] = (facts.cardRefundable, facts.cardCurrency ?? booking.currency, false, facts.cardPurchaseIds, gone)
        }
        let since = gone == .holdLapsed ? booking.holdExpiresAt : booking.updatedAt
        return byRail.sorted { $0.key < $1.key }.compactMap { rail, entry in
            return OwedPayment(
                booking: booking,
                rail: rail,
                reason: entry.reason,
                amountMinor: entry.amount,
                currency: entry.currency,
                amountFromBooking: entry.fromBooking,
                purchaseIds: entry.ids,
                since: since,
                resolved: rail == .card && ![.refundedElsewhere, .policyKept].contains(facts.resolved?.how) ? nil : facts.resolved
            )
        }
    }

    /// A store purchase's amount in minor units: the price the store signed (milliunits of its
    /// currency), else the booking's price for the units it paid.
    public static func amount(_ payment: OwedFacts.StorePayment, booking: Booking) -> (Int64, String, Bool) {
        if let milliunits = payment.priceMilliunits, let currency = payment.currency, milliunits >= 0 {
            let digits = CurrencyUnits.fractionDigits(currency)
            // milliunits → minor: × 10^digits / 1000, rounded half up (no trap on stored values).
            var scaled = Decimal(milliunits)
            for _ in 0..<digits { scaled *= 10 }
            scaled /= 1000
            var rounded = Decimal()
            NSDecimalRound(&rounded, &scaled, 0, .plain)
            let value = NSDecimalNumber(decimal: rounded).int64Value
            return (value, currency.uppercased(), false)
        }
        let units = Int64(max(1, min(payment.quantity ?? 1, 1000)))
        let required = Int64(max(1, booking.requiredQuantity))
        let (product, overflow) = booking.priceMinor.multipliedReportingOverflow(by: units)
        return (overflow ? booking.priceMinor : min(booking.priceMinor, product / required), booking.currency, true)
    }
}

import Foundation

/// What a customer gets back when they cancel, and until when they may move a trip: the tenant's
/// policy, which a resource may override.
///
/// `{"tiers": [{"hoursBefore": 48, "refundPercent": 100}, {"hoursBefore": 24, "refundPercent": 50}],
/// "changeUntilHoursBefore": 24}`: cancelled 48 hours or more before the start, all of it back;
/// 24 to 48 hours before, half; later, nothing. Moves are allowed until 24 hours before.
public struct CancellationPolicy: Codable, Hashable, Sendable {
    public struct Tier: Codable, Hashable, Sendable {
        /// At least this many hours before the start…
        public var hoursBefore: Int
        /// …this share of what was paid goes back.
        public var refundPercent: Int

        public init(hoursBefore: Int, refundPercent: Int) {
            (self.hoursBefore, self.refundPercent) = (hoursBefore, refundPercent)
        }
    }

    public var tiers: [Tier]
    /// Moves to another slot or day are allowed until this many hours before the start; absent: until
    /// the start.
    public var changeUntilHoursBefore: Int?
    /// A customer's move to a cheaper place refunds the difference of a card payment (absent or
    /// false: the booking keeps what was paid).
    public var refundPriceDifference: Bool?

    public init(tiers: [Tier], changeUntilHoursBefore: Int? = nil, refundPriceDifference: Bool? = nil) {
        (self.tiers, self.changeUntilHoursBefore, self.refundPriceDifference) = (tiers, changeUntilHoursBefore, refundPriceDifference)
    }

    /// A year of hours: further ahead than any tier means.
    static let maximumHours = 8_784

    func validate(owner: String) throws(CatalogError) {
        guard (1...20).contains(tiers.count) else { throw CatalogError("\(owner): cancellation needs 1 to 20 tiers") }
        for tier in tiers {
            guard (0...Self.maximumHours).contains(tier.hoursBefore) else {
                throw CatalogError("\(owner): a cancellation tier's hoursBefore is 0...\(Self.maximumHours), not \(tier.hoursBefore)")
            }
            guard (0...100).contains(tier.refundPercent) else {
                throw CatalogError("\(owner): a cancellation tier's refundPercent is 0...100, not \(tier.refundPercent)")
            }
        }
        guard Set(tiers.map(\.hoursBefore)).count == tiers.count else {
            throw CatalogError("\(owner): two cancellation tiers name the same hoursBefore")
        }
        if let hours = changeUntilHoursBefore, !(0...Self.maximumHours).contains(hours) {
            throw CatalogError("\(owner): changeUntilHoursBefore is 0...\(Self.maximumHours), not \(hours)")
        }
    }

    /// The share refunded when cancelled `hoursLeft` hours before the start: the tier with the most
    /// hours that is still reached; none reached (or the trip began), 0.
    public func refundPercent(hoursLeft: Double) -> Int {
        guard hoursLeft.isFinite, hoursLeft >= 0 else { return 0 }
        return tiers.filter { Double($0.hoursBefore) <= hoursLeft }.max { $0.hoursBefore < $1.hoursBefore }?.refundPercent ?? 0
    }

    /// Whether a move is still allowed `hoursLeft` hours before the start.
    public func allowsChange(hoursLeft: Double) -> Bool {
        hoursLeft.isFinite && hoursLeft >= Double(changeUntilHoursBefore ?? 0) && hoursLeft > 0
    }
}

extension Tenant {
    /// The policy for `resource`'s bookings: its own, else the tenant's, else none.
    public func cancellationPolicy(resourceId: String) -> CancellationPolicy? {
        resource(id: resourceId)?.cancellation ?? cancellation
    }
}

/// What cancelling a booking now gives back, as the app shows it before the customer confirms.
public struct CancellationQuote: Hashable, Sendable {
    public enum Rail: String, Sendable {
        case card, appStore = "app_store", googlePlay = "google_play", none
    }

    /// Whether the caller may cancel it now.
    public var allowed: Bool
    /// Why not, as a code (`cancellation_not_offered`, `booking_started`, `invalid_transition`).
    public var refusal: ErrorCode?
    public var refundPercent: Int
    /// What was paid for it, and what goes back (`paidMinor * refundPercent / 100`, rounded down).
    public var paidMinor: Int64
    public var refundMinor: Int64
    public var currency: String
    public var rail: Rail
    public var hoursLeft: Double
    /// What the app tells the customer, in plain words.
    public var words: String

    /// The quote for `booking` at `now`: an operator always offers 100 %; a customer gets the policy's
    /// tier. Unpaid bookings cost nothing to cancel; a paid one without a policy is the operator's to
    /// cancel.
    public static func make(
        booking: Booking,
        paidMinor: Int64,
        rail: Rail,
        policy: CancellationPolicy?,
        byOperator: Bool,
        now: Date
    ) -> CancellationQuote {
        let hoursLeft = booking.start.timeIntervalSince(now) / 3600
        let money = CurrencyUnits.self
        func quote(_ allowed: Bool, _ refusal: ErrorCode?, percent: Int, words: String) -> CancellationQuote {
            let refund = paidMinor > 0 ? paidMinor / 100 * Int64(percent) + (paidMinor % 100) * Int64(percent) / 100 : 0
            return CancellationQuote(
                allowed: allowed,
                refusal: refusal,
                refundPercent: percent,
                paidMinor: paidMinor,
                refundMinor: refund,
                currency: booking.currency,
                rail: rail,
                hoursLeft: hoursLeft,
                words: words
            )
        }
        switch booking.status {
        case .pendingPayment:
            return quote(true, nil, percent: 0, words: "Nothing was paid: cancelling frees the place at no cost.")
        case .confirmed:
            break
        default:
            return quote(
                false,
                .invalidTransition,
                percent: 0,
                words: "This booking is already \(booking.status.rawValue.replacingOccurrences(of: "_", with: " "))."
            )
        }
        if byOperator {
            return quote(true, nil, percent: 100, words: rail.refundWords(money.text(minor: paidMinor, currency: booking.currency), whole: true))
        }
        guard hoursLeft > 0 else {
            return quote(false, .bookingStarted, percent: 0, words: "The trip has started: ask the operator.")
        }
        guard let policy else {
            return quote(false, .cancellationNotOffered, percent: 0, words: "This booking is cancelled by the operator only: contact them.")
        }
        let percent = policy.refundPercent(hoursLeft: hoursLeft)
        let amount = quote(true, nil, percent: percent, words: "").refundMinor
        let words =
            percent == 0
            ? "Cancelling now gives nothing back (the policy's last refund was \(policy.tiers.map(\.hoursBefore).min() ?? 0) hours before the start)."
            : rail.refundWords(money.text(minor: amount, currency: booking.currency), whole: percent == 100)
        return quote(true, nil, percent: percent, words: percent == 100 || percent == 0 ? words : "\(percent) % back: \(words)")
    }
}

extension CancellationQuote.Rail {
    func refundWords(_ amount: String, whole: Bool) -> String {
        switch self {
        case .card: "\(amount) goes back to the card you paid with, in 5 to 10 days."
        case .appStore:
            "\(amount) is owed to you: Apple decides refunds of App Store purchases, so the operator settles it with you (request one at reportaproblem.apple.com)."
        case .googlePlay: "\(amount) is owed to you: Google decides refunds of Play purchases, so the operator settles it with you."
        case .none: "Nothing was paid through Berth: the operator settles \(whole ? "it" : amount) with you."
        }
    }
}

/// Who cancelled a booking, as its `statusReason` starts and webhooks name it (`reason`).
public enum BookingCancellation {
    /// `closure` (a closure's resolve), `customer` (the customer, under the policy) or `operator`.
    public static func reasonCode(_ statusReason: String?) -> String {
        guard let statusReason else { return "operator" }
        if statusReason.hasPrefix("closure:") { return "closure" }
        if statusReason.hasPrefix("customer:") { return "customer" }
        return "operator"
    }
}

import Foundation

/// What a customer is worth at a glance, over their whole history (not limited like the timeline).
public struct CustomerFacts: Hashable, Sendable {
    public struct Amount: Hashable, Sendable {
        public var currency: String
        public var milliunits: Int64
        public init(currency: String, milliunits: Int64) { (self.currency, self.milliunits) = (currency, milliunits) }
    }
    /// Every purchase with a known price, per currency (refunded ones too: the money came in).
    public var paid: [Amount] = []
    /// What went back, per currency: store refunds at the purchase's price, card refunds at their amount.
    public var refunded: [Amount] = []
    public var purchases = 0
    /// Purchases whose store signed no price (counted, not in `paid`).
    public var purchasesWithoutAmount = 0
    public var bookings = 0
    /// The first time Berth saw the customer (a purchase, a booking, credits, a subscription).
    public var firstSeen: Date?
    /// The stores and rails the customer paid through (`app_store`, `google_play`, `stripe`).
    public var stores: [String] = []

    public init() {}
}

/// A customer's timeline in plain words: each entry's facts (what the store returns) told as an
/// operator would say them, with amounts and local times, no internal codes.
public enum CustomerStory {
    /// The timeline with its summaries written; `tenant` names products and resources and gives the zone.
    public static func tell(_ entries: [TimelineEntry], tenant: Tenant) -> [TimelineEntry] {
        entries.map { entry in
            var told = entry
            told.summary = words(entry, tenant: tenant)
            return told
        }
    }

    public static func words(_ entry: TimelineEntry, tenant: Tenant) -> String {
        let d = entry.detail
        switch entry.kind {
        case "purchase": return purchase(d, tenant: tenant)
        case "booking": return booking(d, tenant: tenant)
        case "booking_change": return change(d)
        case "credits": return credits(d)
        case "subscription":
            return "Subscribed to \(productName(d["productId"], tenant: tenant)) through \(storeName(d["store"]))"
                + (d["ended"] == "true" ? " · ended" : "")
        case "notification": return notification(d)
        case "grant":
            let state = d["state"].map(plain) ?? ""
            return "\(d["entitlement"] ?? "Access") access from \(plain(d["source"] ?? "")) · \(state)"
                + (d["endedReason"].map { " (\(plain($0)))" } ?? "")
        case "unapplied_payment":
            return "A payment for \(productName(d["productId"], tenant: tenant)) through \(storeName(d["store"])) could not be applied"
                + (d["reason"].map { ": \($0)" } ?? "") + " · \(plain(d["status"] ?? ""))"
        case "card_payment":
            let currency = (d["currency"] ?? "").uppercased()
            let amount = d["amount"].flatMap { Int64($0) }.map { CurrencyUnits.text(minor: $0, currency: currency) } ?? ""
            let refunded = d["refunded"].flatMap { Int64($0) } ?? 0
            return "\(d["purpose"] == "deposit" ? "Card deposit" : "Card payment") of \(amount) · \(cardStatus(d["status"] ?? ""))"
                + (refunded > 0 ? " · \(CurrencyUnits.text(minor: refunded, currency: currency)) refunded" : "")
        case "refund":
            let currency = (d["currency"] ?? "").uppercased()
            let amount = d["amount"].flatMap { Int64($0) }.map { CurrencyUnits.text(minor: $0, currency: currency) } ?? ""
            let status = d["status"] == "succeeded" ? "done" : plain(d["status"] ?? "")
            return "Card refund of \(amount)" + (d["reason"].map { " · “\($0)”" } ?? "") + " · \(status)"
        case "consent":
            return d["consented"] == "true" ? "Agreed to share consumption data with Apple" : "Declined to share consumption data with Apple"
        case "webhook":
            let attempts = Int(d["attempts"] ?? "") ?? 0
            let state: String
            switch d["status"] {
            case "delivered": state = "delivered"
            case "given up": state = "given up"
            default: state = "waiting to be delivered"
            }
            return "Your server was told “\(d["event"] ?? "")” · \(state)\(attempts > 1 ? " after \(attempts) attempts" : "")"
        default:
            return entry.summary.isEmpty ? plain(entry.kind) : entry.summary
        }
    }

    // MARK: Kinds

    static func purchase(_ d: [String: String], tenant: Tenant) -> String {
        let product = productName(d["productId"], tenant: tenant)
        let renewal = d["kind"] == "subscription" && d["transactionId"] != nil && d["transactionId"] != d["originalTransactionId"]
        let amount = amountText(d["priceMilliunits"], d["currency"])
        var text = renewal ? "Renewed \(product)" : "Bought \(product)"
        text += amount.map { " for \($0)" } ?? " (the store gave no price)"
        text += " through \(storeName(d["store"]))"
        if let environment = d["environment"], StoreEnvironment(rawValue: environment).isTest { text += " (test)" }
        switch d["status"] {
        case "refunded": text += " · refunded"
        case "needs_refund":
            text += " · could not be used, owed back"
            if let code = d["outcomeCode"] { text += " (\(plain(code)))" }
        default: break
        }
        return text
    }

    static func booking(_ d: [String: String], tenant: Tenant) -> String {
        let resource = d["resourceId"].map { tenant.resourceNames[$0] ?? $0 } ?? "a trip"
        let seats = Int(d["seats"] ?? "") ?? 1
        var text = "Booked \(resource) for \(tripTime(start: d["localStart"], end: d["localEnd"], rental: d["resourceKind"] == "rental"))"
        if d["resourceKind"] != "rental" { text += " · \(seats) \(seats == 1 ? "seat" : "seats")" }
        if let price = d["price"] { text += " · \(price)" }
        if let reference = d["reference"] { text += " · \(reference)" }
        text += " · \(bookingStatus(d["status"] ?? ""))"
        return text
    }

    static func change(_ d: [String: String]) -> String {
        let who = actor(d["actor"] ?? "")
        let reason = d["reason"].flatMap { $0.isEmpty ? nil : " · “\($0)”" } ?? ""
        let what: String
        switch d["action"] ?? "" {
        case "booking.confirmed": what = "Booking paid and confirmed"
        case "booking.partly_paid": what = "Part of the booking paid"
        case "booking.manual_confirm": what = "Booking confirmed by hand"
        case "booking.cancelled": what = "Booking cancelled"
        case "purchase.needs_refund": what = "A payment could not be used for the booking and is owed back"
        case "purchase.refused": what = "A payment was refused"
        case "replay.detected": what = "Another account tried to use this payment"
        case "owed.resolved": what = "Money owed closed (\(plain(d["how"] ?? "")))"
        case let action where action.hasPrefix("notification."):
            what = "\(storeOfNotification(d)) said: \(plain(String(action.dropFirst("notification.".count))))"
        case let action: what = sentence(plain(action.replacingOccurrences(of: ".", with: " ")))
        }
        return "\(what) · by \(who)\(reason)"
    }

    static func credits(_ d: [String: String]) -> String {
        let amount = Int64(d["amount"] ?? "") ?? 0
        let type = d["creditType"] ?? "credits"
        let what: String
        switch d["type"] ?? "" {
        case "purchase": what = "bought"
        case "bonus": what = "bonus"
        case "usage": what = "used"
        case "refund": what = "taken back (refund)"
        case "refund_reversal": what = "given back (refund reversed)"
        case "adjustment": what = "adjusted by an operator"
        case "debt_settlement": what = "settled a debt"
        case let other: what = plain(other)
        }
        let signed = amount > 0 ? "+\(amount)" : amount < 0 ? "−\(amount.magnitude)" : "0"
        return "\(signed) \(type) \(what) · balance \(d["balanceAfter"] ?? "")" + (d["reason"].map { " · “\($0)”" } ?? "")
    }

    static func notification(_ d: [String: String]) -> String {
        let type = d["type"] ?? ""
        let said: String
        switch type {
        case "DID_RENEW": said = "the subscription renewed"
        case "SUBSCRIBED": said = "subscribed"
        case "REFUND": said = "the payment was refunded"
        case "REFUND_REVERSED": said = "the refund was reversed"
        case "REVOKE": said = "access was revoked (Family Sharing)"
        case "EXPIRED": said = "the subscription expired"
        case "DID_FAIL_TO_RENEW": said = "the renewal payment failed"
        case "DID_CHANGE_RENEWAL_STATUS": said = "auto-renew was changed"
        case "DID_CHANGE_RENEWAL_PREF": said = "the next plan was changed"
        case "GRACE_PERIOD_EXPIRED": said = "the grace period ended"
        case "CONSUMPTION_REQUEST": said = "Apple asked about consumption for a refund request"
        case "ONE_TIME_CHARGE": said = "a one-time purchase was made"
        case "PRICE_INCREASE": said = "a price increase"
        case "RENEWAL_EXTENDED": said = "the renewal date was extended"
        default: said = plain(type.lowercased())
        }
        let outcome = d["outcome"].map { " → \(plain($0))" } ?? ""
        return "\(storeOfNotification(d)) said: \(said)\(outcome)"
    }

    // MARK: Words

    /// `snake_case` and codes as words: "subscription_active" → "subscription active".
    static func plain(_ code: String) -> String { code.replacingOccurrences(of: "_", with: " ") }

    /// The first letter capitalized: "card payment refunded" → "Card payment refunded".
    static func sentence(_ text: String) -> String { text.prefix(1).uppercased() + text.dropFirst() }

    static func storeName(_ store: String?) -> String {
        switch store {
        case "app_store": return "the App Store"
        case "google_play": return "Google Play"
        case "stripe": return "card"
        case let other?: return other
        case nil: return "a store"
        }
    }

    static func storeOfNotification(_ d: [String: String]) -> String { d["store"] == "google_play" ? "Google" : "Apple" }

    static func actor(_ raw: String) -> String {
        if raw.hasPrefix("admin:") { return "an operator" }
        if raw.hasPrefix("user:") { return "customer \(raw.dropFirst("user:".count))" }
        if raw.hasPrefix("server:") { return "the app's server" }
        if raw.hasPrefix("client:") { return "the app" }
        switch raw {
        case "apple": return "Apple"
        case "google_play", "google": return "Google"
        case "stripe": return "Stripe"
        case "system": return "Berth"
        default: return raw
        }
    }

    static func bookingStatus(_ status: String) -> String {
        switch status {
        case "pending_payment": return "waiting for payment"
        case "payment_needs_refund": return "paid, owed back"
        default: return plain(status)
        }
    }

    static func cardStatus(_ status: String) -> String {
        switch status {
        case "succeeded": return "paid"
        case "open", "creating": return "waiting for the customer"
        case "authorized": return "authorized, not yet taken"
        default: return plain(status)
        }
    }

    static func productName(_ id: String?, tenant: Tenant) -> String {
        guard let id else { return "a product" }
        guard let title = tenant.products.first(where: { $0.id == id })?.title, !title.isEmpty else { return id }
        return title
    }

    /// Milliunits as the currency writes them: 39990 EUR → "39.99 EUR".
    static func amountText(_ milliunits: String?, _ currency: String?) -> String? {
        guard let currency, let milli = milliunits.flatMap({ Int64($0) }) else { return nil }
        let digits = CurrencyUnits.fractionDigits(currency)
        var minor = milli
        for _ in digits..<3 { minor /= 10 }
        return CurrencyUnits.text(minor: minor, currency: currency)
    }

    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// A trip's local time from `2026-12-02T00:00:00+01:00`-style times: a rental by its days
    /// ("2 Dec 2026, full day", "2–4 Dec 2026"), an experience by its hours ("14 Jul 2026, 17:30–19:30 (+02:00)").
    public static func tripTime(start: String?, end: String?, rental: Bool) -> String {
        func parts(_ text: String?) -> (year: String, month: Int, day: Int, time: String, offset: String)? {
            guard let text, text.count >= 25 else { return nil }
            let chars = Array(text)
            let year = String(chars[0..<4]), time = String(chars[11..<16]), offset = String(chars[19...])
            guard let month = Int(String(chars[5..<7])), let day = Int(String(chars[8..<10])), (1...12).contains(month) else { return nil }
            return (year, month, day, time, offset)
        }
        guard let s = parts(start) else { return start ?? "" }
        let zone = s.offset == "+00:00" ? "UTC" : s.offset
        let startDay = "\(s.day) \(months[s.month - 1]) \(s.year)"
        guard let e = parts(end) else { return "\(startDay), \(s.time) (\(zone))" }
        if rental || (s.time == "00:00" && e.time == "00:00") {
            let sameDay = (s.year, s.month, s.day) == (e.year, e.month, e.day)
            // A day that ends at the next midnight is one day.
            let nextMidnight = e.time == "00:00" && !sameDay
            if sameDay || nextMidnight && dayAfter(s, e) {
                return s.time == "00:00" ? "\(startDay), full day" : "\(startDay), \(s.time)–\(e.time)"
            }
            return "\(s.day) \(months[s.month - 1])–\(e.day) \(months[e.month - 1]) \(e.year)"
        }
        return "\(startDay), \(s.time)–\(e.time) (\(zone))"
    }

    private static func dayAfter(
        _ s: (year: String, month: Int, day: Int, time: String, offset: String),
        _ e: (year: String, month: Int, day: Int, time: String, offset: String)
    ) -> Bool {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = ZonedTime.utc
        guard let year = Int(s.year), let endYear = Int(e.year),
            let first = calendar.date(from: DateComponents(year: year, month: s.month, day: s.day)),
            let last = calendar.date(from: DateComponents(year: endYear, month: e.month, day: e.day))
        else { return false }
        return last.timeIntervalSince(first) == 86_400
    }
}

import Foundation

/// The body of Send Consumption Information (V2, `PUT /inApps/v2/transactions/consumption/{id}`):
/// what Berth knows of a purchase whose customer asked Apple for a refund. Sent only with the
/// customer's recorded consent (Apple refuses `customerConsented` other than true).
public struct ConsumptionReport: Codable, Hashable, Sendable {
    public var customerConsented: Bool
    public var sampleContentProvided: Bool
    /// `DELIVERED`, or `UNDELIVERED_OTHER` when Berth never applied the purchase (or took it back).
    public var deliveryStatus: String
    /// How much was used, in milliunits (0…100000); 0 unless delivered; absent for auto-renewable
    /// subscriptions, whose share Apple computes itself.
    public var consumptionPercentage: Int?
    /// `DECLINE`, `GRANT_FULL` or `GRANT_PRORATED` by the tenant's policy; absent without one.
    public var refundPreference: String?

    /// The consumption of what the purchase delivered at `now`: the spent share of a credit pack's
    /// lot, the elapsed share of a booking or a pass, all of a lifetime unlock.
    public init(purchase: Purchase?, product: Product?, booking: Booking?, lot: CreditLot?, preference: RefundPreferencePolicy?, now: Date) {
        customerConsented = true
        sampleContentProvided = false
        var delivered = purchase?.status == .applied
        var share: Int? = 0
        if let purchase, delivered {
            switch purchase.kind ?? product?.kind {
            case .credits:
                if let lot, lot.amount > 0 {
                    share = Self.milliunits(part: lot.amount - max(0, min(lot.remaining, lot.amount)), of: lot.amount)
                }
            case .booking:
                if let booking, booking.status == .confirmed {
                    share = Self.elapsed(from: booking.start, to: booking.end, at: now)
                } else {
                    delivered = false
                }
            case .subscription:
                share = nil
            case .unlock:
                if let days = product?.durationDays {
                    share = Self.elapsed(from: purchase.purchasedAt, to: purchase.purchasedAt.addingTimeInterval(Double(days) * 86_400), at: now)
                } else {
                    share = 100_000
                }
            case nil:
                share = 0
            }
        }
        if !delivered { share = 0 }
        deliveryStatus = delivered ? "DELIVERED" : "UNDELIVERED_OTHER"
        consumptionPercentage = share
        refundPreference = preference?.preference(delivered: delivered, consumption: share)
    }

    static func milliunits(part: Int64, of whole: Int64) -> Int {
        guard whole > 0 else { return 0 }
        let clamped = max(0, min(part, whole))
        let (product, overflow) = clamped.multipliedReportingOverflow(by: 100_000)
        return overflow ? Int(Double(clamped) / Double(whole) * 100_000) : Int(product / whole)
    }

    static func elapsed(from start: Date, to end: Date, at now: Date) -> Int {
        guard end > start else { return now >= end ? 100_000 : 0 }
        if now <= start { return 0 }
        if now >= end { return 100_000 }
        let share = now.timeIntervalSince(start) / end.timeIntervalSince(start)
        return Int((share * 100_000).rounded(.down))
    }
}

/// What the tenant asks Apple to do with a refund request (`apple.refundPreference`): always one of
/// Apple's values, or `auto`: grant in full what was not delivered or not used, decline what was
/// used up, prorate the rest.
public enum RefundPreferencePolicy: String, Codable, Hashable, Sendable, CaseIterable {
    case auto
    case decline = "DECLINE"
    case grantFull = "GRANT_FULL"
    case grantProrated = "GRANT_PRORATED"

    func preference(delivered: Bool, consumption: Int?) -> String {
        guard self == .auto else { return rawValue }
        guard delivered, let consumption else { return delivered ? Self.grantProrated.rawValue : Self.grantFull.rawValue }
        if consumption <= 0 { return Self.grantFull.rawValue }
        return consumption >= 100_000 ? Self.decline.rawValue : Self.grantProrated.rawValue
    }
}

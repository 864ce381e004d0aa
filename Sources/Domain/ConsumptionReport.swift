import Foundation

/// What Berth tells Apple about a consumable when a customer asks for a refund
/// (Apple's ConsumptionRequest body), from what it knows of the booking.
public struct ConsumptionReport: Codable, Hashable, Sendable {
    public var customerConsented = true
    /// 0 undeclared, 1 not consumed, 2 partially consumed, 3 fully consumed.
    public var consumptionStatus: Int
    /// 1 = an Apple platform.
    public var platform = 1
    public var sampleContentProvided = false
    /// 0 delivered and working; 5 not delivered for other reasons.
    public var deliveryStatus: Int
    public var appAccountToken = ""
    public var accountTenure = 0
    public var playTime = 0
    public var lifetimeDollarsRefunded = 0
    public var lifetimeDollarsPurchased = 0
    public var userStatus = 0
    public var refundPreference = 0

    /// A booking is consumed as its time passes, and delivered while it stands.
    public init(purchase: Purchase?, booking: Booking?, now: Date) {
        guard let purchase, let booking else {
            consumptionStatus = 0
            deliveryStatus = 0
            return
        }
        let delivered = purchase.status == .applied && booking.status == .confirmed
        deliveryStatus = delivered ? 0 : 5
        if !delivered || now < booking.start {
            consumptionStatus = 1
        } else {
            consumptionStatus = now >= booking.end ? 3 : 2
        }
    }
}

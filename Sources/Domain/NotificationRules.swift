import Foundation

/// A verified App Store Server Notification, reduced to what the rules need.
public struct IncomingNotification: Hashable, Sendable {
    public var tenantId: String
    public var uuid: String
    public var type: String
    public var subtype: String?
    public var environment: String
    public var signedAt: Date
    /// The nested transaction's id, when the notification carries one.
    public var transactionId: String?
    /// Hex SHA-256 of the signedPayload (the payload itself is not stored).
    public var payloadHash: String
    /// What the nested transaction says, for transactions Berth has not seen yet.
    public var originalTransactionId: String?
    public var productId: String?
    public var purchasedAt: Date?
    /// Whether the tenant receives webhooks (events are written to the outbox only then).
    public var emitsEvents: Bool

    public init(tenantId: String, uuid: String, type: String, subtype: String?, environment: String, signedAt: Date, transactionId: String?, payloadHash: String,
                originalTransactionId: String? = nil, productId: String? = nil, purchasedAt: Date? = nil, emitsEvents: Bool = false) {
        self.emitsEvents = emitsEvents
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.purchasedAt = purchasedAt
        self.tenantId = tenantId
        self.uuid = uuid
        self.type = type
        self.subtype = subtype
        self.environment = environment
        self.signedAt = signedAt
        self.transactionId = transactionId
        self.payloadHash = payloadHash
    }
}

/// What a notification does. Pure data; the store applies it with the notification row in one transaction.
public enum NotificationEffect: Hashable, Sendable {
    /// The purchase was refunded or revoked: purchase `refunded`, booking `refunded` (its slot is released).
    case refundBooking
    /// A payment that was never honoured (it awaited a refund) was refunded: purchase `refunded` only.
    case refundPurchaseOnly
    /// A refund was reversed: purchase `applied` again, booking `confirmed` (or `payment_needs_refund`
    /// if its slot was taken meanwhile).
    case reinstateBooking(slotStillFree: Bool)
    /// A purchase Apple reports before the app did: kept as an unclaimed transaction until a user claims it.
    case keepUnclaimed
    /// A REFUND or REVOKE of a transaction nobody has claimed: remembered, so that a later claim of it
    /// (by JWS, receipt or id) is refused.
    case rememberRevoked
    /// A REFUND_REVERSED of a transaction remembered as revoked and still unclaimed: it may be claimed again.
    case forgetRevoked
    /// Recorded only; the string says why (`test`, `refund_declined`, `unknown_transaction`, …).
    case recordOnly(String)

    /// The outcome stored with the notification.
    public var outcome: String {
        switch self {
        case .refundBooking: "booking_refunded"
        case .refundPurchaseOnly: "purchase_refunded"
        case .keepUnclaimed: "unclaimed_purchase"
        case .rememberRevoked: "revoked_unclaimed"
        case .forgetRevoked: "revocation_reversed"
        case .reinstateBooking(let free): free ? "booking_reinstated" : "reinstated_needs_refund"
        case .recordOnly(let reason): reason
        }
    }
}

public enum NotificationRules {
    /// The effect of a notification on the purchase it names (if Berth knows it) and its booking.
    public static func decide(_ notification: IncomingNotification, purchase: Purchase?, booking: Booking?, slotStillFree: Bool) -> NotificationEffect {
        switch notification.type {
        case "TEST": return .recordOnly("test")
        case "REFUND_DECLINED": return .recordOnly("refund_declined")
        case "CONSUMPTION_REQUEST": return .recordOnly("consumption_requested")
        case "REFUND", "REVOKE", "REFUND_REVERSED":
            guard let purchase else {
                guard notification.transactionId != nil else { return .recordOnly("unknown_transaction") }
                return notification.type == "REFUND_REVERSED" ? .forgetRevoked : .rememberRevoked
            }
            guard let booking else { return .recordOnly("no_booking") }
            if notification.type == "REFUND_REVERSED" {
                guard purchase.status == .refunded, booking.status == .refunded else { return .recordOnly("not_refunded") }
                return .reinstateBooking(slotStillFree: slotStillFree)
            }
            switch purchase.status {
            case .refunded: return .recordOnly("already_refunded")
            case .needsRefund: return .refundPurchaseOnly
            case .applied: return booking.purchaseId == purchase.id ? .refundBooking : .refundPurchaseOnly
            }
        case "ONE_TIME_CHARGE", "SUBSCRIBED", "DID_RENEW", "OFFER_REDEEMED":
            guard purchase == nil, notification.transactionId != nil, notification.productId != nil else { return .recordOnly("recorded") }
            return .keepUnclaimed
        default:
            // Other subscription types and types Apple adds later: recorded until subscriptions exist.
            return .recordOnly("recorded")
        }
    }
}

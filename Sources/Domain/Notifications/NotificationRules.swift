import Foundation

/// A verified App Store Server Notification, reduced to what the rules need.
public struct IncomingNotification: Hashable, Sendable {
    public var tenantId: String
    public var uuid: String
    public var type: NotificationType
    public var subtype: String?
    public var environment: StoreEnvironment
    public var signedAt: Date
    /// The nested transaction's id, when the notification carries one.
    public var transactionId: String?
    /// Hex SHA-256 of the signedPayload (the payload itself is not stored).
    public var payloadHash: String
    /// What the nested transaction says, for transactions Berth has not seen yet.
    public var originalTransactionId: String?
    public var productId: String?
    public var purchasedAt: Date?
    /// What the nested signed transaction proved (kept with an unclaimed transaction, so that the
    /// user its appAccountToken names can be given it).
    public var proven: ProvenTransaction?
    /// A prorated refund (`revocationType` REFUND_PRORATED): the refunded share in milliunits
    /// (50000 = 50 %). Nil: the whole purchase was refunded.
    public var revocationPercentage: Int?

    public init(
        tenantId: String,
        uuid: String,
        type: NotificationType,
        subtype: String?,
        environment: StoreEnvironment,
        signedAt: Date,
        transactionId: String?,
        payloadHash: String,
        originalTransactionId: String? = nil,
        productId: String? = nil,
        purchasedAt: Date? = nil,
        proven: ProvenTransaction? = nil
    ) {
        self.proven = proven
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

/// What a notification does, as stored with it. Pure data; the store applies the plan with the
/// notification row in one transaction. What it does to a purchase Berth knows is its kind's
/// (``BookingRefundRules``, ``CreditRefundRules``, ``UnlockRules``, …): `appliedByKind`.
public enum NotificationEffect: Hashable, Sendable {
    /// The purchase's kind decided and planned it (a booking refunded, credits taken back, an
    /// unlock's grant ended, …); the string is the outcome stored with the notification.
    case appliedByKind(String)
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
        case .appliedByKind(let outcome): outcome
        case .keepUnclaimed: "unclaimed_purchase"
        case .rememberRevoked: "revoked_unclaimed"
        case .forgetRevoked: "revocation_reversed"
        case .recordOnly(let reason): reason
        }
    }
}

/// The type of an App Store Server Notification (V2), as Apple names it.
public struct NotificationType: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let test = NotificationType(rawValue: "TEST")
    public static let refund = NotificationType(rawValue: "REFUND")
    public static let revoke = NotificationType(rawValue: "REVOKE")
    public static let refundReversed = NotificationType(rawValue: "REFUND_REVERSED")
    public static let refundDeclined = NotificationType(rawValue: "REFUND_DECLINED")
    public static let consumptionRequest = NotificationType(rawValue: "CONSUMPTION_REQUEST")
    public static let oneTimeCharge = NotificationType(rawValue: "ONE_TIME_CHARGE")
    public static let subscribed = NotificationType(rawValue: "SUBSCRIBED")
    public static let didRenew = NotificationType(rawValue: "DID_RENEW")
    public static let offerRedeemed = NotificationType(rawValue: "OFFER_REDEEMED")
}

/// What a notification does when no kind decides: a transaction Berth has no purchase of, and the
/// types that change nothing (TEST, REFUND_DECLINED, …). The kinds' rules start from ``decide(_:purchase:)``
/// for everything but a refund, revocation or reversal of their own purchase.
public enum NotificationRules {
    /// Whether the notification refunds, revokes or reinstates a purchase (its kind decides how).
    public static func isRefund(_ notification: IncomingNotification) -> Bool {
        notification.type == .refund || notification.type == .revoke || notification.type == .refundReversed
    }

    /// The effect of a notification no kind decides: `purchase` is the one it names, if Berth knows
    /// it (a purchase whose kind decides nothing about a refund is recorded as `no_booking`).
    public static func decide(_ notification: IncomingNotification, purchase: Purchase?) -> NotificationEffect {
        switch notification.type {
        case .test: return .recordOnly("test")
        case .refundDeclined: return .recordOnly("refund_declined")
        case .consumptionRequest: return .recordOnly("consumption_requested")
        case .refund, .revoke, .refundReversed:
            guard purchase == nil else { return .recordOnly("no_booking") }
            guard notification.transactionId != nil else { return .recordOnly("unknown_transaction") }
            return notification.type == .refundReversed ? .forgetRevoked : .rememberRevoked
        case .oneTimeCharge, .subscribed, .didRenew, .offerRedeemed:
            guard purchase == nil, notification.transactionId != nil, notification.productId != nil else { return .recordOnly("recorded") }
            return .keepUnclaimed
        default:
            // Other subscription types and types Apple adds later: recorded until subscriptions exist.
            return .recordOnly("recorded")
        }
    }

    /// The plan of a notification no kind decides (see ``decide(_:purchase:)``).
    public static func plan(_ notification: IncomingNotification, purchase: Purchase?, now: Date) -> NotificationPlan {
        let effect = decide(notification, purchase: purchase)
        var plan = NotificationPlan(effect: effect)
        switch effect {
        case .keepUnclaimed:
            if let transactionId = notification.transactionId, let productId = notification.productId {
                plan.unclaimed = UnclaimedTransaction(
                    environment: notification.environment,
                    transactionId: transactionId,
                    productId: productId,
                    purchasedAt: notification.purchasedAt ?? now,
                    receivedAt: now,
                    claimedByPurchaseId: nil,
                    originalTransactionId: notification.originalTransactionId ?? transactionId,
                    appAccountToken: notification.proven?.appAccountToken?.lowercased(),
                    proven: notification.proven
                )
            }
        case .rememberRevoked:
            plan.revocation = notification.transactionId.map { .remember($0) }
        case .forgetRevoked:
            plan.revocation = notification.transactionId.map { .forget($0) }
        case .recordOnly, .appliedByKind:
            break
        }
        return audited(plan, notification, bookingId: nil, purchaseId: purchase?.id, now: now)
    }

    /// `plan` with the audit entry every notification leaves (by Apple, naming its uuid and outcome).
    public static func audited(
        _ plan: NotificationPlan,
        _ notification: IncomingNotification,
        bookingId: Int64?,
        purchaseId: Int64?,
        now: Date
    ) -> NotificationPlan {
        var plan = plan
        plan.audit.append(
            AuditRecord(
                tenantId: notification.tenantId,
                actor: .apple,
                action: .notification(notification.type),
                bookingId: bookingId,
                purchaseId: purchaseId,
                detail: ["uuid": notification.uuid, "outcome": plan.effect.outcome],
                at: now
            )
        )
        return plan
    }
}

/// Everything one notification writes, saved with the notification row in one transaction.
public struct NotificationPlan: Hashable, Sendable {
    public enum Revocation: Hashable, Sendable {
        /// Remember a transaction id as refunded or revoked before anyone claimed it.
        case remember(String)
        /// Forget it again (REFUND_REVERSED).
        case forget(String)
    }

    public var effect: NotificationEffect
    /// The purchase's new state.
    public var purchase: Purchase?
    /// What the notification changes besides the purchase row (the booking, a credit account,
    /// grants), saved in order.
    public var effects: [PlanEffect] = []
    public var unclaimed: UnclaimedTransaction?
    public var revocation: Revocation?
    public var audit: [AuditRecord] = []
    public var events: [WebhookEvent] = []

    public init(effect: NotificationEffect) {
        self.effect = effect
    }
}

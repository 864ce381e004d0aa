import Foundation

/// A verified App Store Server Notification, reduced to what the rules need.
public struct IncomingNotification: Hashable, Sendable {
    public var tenantId: String
    public var uuid: String
    public var type: NotificationType
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
    /// What the nested signed transaction proved (kept with an unclaimed transaction, so that the
    /// user its appAccountToken names can be given it).
    public var proven: ProvenTransaction?
    /// A prorated refund (`revocationType` REFUND_PRORATED): the refunded share in milliunits
    /// (50000 = 50 %). Nil: the whole purchase was refunded.
    public var revocationPercentage: Int?

    public init(tenantId: String, uuid: String, type: NotificationType, subtype: String?, environment: String, signedAt: Date, transactionId: String?, payloadHash: String,
                originalTransactionId: String? = nil, productId: String? = nil, purchasedAt: Date? = nil, proven: ProvenTransaction? = nil) {
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

/// What a notification does. Pure data; the store applies it with the notification row in one transaction.
public enum NotificationEffect: Hashable, Sendable {
    /// The purchase was refunded or revoked: purchase `refunded`, booking `refunded` (its slot is released).
    case refundBooking
    /// A payment that was never honoured (it awaited a refund) was refunded: purchase `refunded` only.
    case refundPurchaseOnly
    /// One of several payments of a booking was refunded: purchase `refunded` and its units no longer
    /// paid. A pending booking stays pending (the units are to be bought again); a confirmed one is no
    /// longer paid in full and becomes `payment_needs_refund` (slot released; operators refund the
    /// other payments or confirm it by hand).
    case refundPart
    /// A refund was reversed: purchase `applied` again, booking `confirmed` (or `payment_needs_refund`
    /// if its slot was taken meanwhile).
    case reinstateBooking(slotStillFree: Bool)
    /// A credit purchase was refunded or revoked: purchase `refunded`, its credits taken back (a debt
    /// where they are spent, unless the tenant allows negative balances).
    case refundCredits
    /// A credit purchase's refund was reversed: purchase `applied` again, its credits given back.
    case reinstateCredits
    /// The purchase's kind decided and planned it (an unlock's grant ended or reinstated, …); the
    /// string is the outcome stored with the notification.
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
        case .refundBooking: "booking_refunded"
        case .refundPurchaseOnly: "purchase_refunded"
        case .refundPart: "part_refunded"
        case .refundCredits: "credits_refunded"
        case .reinstateCredits: "credits_reinstated"
        case .appliedByKind(let outcome): outcome
        case .keepUnclaimed: "unclaimed_purchase"
        case .rememberRevoked: "revoked_unclaimed"
        case .forgetRevoked: "revocation_reversed"
        case .reinstateBooking(let free): free ? "booking_reinstated" : "reinstated_needs_refund"
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

public enum NotificationRules {
    /// Whether deciding needs the occupancy of the booking's slot (a reversed refund gives the slot back only if it is free).
    public static func needsOccupancy(_ notification: IncomingNotification) -> Bool { notification.type == .refundReversed }

    /// The effect of a notification on the purchase it names (if Berth knows it) and its booking.
    public static func decide(_ notification: IncomingNotification, purchase: Purchase?, booking: Booking?, slotStillFree: Bool) -> NotificationEffect {
        switch notification.type {
        case .test: return .recordOnly("test")
        case .refundDeclined: return .recordOnly("refund_declined")
        case .consumptionRequest: return .recordOnly("consumption_requested")
        case .refund, .revoke, .refundReversed:
            guard let purchase else {
                guard notification.transactionId != nil else { return .recordOnly("unknown_transaction") }
                return notification.type == .refundReversed ? .forgetRevoked : .rememberRevoked
            }
            if purchase.creditType != nil {
                if notification.type == .refundReversed { return purchase.status == .refunded ? .reinstateCredits : .recordOnly("not_refunded") }
                switch purchase.status {
                case .refunded: return .recordOnly("already_refunded")
                case .needsRefund: return .refundPurchaseOnly
                case .applied: return .refundCredits
                }
            }
            guard let booking else { return .recordOnly("no_booking") }
            if notification.type == .refundReversed {
                guard purchase.status == .refunded, booking.status == .refunded else { return .recordOnly("not_refunded") }
                return .reinstateBooking(slotStillFree: slotStillFree)
            }
            switch purchase.status {
            case .refunded: return .recordOnly("already_refunded")
            case .needsRefund: return .refundPurchaseOnly
            case .applied:
                // A booking paid by several transactions: refunding one of them takes its units back.
                let units = max(1, purchase.quantity ?? 1)
                let paidByOthers = booking.paidQuantity - units > 0
                if booking.status == .pendingPayment || (booking.status == .confirmed && paidByOthers) { return .refundPart }
                return booking.purchaseId == purchase.id ? .refundBooking : .refundPurchaseOnly
            }
        case .oneTimeCharge, .subscribed, .didRenew, .offerRedeemed:
            guard purchase == nil, notification.transactionId != nil, notification.productId != nil else { return .recordOnly("recorded") }
            return .keepUnclaimed
        default:
            // Other subscription types and types Apple adds later: recorded until subscriptions exist.
            return .recordOnly("recorded")
        }
    }

    /// Everything a notification writes: its effect on the purchase and booking, the notification
    /// row, the audit entry and the events.
    public static func plan(_ notification: IncomingNotification, purchase: Purchase?, booking: Booking?, slotStillFree: Bool,
                            credits: CreditRefundContext? = nil, now: Date) -> NotificationPlan {
        let effect = decide(notification, purchase: purchase, booking: booking, slotStillFree: slotStillFree)
        var plan = NotificationPlan(effect: effect)
        var purchase = purchase, booking = booking
        switch effect {
        case .refundBooking:
            if var p = purchase, var b = booking {
                p.status = .refunded
                b.status = .refunded
                b.statusReason = notification.type.rawValue
                b.updatedAt = now
                (purchase, booking) = (p, b)
                (plan.purchase, plan.booking) = (p, b)
                plan.events = [.booking(.bookingRefunded, b, purchase: p), .booking(.purchaseRefunded, b, purchase: p)]
            }
        case .refundPurchaseOnly:
            if var p = purchase {
                p.status = .refunded
                purchase = p
                plan.purchase = p
                if let booking { plan.events = [.booking(.purchaseRefunded, booking, purchase: p)] }
            }
        case .refundPart:
            if var p = purchase, var b = booking {
                p.status = .refunded
                b.paidQuantity = max(0, b.paidQuantity - max(1, p.quantity ?? 1))
                if b.status == .confirmed {
                    b.status = .paymentNeedsRefund
                    b.statusReason = notification.type.rawValue
                }
                b.updatedAt = now
                (purchase, booking) = (p, b)
                (plan.purchase, plan.booking) = (p, b)
                plan.events = [.booking(.purchaseRefunded, b, purchase: p)]
            }
        case .reinstateBooking(let free):
            if var p = purchase, var b = booking {
                p.status = free ? .applied : .needsRefund
                p.outcomeCode = free ? nil : ErrorCode.slotUnavailable.rawValue
                b.status = free ? .confirmed : .paymentNeedsRefund
                b.statusReason = notification.type.rawValue
                b.updatedAt = now
                (purchase, booking) = (p, b)
                (plan.purchase, plan.booking) = (p, b)
                plan.events = [.booking(.bookingConfirmed, b, purchase: p)]
            }
        case .refundCredits:
            if var p = purchase, let credits {
                p.status = .refunded
                purchase = p
                plan.purchase = p
                let amount = CreditRules.refundedShare(p.credits ?? 0, milliunits: notification.revocationPercentage)
                let reason = notification.revocationPercentage.map { "\(notification.type.rawValue) REFUND_PRORATED \($0 / 1000) %" } ?? notification.type.rawValue
                let change = CreditRules.refund(credits.account, amount: amount, purchaseEntry: credits.grant?.entry, purchaseLot: credits.grant?.lot,
                                                reason: reason, negativeAllowed: credits.negativeAllowed, now: now)
                plan.credits = change
                plan.events = [change.event(reason: .refund)].compactMap { $0 }
            }
        case .reinstateCredits:
            if var p = purchase, let credits {
                p.status = .applied
                p.outcomeCode = nil
                purchase = p
                plan.purchase = p
                // What the refund took (a prorated refund took a share), else the whole grant.
                let change = CreditRules.reverseRefund(credits.account, amount: credits.refunded ?? p.credits ?? 0, purchaseEntry: credits.grant?.entry,
                                                       negativeAllowed: credits.negativeAllowed, now: now)
                plan.credits = change
                plan.events = [change.event(reason: .refundReversal)].compactMap { $0 }
            }
        case .keepUnclaimed:
            if let transactionId = notification.transactionId, let productId = notification.productId {
                plan.unclaimed = UnclaimedTransaction(
                    environment: notification.environment, transactionId: transactionId, productId: productId,
                    purchasedAt: notification.purchasedAt ?? now, receivedAt: now, claimedByPurchaseId: nil,
                    originalTransactionId: notification.originalTransactionId ?? transactionId,
                    appAccountToken: notification.proven?.appAccountToken?.lowercased(), proven: notification.proven
                )
            }
        case .rememberRevoked:
            plan.revocation = notification.transactionId.map { .remember($0) }
        case .forgetRevoked:
            plan.revocation = notification.transactionId.map { .forget($0) }
        case .recordOnly, .appliedByKind:
            break
        }
        plan.audit = AuditRecord(tenantId: notification.tenantId, actor: .apple, action: .notification(notification.type), bookingId: booking?.id,
                                 purchaseId: purchase?.id, detail: ["uuid": notification.uuid, "outcome": effect.outcome], at: now)
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
    /// The booking's new state.
    public var booking: Booking?
    /// What a credit refund (or its reversal) does to the account.
    public var credits: CreditChange?
    public var unclaimed: UnclaimedTransaction?
    /// Grants to write as they are (an unlock ended or reinstated, passes re-chained).
    public var grants: [EntitlementGrant] = []
    public var revocation: Revocation?
    public var audit: AuditRecord?
    public var events: [WebhookEvent] = []

    public init(effect: NotificationEffect) {
        self.effect = effect
    }
}

/// What a notification about a credit purchase needs to decide: the account it granted to (locked),
/// the entry and lot of that grant, and the tenant's negative-balance policy.
public struct CreditRefundContext: Hashable, Sendable {
    public var account: CreditAccount
    public var grant: Grant?
    public var negativeAllowed: Bool
    /// What the purchase's latest refund took back (credits taken plus the debt it left), when it was refunded.
    public var refunded: Int64?

    public struct Grant: Hashable, Sendable {
        public var entry: LedgerEntry
        public var lot: CreditLot?

        public init(entry: LedgerEntry, lot: CreditLot?) {
            self.entry = entry
            self.lot = lot
        }
    }

    public init(account: CreditAccount, grant: Grant?, negativeAllowed: Bool, refunded: Int64? = nil) {
        self.account = account
        self.grant = grant
        self.negativeAllowed = negativeAllowed
        self.refunded = refunded
    }
}

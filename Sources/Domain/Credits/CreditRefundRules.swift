import Foundation

/// What a REFUND, REVOKE or REFUND_REVERSED does to a credit purchase: its credits taken back (a
/// debt where they are spent, unless the tenant allows negative balances), or given back.
public enum CreditRefundRules {
    /// The plan of a notification about a credit purchase; `credits` is the account it granted to
    /// (locked) with that grant. Types other than a refund are ``NotificationRules``'.
    public static func plan(_ notification: IncomingNotification, purchase: Purchase, credits: CreditRefundContext, now: Date) -> NotificationPlan {
        guard NotificationRules.isRefund(notification) else { return NotificationRules.plan(notification, purchase: purchase, now: now) }
        var p = purchase
        var plan: NotificationPlan
        switch (notification.type == .refundReversed, purchase.status) {
        case (true, .refunded):
            p.reinstate()
            p.outcomeCode = nil
            // What the refund took (a prorated refund took a share), else the whole grant.
            let change = CreditRules.reverseRefund(
                credits.account,
                amount: credits.refunded ?? p.credits ?? 0,
                purchaseEntry: credits.grant?.entry,
                negativeAllowed: credits.negativeAllowed,
                now: now
            )
            plan = NotificationPlan(effect: .appliedByKind("credits_reinstated"))
            plan.effects = [.credits(change)]
            plan.events = [change.event(reason: .refundReversal)].compactMap { $0 }
        case (true, _):
            plan = NotificationPlan(effect: .recordOnly("not_refunded"))
        case (false, .refunded):
            plan = NotificationPlan(effect: .recordOnly("already_refunded"))
        case (false, .needsRefund):
            p.refund(at: now)
            plan = NotificationPlan(effect: .appliedByKind("purchase_refunded"))
        case (false, .applied):
            p.refund(at: now)
            let amount = CreditRules.refundedShare(p.credits ?? 0, milliunits: notification.revocationPercentage)
            let reason =
                notification.revocationPercentage.map { "\(notification.type.rawValue) REFUND_PRORATED \($0 / 1000) %" } ?? notification.type.rawValue
            let change = CreditRules.refund(
                credits.account,
                amount: amount,
                purchaseEntry: credits.grant?.entry,
                purchaseLot: credits.grant?.lot,
                reason: reason,
                negativeAllowed: credits.negativeAllowed,
                now: now
            )
            plan = NotificationPlan(effect: .appliedByKind("credits_refunded"))
            plan.effects = [.credits(change)]
            plan.events = [change.event(reason: .refund)].compactMap { $0 }
        }
        if p != purchase { plan.purchase = p }
        return NotificationRules.audited(plan, notification, bookingId: nil, purchaseId: purchase.id, now: now)
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

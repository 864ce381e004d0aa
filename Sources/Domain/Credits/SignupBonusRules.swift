import Foundation

/// The signup bonus: credits a tenant gives each user once, with the user's first credit call (a
/// read, a reservation or a purchase). Which call is first is the store's to say (a unique key on
/// the user: concurrent first calls grant it once); what the bonus is, is decided here.
public enum SignupBonusRules {
    /// A bonus this unit of work owes: the tenant's settings and the account it goes to (locked).
    public struct Due: Hashable, Sendable {
        public var account: CreditAccount
        public var amount: Int
        public var negativeAllowed: Bool

        public init(account: CreditAccount, amount: Int, negativeAllowed: Bool) {
            self.account = account
            self.amount = amount
            self.negativeAllowed = negativeAllowed
        }
    }

    /// The bonus as a credit change of its account.
    public static func change(_ due: Due, now: Date) -> CreditChange {
        var change = CreditRules.grant(
            due.account,
            amount: Int64(due.amount),
            type: .bonus,
            actor: .system,
            reason: "signup bonus",
            negativeAllowed: due.negativeAllowed,
            now: now
        )
        change.grantsSignupBonus = true
        return change
    }

    /// `plan` with the bonus (when due) saved first, and its event first.
    public static func granting(_ due: Due?, before plan: PurchasePlan, now: Date) -> PurchasePlan {
        guard let due else { return plan }
        let bonus = change(due, now: now)
        var plan = plan
        plan.effects.insert(.credits(bonus), at: 0)
        if let event = bonus.event(reason: .bonus) { plan.events.insert(event, at: 0) }
        return plan
    }
}

import Domain
import Foundation

extension StoreSession {
    /// The signup bonus `userId` is owed in this unit of work, with its account locked, if the user
    /// never had it; nil: none is due. A read: saving ``SignupBonusRules/change(_:now:)`` records the
    /// bonus, and the store's unique key refuses a second record (the unit of work fails whole).
    public func signupBonusDue(tenant: Tenant, userId: String, now: Date) throws -> SignupBonusRules.Due? {
        guard let settings = tenant.credits, let bonus = settings.signupBonus, try !credits.hasBonus(tenantId: tenant.id, userId: userId)
        else { return nil }
        // Reads only: the bonus's record is written with the bonus (``CreditChange/grantsSignupBonus``).
        // First calls take turns on the account's lock; the one that waited finds the record then.
        let account = try credits.account(tenantId: tenant.id, userId: userId, creditType: bonus.creditType, now: now, forUpdate: true)
        guard try !credits.hasBonus(tenantId: tenant.id, userId: userId) else { return nil }
        return SignupBonusRules.Due(account: account, amount: bonus.amount, negativeAllowed: settings.negativeAllowed)
    }

    /// Grants the signup bonus now if it is due (credit reads and reservations start with it).
    public func grantSignupBonusIfDue(tenant: Tenant, userId: String, emitsEvents: Bool, now: Date) throws {
        guard let due = try signupBonusDue(tenant: tenant, userId: userId, now: now) else { return }
        let change = SignupBonusRules.change(due, now: now)
        try save(change, now: now)
        if emitsEvents, let event = change.event(reason: .bonus) { try outbox.enqueue([event], tenantId: tenant.id, now: now) }
    }
}

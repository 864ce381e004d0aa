import Domain
import Foundation

extension StoreSession {
    /// Claims the signup bonus for `userId` in this unit of work if the user never had it (the
    /// store's unique key decides: concurrent first calls claim it once), with its account locked.
    /// Nil: no bonus is due. Whoever claims it must save ``SignupBonusRules/change(_:now:)``.
    public func signupBonusDue(tenant: Tenant, userId: String, now: Date) throws -> SignupBonusRules.Due? {
        guard let settings = tenant.credits, let bonus = settings.signupBonus, try credits.claimBonus(tenantId: tenant.id, userId: userId, now: now)
        else { return nil }
        let account = try credits.account(tenantId: tenant.id, userId: userId, creditType: bonus.creditType, now: now, forUpdate: true)
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

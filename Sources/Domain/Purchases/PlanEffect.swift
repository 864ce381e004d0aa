import Foundation

/// One change a plan makes to what a purchase paid for, beside what every plan has (the purchase
/// row, audit entries, webhook events): one case per kind of state Berth keeps. A kind with state of
/// its own adds a case here and its line in `StoreSession.save(_:now:)`; the compiler finds both.
public enum PlanEffect: Hashable, Sendable {
    /// The booking's new state.
    case booking(Booking)
    /// What the plan does to a credit account (entries, lots, reservation, balance).
    case credits(CreditChange)
    /// Entitlement grants to write as they are (new, ended, or passes re-chained).
    case grants([EntitlementGrant])
    /// Subscription records, the memberships made from them, a refused claim of someone else's.
    case subscription(SubscriptionChange)
}

extension Array where Element == PlanEffect {
    /// The booking a plan leaves (the last one it writes).
    public var booking: Booking? {
        for case .booking(let booking) in reversed() { return booking }
        return nil
    }

    /// The last credit change a plan makes.
    public var credits: CreditChange? {
        for case .credits(let change) in reversed() { return change }
        return nil
    }

    /// Every grant a plan writes, in order.
    public var grants: [EntitlementGrant] {
        flatMap { effect -> [EntitlementGrant] in
            if case .grants(let grants) = effect { return grants }
            return []
        }
    }
}

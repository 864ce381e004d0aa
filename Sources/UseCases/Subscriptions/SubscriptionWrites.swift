import Domain
import Foundation

/// Facts about a subscription, inside a unit of work: load what they touch (locked), let
/// ``SubscriptionChanges`` decide, save the plan as it is. Kinds and notifications that plan with
/// other rows use ``scene(_:facts:tenantId:userId:)`` and put the plan's change in their own plan.
public enum SubscriptionWrites {
    public typealias Outcome = SubscriptionChanges.Outcome

    /// The records `facts` touch, locked, and the memberships made from them or used by `userId`.
    public static func scene(_ tx: any StoreSession, facts: SubscriptionFacts, tenantId: String, userId: String?) throws -> SubscriptionScene {
        let current = try tx.subscriptions.subscription(tenantId: tenantId, originalTransactionId: facts.originalTransactionId, forUpdate: true)
        var replaced: Subscription?
        var memberships: [Membership] = []
        func add(_ membership: Membership?) {
            if let membership, !memberships.contains(where: { $0.userId == membership.userId }) { memberships.append(membership) }
        }
        if let userId { add(try tx.subscriptions.membership(tenantId: tenantId, userId: userId)) }
        add(try tx.subscriptions.membership(tenantId: tenantId, originalTransactionId: facts.originalTransactionId))
        if let old = facts.replaces, old != facts.originalTransactionId {
            replaced = try tx.subscriptions.subscription(tenantId: tenantId, originalTransactionId: old, forUpdate: true)
            add(try tx.subscriptions.membership(tenantId: tenantId, originalTransactionId: old))
        }
        return SubscriptionScene(current: current, replaced: replaced, memberships: memberships)
    }

    /// Loads, decides and saves `facts` (see ``SubscriptionChanges/plan(_:scene:tenant:userId:source:actor:now:)``).
    public static func apply(
        _ tx: any StoreSession,
        facts: SubscriptionFacts,
        tenant: Tenant,
        userId: String?,
        source: String,
        actor: Actor,
        emitsEvents: Bool,
        now: Date
    ) throws -> Outcome {
        let scene = try scene(tx, facts: facts, tenantId: tenant.id, userId: userId)
        let plan = SubscriptionChanges.plan(facts, scene: scene, tenant: tenant, userId: userId, source: source, actor: actor, now: now)
        try save(plan, tx: tx, tenantId: tenant.id, emitsEvents: emitsEvents, now: now)
        return plan.outcome
    }

    /// Writes a subscription plan as it is: its rows, audit entries and (for tenants that receive webhooks) events.
    public static func save(_ plan: SubscriptionChanges.Plan, tx: any StoreSession, tenantId: String, emitsEvents: Bool, now: Date) throws {
        if !plan.change.isEmpty { try tx.save(.subscription(plan.change), now: now) }
        for record in plan.audit { try tx.audit.append(record) }
        if emitsEvents, !plan.events.isEmpty { try tx.outbox.enqueue(plan.events, tenantId: tenantId, now: now) }
    }

    /// Records a refused claim of someone else's subscription (and its audit entry).
    static func recordCheat(_ tx: any StoreSession, tenantId: String, userId: String, subscription: Subscription, source: String, now: Date) throws {
        let refused = SubscriptionChanges.refusedClaim(tenantId: tenantId, userId: userId, subscription: subscription, source: source, now: now)
        try tx.subscriptions.insert(refused.cheat)
        try tx.audit.append(refused.audit)
    }
}

import Foundation

/// What facts about a subscription find in the store before anything is decided: its record and
/// the record it replaces (both locked), and the memberships made from them or used by the user.
public struct SubscriptionScene: Sendable {
    public var current: Subscription?
    /// The subscription `facts.replaces` names (Google Play's linkedPurchaseToken), when Berth has it.
    public var replaced: Subscription?
    /// The memberships of the user claiming it and of both subscriptions, as stored.
    public var memberships: [Membership]

    public init(current: Subscription?, replaced: Subscription?, memberships: [Membership]) {
        self.current = current
        self.replaced = replaced
        self.memberships = memberships
    }

    /// The membership made from the subscription `originalTransactionId`.
    public func membership(originalTransactionId: String) -> Membership? { memberships.first { $0.originalTransactionId == originalTransactionId } }

    /// The membership `userId` uses.
    public func membership(userId: String) -> Membership? { memberships.first { $0.userId == userId } }

    /// After saving `membership`: one row per user.
    mutating func saved(_ membership: Membership) {
        memberships.removeAll { $0.userId == membership.userId }
        memberships.append(membership)
    }
}

/// The rows facts about a subscription write, in order (a ``PlanEffect``): records, memberships and
/// a refused claim of someone else's subscription.
public struct SubscriptionChange: Hashable, Sendable {
    public var subscriptions: [Subscription] = []
    public var memberships: [Membership] = []
    public var cheats: [SubscriptionCheat] = []

    public init() {}

    public var isEmpty: Bool { subscriptions.isEmpty && memberships.isEmpty && cheats.isEmpty }
}

/// The one way facts reach a subscription record, decided here and saved as planned: merge (never
/// backwards), attach to an account (refusing, and recording, a claim of someone else's), end the
/// subscription it replaces, keep the memberships made from them current, and tell the tenant.
public enum SubscriptionChanges {
    public enum Outcome: Hashable, Sendable {
        /// The record after the facts (`stale`: they were older than it and changed nothing).
        case applied(Subscription, stale: Bool)
        /// The subscription belongs to another account; a cheat attempt is recorded.
        case ownedByOther(Subscription)
        /// Renewal info about a subscription Berth has no period of yet: nothing to apply.
        case nothing
    }

    /// What applying facts writes, and what the store holds after it.
    public struct Plan: Sendable {
        public var outcome: Outcome
        public var change = SubscriptionChange()
        public var audit: [AuditRecord] = []
        /// The `subscription.*` events (to enqueue only for tenants that receive webhooks).
        public var events: [WebhookEvent] = []
        /// The scene after the change (which membership each user uses now).
        public var after: SubscriptionScene

        /// Whether `userId` uses `subscription` after the change.
        public func inUse(_ subscription: Subscription, by userId: String) -> Bool {
            after.membership(userId: userId)?.originalTransactionId == subscription.originalTransactionId
        }
    }

    /// Applies `facts` to the records in `scene` for `userId` (nil: a notification, attaching nobody).
    public static func plan(
        _ facts: SubscriptionFacts,
        scene: SubscriptionScene,
        tenant: Tenant,
        userId: String?,
        source: String,
        actor: Actor,
        now: Date
    ) -> Plan {
        plan(
            facts,
            scene: scene,
            tenantId: tenant.id,
            product: { tenant.product(id: $0)?.subscriptionInfo },
            userId: userId,
            source: source,
            actor: actor,
            now: now
        )
    }

    /// The same, with the catalog's subscription products as a function (`product(id)`).
    public static func plan(
        _ facts: SubscriptionFacts,
        scene: SubscriptionScene,
        tenantId: String,
        product: (String) -> SubscriptionProductInfo?,
        userId: String?,
        source: String,
        actor: Actor,
        now: Date
    ) -> Plan {
        var plan = Plan(outcome: .nothing, after: scene)
        let current = scene.current
        if let userId, let current, let owner = current.userId, owner != userId {
            let refused = refusedClaim(tenantId: tenantId, userId: userId, subscription: current, source: source, now: now)
            plan.change.cheats.append(refused.cheat)
            plan.audit.append(refused.audit)
            plan.outcome = .ownedByOther(current)
            return plan
        }
        guard let update = SubscriptionRules.apply(facts, to: current, tenantId: tenantId, product: product, now: now) else {
            return plan
        }
        var subscription = update.subscription
        var changed = update.changed
        let newlyAttached = userId != nil && subscription.userId == nil
        if newlyAttached {
            subscription.userId = userId
            subscription.updatedAt = now
            changed = true
        }
        if changed || current == nil { plan.change.subscriptions.append(subscription) }
        if let replaced = facts.replaces, replaced != subscription.originalTransactionId, let old = scene.replaced {
            subscription = endReplaced(old, by: subscription, plan: &plan, tenantId: tenantId, source: source, actor: actor, now: now)
        }
        if let userId, newlyAttached {
            plan.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: .subscriptionAttached,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: ["originalTransactionId": subscription.originalTransactionId, "userId": userId, "source": source],
                    at: now
                )
            )
            // The account's first subscription (or one that may replace an expired membership) becomes the one it uses.
            let decision = LinkPolicy.decide(
                userId: userId,
                subscription: subscription,
                accountMembership: plan.after.membership(userId: userId),
                appleSideMembership: plan.after.membership(originalTransactionId: subscription.originalTransactionId),
                force: false,
                now: now
            )
            if case .link(let membership, _) = decision { save(membership, in: &plan) }
        }
        syncMembership(subscription, plan: &plan, now: now)
        if changed { plan.events.append(SubscriptionRules.event(subscription, now: now, reason: source)) }
        plan.outcome = .applied(subscription, stale: update.stale)
        return plan
    }

    /// A subscription replaced by `successor` (Google Play's upgrades, downgrades and resubscriptions:
    /// a new purchase token naming the old one) ends now rather than when Google expires it: it is
    /// marked upgraded (no entitlement), its owner's membership moves to the successor, and a
    /// successor nobody has claimed yet (a notification came first) belongs to the old one's owner.
    static func endReplaced(
        _ old: Subscription,
        by successor: Subscription,
        plan: inout Plan,
        tenantId: String,
        source: String,
        actor: Actor,
        now: Date
    ) -> Subscription {
        var old = old, successor = successor
        if !old.upgraded {
            old.upgraded = true
            old.autoRenew = false
            old.updatedAt = now
            plan.change.subscriptions.append(old)
            plan.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: .subscriptionReplaced,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: ["originalTransactionId": old.originalTransactionId, "replacedBy": successor.originalTransactionId, "source": source],
                    at: now
                )
            )
            plan.events.append(SubscriptionRules.event(old, now: now, reason: "\(source):replaced"))
        }
        if successor.userId == nil, let owner = old.userId {
            successor.userId = owner
            successor.updatedAt = now
            plan.change.subscriptions.append(successor)
            plan.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: .subscriptionAttached,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: ["originalTransactionId": successor.originalTransactionId, "userId": owner, "source": "\(source):replaces"],
                    at: now
                )
            )
        }
        if let membership = plan.after.membership(originalTransactionId: old.originalTransactionId) {
            if membership.userId == successor.userId {
                save(Membership.apple(successor, userId: membership.userId, now: now), in: &plan)
            } else {
                syncMembership(old, plan: &plan, now: now)
            }
        }
        return successor
    }

    /// Brings the membership made from `subscription` (if any) up to date with it.
    static func syncMembership(_ subscription: Subscription, plan: inout Plan, now: Date) {
        guard let membership = plan.after.membership(originalTransactionId: subscription.originalTransactionId) else { return }
        var fresh = Membership.apple(subscription, userId: membership.userId, now: now)
        fresh.updatedAt = membership.updatedAt
        if fresh != membership {
            fresh.updatedAt = now
            save(fresh, in: &plan)
        }
    }

    static func save(_ membership: Membership, in plan: inout Plan) {
        plan.change.memberships.append(membership)
        plan.after.saved(membership)
    }

    /// The audit entry of a refused claim of someone else's subscription.
    /// A refused claim of someone else's subscription: the attempt kept for operators, and its audit entry.
    public static func refusedClaim(
        tenantId: String,
        userId: String,
        subscription: Subscription,
        source: String,
        now: Date
    ) -> (cheat: SubscriptionCheat, audit: AuditRecord) {
        let cheat = SubscriptionCheat(
            id: RecordID.next(),
            tenantId: tenantId,
            userId: userId,
            originalTransactionId: subscription.originalTransactionId,
            ownerUserId: subscription.userId,
            source: source,
            at: now
        )
        let audit = AuditRecord(
            tenantId: tenantId,
            actor: .user(userId),
            action: .subscriptionCheat,
            bookingId: nil,
            purchaseId: nil,
            detail: ["originalTransactionId": subscription.originalTransactionId, "source": source],
            at: now
        )
        return (cheat, audit)
    }
}

extension AuditAction {
    public static let subscriptionAttached = AuditAction(rawValue: "subscription.attached")
    public static let subscriptionCheat = AuditAction(rawValue: "subscription.cheat")
    /// Another subscription took its place (Google Play's linkedPurchaseToken).
    public static let subscriptionReplaced = AuditAction(rawValue: "subscription.replaced")
    public static let subscriptionLinked = AuditAction(rawValue: "subscription.linked")
    public static let subscriptionUnlinked = AuditAction(rawValue: "subscription.unlinked")
    public static let membershipRecorded = AuditAction(rawValue: "membership.recorded")
}

import Domain
import Foundation

/// The one way facts reach a subscription record, inside a unit of work: merge (never backwards),
/// attach to an account (refusing, and recording, a claim of someone else's), keep the membership
/// made from it current, and tell the tenant's backend.
public enum SubscriptionWrites {
    public enum Outcome: Sendable {
        /// The record after the facts (`stale`: they were older than it and changed nothing).
        case applied(Subscription, stale: Bool)
        /// The subscription belongs to another account; a cheat attempt was recorded.
        case ownedByOther(Subscription)
        /// Renewal info about a subscription Berth has no period of yet: nothing to apply.
        case nothing
    }

    public static func apply(_ tx: any StoreSession, facts: SubscriptionFacts, tenant: Tenant, userId: String?, source: String, actor: Actor,
                             emitsEvents: Bool, now: Date) throws -> Outcome {
        let current = try tx.subscriptions.subscription(tenantId: tenant.id, originalTransactionId: facts.originalTransactionId, forUpdate: true)
        if let userId, let current, let owner = current.userId, owner != userId {
            try recordCheat(tx, tenantId: tenant.id, userId: userId, subscription: current, source: source, now: now)
            return .ownedByOther(current)
        }
        guard let update = SubscriptionRules.apply(facts, to: current, tenantId: tenant.id, product: { tenant.product(id: $0)?.subscriptionInfo }, now: now) else {
            return .nothing
        }
        var subscription = update.subscription
        var changed = update.changed
        let newlyAttached = userId != nil && subscription.userId == nil
        if newlyAttached {
            subscription.userId = userId
            subscription.updatedAt = now
            changed = true
        }
        if changed || current == nil { try tx.subscriptions.save(subscription) }
        if let replaced = facts.replaces, replaced != subscription.originalTransactionId {
            subscription = try endReplaced(tx, replaced: replaced, by: subscription, tenantId: tenant.id, source: source, actor: actor, emitsEvents: emitsEvents, now: now)
        }
        if let userId, newlyAttached {
            try tx.audit.append(AuditRecord(tenantId: tenant.id, actor: actor, action: .subscriptionAttached, bookingId: nil, purchaseId: nil,
                                            detail: ["originalTransactionId": subscription.originalTransactionId, "userId": userId, "source": source], at: now))
            // The account's first subscription (or one that may replace an expired membership) becomes the one it uses.
            let decision = LinkPolicy.decide(userId: userId, subscription: subscription, accountMembership: try tx.subscriptions.membership(tenantId: tenant.id, userId: userId),
                                             appleSideMembership: try tx.subscriptions.membership(tenantId: tenant.id, originalTransactionId: subscription.originalTransactionId),
                                             force: false, now: now)
            if case .link(let membership, _) = decision { try tx.subscriptions.save(membership) }
        }
        try syncMembership(tx, subscription, now: now)
        if changed, emitsEvents {
            try tx.outbox.enqueue([SubscriptionRules.event(subscription, now: now, reason: source)], tenantId: tenant.id, now: now)
        }
        return .applied(subscription, stale: update.stale)
    }

    /// A subscription replaced by `successor` (Google Play's upgrades, downgrades and resubscriptions:
    /// a new purchase token naming the old one) ends now rather than when Google expires it: it is
    /// marked upgraded (no entitlement), its owner's membership moves to the successor, and a
    /// successor nobody has claimed yet (a notification came first) belongs to the old one's owner.
    static func endReplaced(_ tx: any StoreSession, replaced: String, by successor: Subscription, tenantId: String, source: String, actor: Actor,
                            emitsEvents: Bool, now: Date) throws -> Subscription {
        var successor = successor
        guard var old = try tx.subscriptions.subscription(tenantId: tenantId, originalTransactionId: replaced, forUpdate: true) else { return successor }
        if !old.upgraded {
            old.upgraded = true
            old.autoRenew = false
            old.updatedAt = now
            try tx.subscriptions.save(old)
            try tx.audit.append(AuditRecord(tenantId: tenantId, actor: actor, action: .subscriptionReplaced, bookingId: nil, purchaseId: nil,
                                            detail: ["originalTransactionId": old.originalTransactionId, "replacedBy": successor.originalTransactionId, "source": source],
                                            at: now))
            if emitsEvents { try tx.outbox.enqueue([SubscriptionRules.event(old, now: now, reason: "\(source):replaced")], tenantId: tenantId, now: now) }
        }
        if successor.userId == nil, let owner = old.userId {
            successor.userId = owner
            successor.updatedAt = now
            try tx.subscriptions.save(successor)
            try tx.audit.append(AuditRecord(tenantId: tenantId, actor: actor, action: .subscriptionAttached, bookingId: nil, purchaseId: nil,
                                            detail: ["originalTransactionId": successor.originalTransactionId, "userId": owner, "source": "\(source):replaces"], at: now))
        }
        if let membership = try tx.subscriptions.membership(tenantId: tenantId, originalTransactionId: replaced) {
            if membership.userId == successor.userId {
                try tx.subscriptions.save(Membership.apple(successor, userId: membership.userId, now: now))
            } else {
                try syncMembership(tx, old, now: now)
            }
        }
        return successor
    }

    /// Brings the membership made from `subscription` (if any) up to date with it.
    static func syncMembership(_ tx: any StoreSession, _ subscription: Subscription, now: Date) throws {
        guard let membership = try tx.subscriptions.membership(tenantId: subscription.tenantId, originalTransactionId: subscription.originalTransactionId) else { return }
        var fresh = Membership.apple(subscription, userId: membership.userId, now: now)
        fresh.updatedAt = membership.updatedAt
        if fresh != membership {
            fresh.updatedAt = now
            try tx.subscriptions.save(fresh)
        }
    }

    static func recordCheat(_ tx: any StoreSession, tenantId: String, userId: String, subscription: Subscription, source: String, now: Date) throws {
        try tx.subscriptions.insert(SubscriptionCheat(id: RecordID.next(), tenantId: tenantId, userId: userId, originalTransactionId: subscription.originalTransactionId,
                                                      ownerUserId: subscription.userId, source: source, at: now))
        try tx.audit.append(AuditRecord(tenantId: tenantId, actor: .user(userId), action: .subscriptionCheat, bookingId: nil, purchaseId: nil,
                                        detail: ["originalTransactionId": subscription.originalTransactionId, "source": source], at: now))
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

import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// `POST /api/subscriptions/link` (and FT Chinese's link): the link policy decides.
public struct LinkSubscription: Sendable {
    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    public enum LinkResult: Sendable {
        case linked(Membership, initial: Bool)
        case refused(LinkPolicy.Refusal)
    }

    /// Links an Apple subscription Berth knows to an account, by the link policy; a refused claim of
    /// another account's subscription is recorded as a cheat attempt (and the refusal thrown).
    public func callAsFunction(
        runtime: TenantRuntime,
        userId: String,
        originalTransactionId: String,
        force: Bool,
        actor: Actor,
        source: String = "link"
    ) async throws -> Membership {
        let tenant = runtime.tenant, now = clock.now(), emitsEvents = runtime.webhook != nil
        let result: LinkResult = try await store.write { tx in
            guard
                let subscription = try tx.subscriptions.subscription(
                    tenantId: tenant.id,
                    originalTransactionId: originalTransactionId,
                    forUpdate: true
                )
            else {
                throw SubscriptionQueries.notFound(originalTransactionId)
            }
            let account = try tx.subscriptions.membership(tenantId: tenant.id, userId: userId)
            let appleSide = try tx.subscriptions.membership(tenantId: tenant.id, originalTransactionId: originalTransactionId)
            switch LinkPolicy.decide(
                userId: userId,
                subscription: subscription,
                accountMembership: account,
                appleSideMembership: appleSide,
                force: force,
                now: now
            ) {
            case .refuse(let refusal):
                if refusal.cheat {
                    try SubscriptionWrites.recordCheat(tx, tenantId: tenant.id, userId: userId, subscription: subscription, source: source, now: now)
                }
                return .refused(refusal)
            case .sync(let membership):
                if membership != account { try tx.subscriptions.save(membership) }
                return .linked(membership, initial: false)
            case .link(let membership, let initial):
                var owned = subscription
                if owned.userId == nil {
                    owned.userId = userId
                    owned.updatedAt = now
                    try tx.subscriptions.save(owned)
                    if emitsEvents {
                        try tx.outbox.enqueue([SubscriptionRules.event(owned, now: now, reason: "linked")], tenantId: tenant.id, now: now)
                    }
                }
                try tx.subscriptions.save(membership)
                try tx.audit.append(
                    AuditRecord(
                        tenantId: tenant.id,
                        actor: actor,
                        action: .subscriptionLinked,
                        bookingId: nil,
                        purchaseId: nil,
                        detail: [
                            "originalTransactionId": originalTransactionId, "userId": userId, "force": String(force),
                            "replaced": account?.originalTransactionId ?? account?.payMethod ?? "none",
                        ],
                        at: now
                    )
                )
                return .linked(membership, initial: initial)
            }
        }
        switch result {
        case .linked(let membership, _): return membership
        case .refused(let refusal): throw DomainError(.unprocessable, refusal.code, refusal.message, field: refusal.field)
        }
    }
}

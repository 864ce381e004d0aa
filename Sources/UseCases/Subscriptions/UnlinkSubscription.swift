import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// `POST /api/subscriptions/unlink` (and FT Chinese's unlink).
public struct UnlinkSubscription: Sendable {
    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// Unlinks an Apple subscription from the account that owns it: the subscription keeps its state
    /// but no owner; the membership made from it, if any, is removed and archived.
    public func callAsFunction(runtime: TenantRuntime, userId: String, originalTransactionId: String, actor: Actor) async throws {
        let tenant = runtime.tenant, now = clock.now(), emitsEvents = runtime.webhook != nil
        try await store.write { tx in
            guard
                var subscription = try tx.subscriptions.subscription(
                    tenantId: tenant.id,
                    originalTransactionId: originalTransactionId,
                    forUpdate: true
                )
            else {
                throw SubscriptionQueries.notFound(originalTransactionId)
            }
            guard subscription.userId == userId else {
                throw DomainError(.unprocessable, .invalid, "this Apple subscription is not linked to the account", field: "userId")
            }
            var snapshot: String?
            if let membership = try tx.subscriptions.membership(tenantId: tenant.id, originalTransactionId: originalTransactionId) {
                guard membership.userId == userId else {
                    throw DomainError(.unprocessable, .invalid, "this Apple subscription is not linked to the account", field: "userId")
                }
                snapshot = Self.snapshot(membership)
                try tx.subscriptions.deleteMembership(tenantId: tenant.id, userId: userId)
            }
            subscription.userId = nil
            subscription.updatedAt = now
            try tx.subscriptions.save(subscription)
            try tx.subscriptions.insert(
                UnlinkArchive(
                    id: RecordID.next(),
                    tenantId: tenant.id,
                    userId: userId,
                    originalTransactionId: originalTransactionId,
                    actor: actor.rawValue,
                    membershipSnapshot: snapshot,
                    at: now
                )
            )
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenant.id,
                    actor: actor,
                    action: .subscriptionUnlinked,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: ["originalTransactionId": originalTransactionId, "userId": userId],
                    at: now
                )
            )
            if emitsEvents {
                var event = SubscriptionRules.event(subscription, now: now, reason: "unlinked")
                event.data["previousUserId"] = userId
                try tx.outbox.enqueue([event], tenantId: tenant.id, now: now)
            }
        }
    }

    static func snapshot(_ m: Membership) -> String {
        var fields: [String: String] = ["userId": m.userId, "autoRenew": String(m.autoRenew), "updatedAt": BerthJSON.timestamp(m.updatedAt)]
        if let v = m.originalTransactionId { fields["originalTransactionId"] = v }
        if let v = m.payMethod { fields["payMethod"] = v }
        if let v = m.tier { fields["tier"] = v }
        if let v = m.cycle { fields["cycle"] = v }
        if let v = m.expiresAt { fields["expiresAt"] = BerthJSON.timestamp(v) }
        return String(decoding: (try? BerthJSON.shared.encode(fields)) ?? Data(), as: UTF8.self)
    }
}

import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// `PUT /api/admin/memberships/{userId}`: a membership paid outside the App Store.
public struct RecordMembership: Sendable {
    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// Records (or, with nil `expiresAt` and `payMethod`, replaces) the membership an account has
    /// outside the App Store, so that the link policy sees it. An account using an Apple subscription
    /// keeps it unless `replaceApple`.
    public func callAsFunction(
        runtime: TenantRuntime,
        userId: String,
        payMethod: String?,
        tier: String?,
        cycle: String?,
        expiresAt: Date?,
        autoRenew: Bool,
        actor: Actor
    ) async throws -> Membership {
        let tenantId = runtime.id, now = clock.now()
        let membership = Membership(
            tenantId: tenantId,
            userId: userId,
            originalTransactionId: nil,
            payMethod: payMethod,
            tier: tier,
            cycle: cycle,
            expiresAt: expiresAt,
            autoRenew: autoRenew,
            updatedAt: now
        )
        try await store.write { tx in
            if let current = try tx.subscriptions.membership(tenantId: tenantId, userId: userId), current.isApple {
                throw DomainError(
                    .conflict,
                    .linkedToOtherIAP,
                    "the account uses Apple subscription \(current.originalTransactionId ?? ""); unlink it first",
                    field: "userId"
                )
            }
            try tx.subscriptions.save(membership)
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: .membershipRecorded,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: [
                        "userId": userId, "payMethod": payMethod ?? "none",
                        "expiresAt": expiresAt.map(BerthJSON.timestamp) ?? "none",
                    ],
                    at: now
                )
            )
        }
        return membership
    }
}

import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// Reads of subscriptions and memberships for one route each: a user's or an FT Chinese account's
/// subscriptions, one subscription (only its owner's, when a user asks), a kept receipt, a membership.
public struct SubscriptionQueries: Sendable {
    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    public func list(
        runtime: TenantRuntime,
        userId: String,
        page: Page,
        environment: StoreEnvironment? = nil
    ) async throws -> (items: [ListedSubscription], total: Int) {
        let tenantId = runtime.id
        return try await store.read { tx in
            let membership = try tx.subscriptions.membership(tenantId: tenantId, userId: userId)
            let (items, total) = try tx.subscriptions.owned(tenantId: tenantId, userId: userId, page: page)
            return (items.map { ListedSubscription(subscription: $0, inUse: membership?.originalTransactionId == $0.originalTransactionId) }, total)
        }
    }

    /// One subscription; with `userId`, only if that account owns it (404 otherwise, whoever owns it).
    public func subscription(runtime: TenantRuntime, originalTransactionId: String, userId: String?) async throws -> ListedSubscription {
        let tenantId = runtime.id
        let found: ListedSubscription? = try await store.read { tx in
            guard let s = try tx.subscriptions.subscription(tenantId: tenantId, originalTransactionId: originalTransactionId, forUpdate: false) else {
                return nil
            }
            if let userId, s.userId != userId { return nil }
            let membership = try tx.subscriptions.membership(tenantId: tenantId, originalTransactionId: originalTransactionId)
            return ListedSubscription(subscription: s, inUse: membership != nil && membership?.userId == s.userId)
        }
        guard let found else { throw Self.notFound(originalTransactionId) }
        return found
    }

    public func receipt(runtime: TenantRuntime, originalTransactionId: String) async throws -> (ListedSubscription, String?) {
        let listed = try await subscription(runtime: runtime, originalTransactionId: originalTransactionId, userId: nil)
        let tenantId = runtime.id
        let receipt = try await store.read { try $0.subscriptions.receipt(tenantId: tenantId, originalTransactionId: originalTransactionId) }
        return (listed, receipt)
    }

    static func notFound(_ id: String) -> DomainError {
        DomainError(.notFound, .subscriptionNotFound, "no subscription \(id) is known", field: "originalTransactionId")
    }

    public func membership(runtime: TenantRuntime, userId: String) async throws -> Membership? {
        let tenantId = runtime.id
        return try await store.read { try $0.subscriptions.membership(tenantId: tenantId, userId: userId) }
    }
}

/// A subscription with whether its owner uses it as its membership.
public struct ListedSubscription: Sendable {
    public var subscription: Subscription
    public var inUse: Bool

    public init(subscription: Subscription, inUse: Bool) {
        self.subscription = subscription
        self.inUse = inUse
    }
}

import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// `PATCH /api/subscriptions/{id}` (and FT Chinese's): a subscription refreshed from Apple.
public struct RefreshSubscription: Sendable {
    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// Refreshes a subscription from Apple: Get All Subscription Statuses when the tenant has an App
    /// Store Server API key, else its kept receipt; 422 `refresh_unavailable` when neither exists.
    public func callAsFunction(
        runtime: TenantRuntime,
        originalTransactionId: String,
        userId: String?,
        actor: Actor
    ) async throws -> ListedSubscription {
        let queries = SubscriptionQueries(store: store, clock: clock, logger: logger)
        let current = try await queries.subscription(runtime: runtime, originalTransactionId: originalTransactionId, userId: userId)
        let tenant = runtime.tenant, now = clock.now(), emitsEvents = runtime.webhook != nil
        if let api = runtime.appStore.serverAPI {
            let statuses: [(status: Int?, transaction: VerifiedTransaction?, renewalInfo: VerifiedRenewalInfo?)]
            do {
                statuses = try await api.subscriptionStatuses(originalTransactionId)
            } catch let error as AppStoreAPIError {
                throw DomainError(
                    error.retryable ? .unavailable : .unprocessable,
                    ErrorCode(rawValue: error.code.rawValue),
                    "Apple could not be asked: \(error.reason)",
                    retryAfter: error.retryable ? 5 : nil
                )
            } catch let error as SignedDataError {
                throw DomainError(error, field: "originalTransactionId", messagePrefix: "Apple's answer did not verify: ")
            }
            let facts = statuses.compactMap { item in
                SubscriptionFactsReading.facts(
                    transaction: item.transaction?.payload,
                    renewal: item.renewalInfo?.payload,
                    signedAt: now,
                    source: "server_api"
                )
            }.filter { $0.originalTransactionId == originalTransactionId }
            try await store.write { tx in
                for fact in facts {
                    _ = try SubscriptionWrites.apply(
                        tx,
                        facts: fact,
                        tenant: tenant,
                        userId: nil,
                        source: "server_api",
                        actor: actor,
                        emitsEvents: emitsEvents,
                        now: now
                    )
                }
            }
        } else if tenant.subscriptions?.keepReceipts == true,
            let receipt = try await store.read({ try $0.subscriptions.receipt(tenantId: tenant.id, originalTransactionId: originalTransactionId) })
        {
            _ = try await ApplyReceipt(store: store, clock: clock, logger: logger)(
                receipt,
                runtime: runtime,
                userId: nil,
                actor: actor,
                source: "stored_receipt"
            )
        } else {
            throw DomainError(
                .unprocessable,
                .refreshUnavailable,
                "this app has no App Store Server API key and keeps no receipts; send the device's receipt instead",
                field: "originalTransactionId"
            )
        }
        _ = current
        return try await queries.subscription(runtime: runtime, originalTransactionId: originalTransactionId, userId: userId)
    }
}

import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// Renewal-date extensions (outage compensation): one subscription, or every active subscriber of a
/// product, through the App Store Server API. A single extension Apple confirms moves the
/// subscription's expiry at once (audited); a mass extension reaches each subscription through
/// Apple's RENEWAL_EXTENDED notifications, and its progress is read back by request identifier.
public struct ExtendRenewalDates: Sendable {
    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// Apple allows 1 to 90 days per extension, with a reason: 0 undeclared, 1 customer
    /// satisfaction, 2 other, 3 service issue or outage.
    static func validate(days: Int, reasonCode: Int) throws {
        guard (1...90).contains(days) else { throw DomainError.invalid("days must be 1 to 90 (Apple's limit per extension)", field: "days") }
        guard (0...3).contains(reasonCode) else {
            throw DomainError.invalid(
                "reasonCode must be 0 (undeclared), 1 (customer satisfaction), 2 (other) or 3 (service issue or outage)",
                field: "reasonCode"
            )
        }
    }

    static func api(_ runtime: TenantRuntime) throws -> AppStoreServerAPIClient {
        guard let api = runtime.appStore.serverAPI else {
            throw DomainError(
                .unprocessable,
                .appleNotConfigured,
                "extending renewal dates needs the app's App Store Server API key (apple.serverAPI)"
            )
        }
        return api
    }

    static func unavailable(_ error: AppStoreAPIError) -> DomainError {
        DomainError(
            .unavailable,
            .transactionLookupUnavailable,
            "Apple could not be asked (\(error.code.rawValue)); try again shortly",
            retryAfter: 30
        )
    }

    public func extend(runtime: TenantRuntime, originalTransactionId: String, days: Int, reasonCode: Int, actor: Actor) async throws -> Subscription {
        try Self.validate(days: days, reasonCode: reasonCode)
        let api = try Self.api(runtime)
        let tenantId = runtime.id
        guard
            let subscription = try await store.read({
                try $0.subscriptions.subscription(tenantId: tenantId, originalTransactionId: originalTransactionId, forUpdate: false)
            }),
            subscription.store == .appStore
        else {
            throw DomainError(
                .notFound,
                .subscriptionNotFound,
                "no App Store subscription \(originalTransactionId) is known",
                field: "originalTransactionId"
            )
        }
        let effective: Date?
        do {
            effective = try await api.extendRenewalDate(
                originalTransactionId: originalTransactionId,
                days: days,
                reasonCode: reasonCode,
                requestIdentifier: UUID(),
                environment: AppStoreEnvironment(subscription.environment)
            )
        } catch {
            throw Self.unavailable(error)
        }
        guard let effective else {
            throw DomainError(
                .unprocessable,
                .invalidTransition,
                "Apple did not extend \(originalTransactionId) (not active, or extended too often this year)",
                field: "originalTransactionId"
            )
        }
        let now = clock.now()
        return try await store.write { tx in
            guard var current = try tx.subscriptions.subscription(tenantId: tenantId, originalTransactionId: originalTransactionId, forUpdate: true)
            else {
                throw DomainError(
                    .notFound,
                    .subscriptionNotFound,
                    "no subscription \(originalTransactionId) is known",
                    field: "originalTransactionId"
                )
            }
            let before = current.expiresAt
            if before.map({ effective > $0 }) ?? true {
                current.expiresAt = effective
                current.updatedAt = now
                try tx.subscriptions.save(current)
            }
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: .renewalExtended,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: [
                        "originalTransactionId": originalTransactionId, "days": String(days), "reasonCode": String(reasonCode),
                        "expiresAt": effective.formatted(.iso8601),
                    ],
                    at: now
                )
            )
            return current
        }
    }

    /// Asks Apple to extend every active subscriber of `productId`; answers the request identifier to poll.
    public func extendAll(
        runtime: TenantRuntime,
        productId: String,
        days: Int,
        reasonCode: Int,
        storefronts: [String]?,
        environment: StoreEnvironment,
        actor: Actor
    ) async throws -> String {
        try Self.validate(days: days, reasonCode: reasonCode)
        let api = try Self.api(runtime)
        guard runtime.tenant.products.contains(where: { $0.id == productId && $0.kind == .subscription }) else {
            throw DomainError(.unprocessable, .unknownProduct, "\(productId) is not a subscription product of this app", field: "productId")
        }
        guard runtime.tenant.apple.environments.contains(environment) else {
            throw DomainError.invalid(
                "environment must be one the app accepts (\(runtime.tenant.apple.environments.map(\.rawValue).joined(separator: ", ")))",
                field: "environment"
            )
        }
        let identifier = UUID()
        do {
            try await api.massExtendRenewalDate(
                productId: productId,
                days: days,
                reasonCode: reasonCode,
                requestIdentifier: identifier,
                storefronts: storefronts,
                environment: AppStoreEnvironment(environment)
            )
        } catch {
            throw Self.unavailable(error)
        }
        let now = clock.now()
        let tenantId = runtime.id
        try await store.write { tx in
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: .renewalExtended,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: [
                        "productId": productId, "days": String(days), "reasonCode": String(reasonCode),
                        "requestIdentifier": identifier.uuidString.lowercased(), "environment": environment.rawValue,
                    ],
                    at: now
                )
            )
        }
        return identifier.uuidString.lowercased()
    }

    public func status(
        runtime: TenantRuntime,
        productId: String,
        requestIdentifier: String,
        environment: StoreEnvironment
    ) async throws -> AppStoreServerAPIClient.MassExtensionStatus {
        let api = try Self.api(runtime)
        do {
            return try await api.massExtensionStatus(
                productId: productId,
                requestIdentifier: requestIdentifier,
                environment: AppStoreEnvironment(environment)
            )
        } catch {
            throw Self.unavailable(error)
        }
    }
}

import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// The safety net under App Store Server Notifications: reads Get Notification History from where
/// the last reading got (with an overlap) and feeds every notification through the same intake as
/// Apple's POSTs. The intake applies each uuid once, so a notification Berth already has is a
/// duplicate and one it missed (an outage, a deploy, a refusal) is applied now. Every instance may
/// run it: the uuid decides, and the mark only moves forward.
public struct AppleNotificationHistory: Sendable {
    let store: any Store
    public let tenants: TenantRegistry
    let receive: ReceiveNotification
    let clock: any BerthClock
    let logger: Logger

    /// Each reading starts this much before the mark: a notification can reach the history late.
    public static let overlap: TimeInterval = 10 * 60
    /// The first reading looks this far back.
    public static let firstLookback: TimeInterval = 24 * 3600
    /// Apple keeps 180 days.
    public static let maximumLookback: TimeInterval = 179 * 86_400
    /// Pages per reading (Apple's pages hold 20 notifications).
    public static let maximumPages = 500

    public init(store: any Store, tenants: TenantRegistry, receive: ReceiveNotification, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.tenants = tenants
        self.receive = receive
        self.clock = clock
        self.logger = logger
    }

    public struct Outcome: Sendable {
        public var tenantId: String
        public var environment: StoreEnvironment
        /// Notifications read from the history.
        public var seen = 0
        /// Of them, the ones Berth did not have: applied now.
        public var recovered = 0
        /// Of them, the ones that can never verify for this app (skipped).
        public var refused = 0
        /// The reading stopped (Apple or the store unreachable); the mark stayed, the next reading covers it.
        public var failed = false
    }

    /// The tenants that can read their history (an App Store Server API key), with their interval.
    public var tenantsToRead: [(runtime: TenantRuntime, every: TimeInterval)] {
        tenants.ordered.compactMap { runtime in
            guard runtime.appStore.serverAPI != nil else { return nil }
            let minutes = runtime.tenant.apple.notificationHistoryMinutes ?? 60
            return minutes > 0 ? (runtime, TimeInterval(minutes) * 60) : nil
        }
    }

    /// Reads every environment of the tenant.
    public func read(_ runtime: TenantRuntime) async -> [Outcome] {
        var outcomes: [Outcome] = []
        for environment in runtime.tenant.apple.environments {
            outcomes.append(await read(runtime, environment: environment))
        }
        return outcomes
    }

    public func read(_ runtime: TenantRuntime, environment: StoreEnvironment) async -> Outcome {
        var outcome = Outcome(tenantId: runtime.id, environment: environment)
        guard let api = runtime.appStore.serverAPI else { return outcome }
        let tenantId = runtime.id
        let now = clock.now()
        do {
            let mark = try await store.read { try $0.appleHistory.mark(tenantId: tenantId, environment: environment) }
            let start = max(
                (mark ?? now.addingTimeInterval(-Self.firstLookback)).addingTimeInterval(-Self.overlap),
                now.addingTimeInterval(-Self.maximumLookback)
            )
            var token: String?
            for _ in 0..<Self.maximumPages {
                let page = try await api.notificationHistory(
                    environment: AppStoreEnvironment(environment),
                    start: start,
                    end: now,
                    paginationToken: token
                )
                for signedPayload in page.signedPayloads {
                    outcome.seen += 1
                    do {
                        let result = try await receive(signedPayload: signedPayload, runtime: runtime)
                        if !result.duplicate { outcome.recovered += 1 }
                    } catch let error as DomainError where error.kind == .unavailable {
                        throw error
                    } catch {
                        outcome.refused += 1
                    }
                }
                guard page.hasMore, let next = page.paginationToken else { break }
                token = next
            }
            try await store.write { try $0.appleHistory.setMark(tenantId: tenantId, environment: environment, checkedUntil: now, at: now) }
            if outcome.recovered > 0 {
                logger.warning(
                    "notification history: recovered notifications Apple's POSTs did not bring",
                    metadata: [
                        "tenant": .string(tenantId), "environment": .stringConvertible(environment),
                        "recovered": .stringConvertible(outcome.recovered),
                    ]
                )
            }
        } catch {
            outcome.failed = true
            logger.warning(
                "notification history not read; the next reading covers it: \(error)",
                metadata: ["tenant": .string(tenantId), "environment": .stringConvertible(environment)]
            )
        }
        return outcome
    }
}

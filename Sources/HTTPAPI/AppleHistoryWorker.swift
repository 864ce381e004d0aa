import Foundation
import Logging
import ServiceLifecycle
import UseCases

/// Reads each tenant's Get Notification History (``AppleNotificationHistory``) at start and then
/// every `apple.notificationHistoryMinutes`, and tries again, every tick, the consumption answers
/// still owed to Apple (``ConsumptionAnswers``), until the application stops. Counts what it
/// recovered: `berth_apple_history_recovered_total{tenant}`, `berth_apple_history_failures_total{tenant}`,
/// and each answer's attempt in `berth_consumption_answers_total{tenant,outcome}`.
public struct AppleHistoryWorker: Service, CustomStringConvertible {
    let history: AppleNotificationHistory
    let consumption: ConsumptionAnswers
    let metrics: BerthMetrics
    let tick: Duration

    public init(history: AppleNotificationHistory, consumption: ConsumptionAnswers, metrics: BerthMetrics, tick: Duration = .seconds(30)) {
        self.history = history
        self.consumption = consumption
        self.metrics = metrics
        self.tick = tick
    }

    public var description: String { "AppleHistoryWorker" }

    public func run() async throws {
        var lastRead: [String: ContinuousClock.Instant] = [:]
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            for (runtime, every) in history.tenantsToRead {
                let now = ContinuousClock.now
                if let last = lastRead[runtime.id], now - last < .seconds(every) { continue }
                lastRead[runtime.id] = now
                for outcome in await history.read(runtime) {
                    AppleHistoryWorker.count(outcome, metrics: metrics)
                }
            }
            if ConsumptionAnswers.hasWork(history.tenants) {
                for (tenant, outcome) in await consumption.runDue(tenants: history.tenants) {
                    metrics.consumptionAnswer(tenant: tenant, outcome: outcome.rawValue)
                }
            }
            // A shutdown ends the wait at once rather than after the tick.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.tick) }
        }
    }

    static func count(_ outcome: AppleNotificationHistory.Outcome, metrics: BerthMetrics) {
        metrics.count("berth_apple_history_recovered_total", [("tenant", outcome.tenantId)], by: Int64(outcome.recovered))
        if outcome.failed { metrics.count("berth_apple_history_failures_total", [("tenant", outcome.tenantId)]) }
    }
}

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
            let now = ContinuousClock.now
            var due: [TenantRuntime] = []
            for (runtime, every) in history.tenantsToRead {
                if let last = lastRead[runtime.id], now - last < .seconds(every) { continue }
                lastRead[runtime.id] = now
                due.append(runtime)
            }
            // A shutdown cancels the round (Apple not answering, with its retries) as well as the wait:
            // the history is read again from the kept mark at the next start.
            try? await cancelWhenGracefulShutdown { [due] in
                for runtime in due {
                    for outcome in await self.history.read(runtime) {
                        AppleHistoryWorker.count(outcome, metrics: self.metrics)
                    }
                }
                if ConsumptionAnswers.hasWork(self.history.tenants) {
                    for (tenant, outcome) in await self.consumption.runDue(tenants: self.history.tenants) {
                        self.metrics.consumptionAnswer(tenant: tenant, outcome: outcome.rawValue)
                    }
                }
                try await Task.sleep(for: self.tick)
            }
        }
    }

    static func count(_ outcome: AppleNotificationHistory.Outcome, metrics: BerthMetrics) {
        metrics.count("berth_apple_history_recovered_total", [("tenant", outcome.tenantId)], by: Int64(outcome.recovered))
        if outcome.failed { metrics.count("berth_apple_history_failures_total", [("tenant", outcome.tenantId)]) }
    }
}

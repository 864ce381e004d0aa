import Domain
import Foundation
import UseCases

/// The jobs each area runs in its ``PeriodicWorker``.
public enum BackgroundJobs {
    /// Google Play: acknowledgements every tick, the voided-purchases sweep every minute (a
    /// package's own interval decides inside), and the unacknowledged-purchases gauges every 30 s.
    public static func play(_ jobs: PlayJobs, metrics: any WorkerMetrics) -> [PeriodicJob] {
        [
            PeriodicJob("play.acknowledge") { _ in _ = await jobs.acknowledgeDue() },
            PeriodicJob("play.sweep", every: 60) { _ in _ = await jobs.sweepVoided() },
            PeriodicJob("play.gauges", every: 30) { _ in await playGauges(jobs, metrics: metrics) },
        ]
    }

    /// `berth_play_unacknowledged{tenant}` (purchases Berth still owes Google an acknowledgement or
    /// consumption for), `berth_play_unacknowledged_overdue{tenant}` (of them, older than the alert
    /// age: Google refunds at 72 hours) and `berth_play_unacknowledged_oldest_seconds{tenant}`.
    public static func playGauges(_ jobs: PlayJobs, metrics: any WorkerMetrics) async {
        guard let summary = try? await jobs.pendingSummary() else { return }
        let now = jobs.clock.now()
        for tenant in jobs.tenants.ordered where tenant.play != nil {
            let row = summary.first { $0.tenantId == tenant.id }
            metrics.gauge("berth_play_unacknowledged", [("tenant", tenant.id)], Double(row?.pending ?? 0))
            metrics.gauge("berth_play_unacknowledged_overdue", [("tenant", tenant.id)], Double(row?.overdue ?? 0))
            metrics.gauge(
                "berth_play_unacknowledged_oldest_seconds",
                [("tenant", tenant.id)],
                row?.oldest.map { max(0, now.timeIntervalSince($0)) } ?? 0
            )
        }
    }

    /// The card rail: refunds, overdue and lapsed payments, every tick (idempotent at Stripe by fixed keys).
    public static func cardPayments(_ jobs: CardPaymentJobs) -> [PeriodicJob] {
        [PeriodicJob("card-payments") { _ in _ = await jobs.runDue() }]
    }

    /// Apple: each tenant's Get Notification History at start and then every
    /// `apple.notificationHistoryMinutes`, and the consumption answers still owed every tick. Counts
    /// `berth_apple_history_recovered_total{tenant}`, `berth_apple_history_failures_total{tenant}` and
    /// each answer's attempt in `berth_consumption_answers_total{tenant,outcome}`.
    public static func apple(history: AppleNotificationHistory, consumption: ConsumptionAnswers, metrics: any WorkerMetrics) -> [PeriodicJob] {
        var jobs = history.tenantsToRead.map { runtime, every in
            PeriodicJob("apple.history.\(runtime.id)", every: TimeInterval(every)) { _ in
                for outcome in await history.read(runtime) {
                    metrics.count("berth_apple_history_recovered_total", [("tenant", outcome.tenantId)], by: Int64(outcome.recovered))
                    if outcome.failed { metrics.count("berth_apple_history_failures_total", [("tenant", outcome.tenantId)], by: 1) }
                }
            }
        }
        if ConsumptionAnswers.hasWork(history.tenants) {
            jobs.append(
                PeriodicJob("apple.consumption-answers") { _ in
                    for (tenant, outcome) in await consumption.runDue(tenants: history.tenants) {
                        metrics.count("berth_consumption_answers_total", [("tenant", tenant), ("outcome", outcome.rawValue)], by: 1)
                    }
                }
            )
        }
        return jobs
    }
}

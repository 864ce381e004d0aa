import Logging
import ServiceLifecycle
import UseCases

/// Runs Google Play's jobs (``PlayJobs``) until the application stops: acknowledgements every
/// `interval`, the voided-purchases sweep when a package's own interval has passed, and the
/// unacknowledged-purchases gauges every 30 s. Every instance runs it (leases, once-only effects).
public struct PlayWorker: Service, CustomStringConvertible {
    let jobs: PlayJobs
    let metrics: BerthMetrics
    let logger: Logger
    let interval: Duration

    public init(jobs: PlayJobs, metrics: BerthMetrics, logger: Logger, interval: Duration = .seconds(1)) {
        self.jobs = jobs
        self.metrics = metrics
        self.logger = logger
        self.interval = interval
    }

    public var description: String { "PlayWorker" }

    public func run() async throws {
        var lastGauge: ContinuousClock.Instant?
        var lastSweep: ContinuousClock.Instant?
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let now = ContinuousClock.now
            let sweep = lastSweep.map({ now - $0 >= .seconds(60) }) ?? true
            let gauge = lastGauge.map({ now - $0 >= .seconds(30) }) ?? true
            if sweep { lastSweep = now }
            if gauge { lastGauge = now }
            // A shutdown cancels the round too (Google not answering), not only the wait.
            try? await cancelWhenGracefulShutdown {
                await self.jobs.acknowledgeDue()
                if sweep { await self.jobs.sweepVoided() }
                if gauge { await PlayWorker.gauges(jobs: self.jobs, metrics: self.metrics) }
                try await Task.sleep(for: self.interval)
            }
        }
    }

    /// `berth_play_unacknowledged{tenant}` (purchases Berth still owes Google an acknowledgement or
    /// consumption for), `berth_play_unacknowledged_overdue{tenant}` (of them, older than the alert
    /// age: Google refunds at 72 hours) and `berth_play_unacknowledged_oldest_seconds{tenant}`.
    static func gauges(jobs: PlayJobs, metrics: BerthMetrics) async {
        guard let summary = try? await jobs.pendingSummary() else { return }
        let now = jobs.clock.now()
        for tenant in jobs.tenants.ordered where tenant.play != nil {
            let row = summary.first { $0.tenantId == tenant.id }
            metrics.gauge("berth_play_unacknowledged", [("tenant", tenant.id)], Double(row?.pending ?? 0))
            metrics.gauge("berth_play_unacknowledged_overdue", [("tenant", tenant.id)], Double(row?.overdue ?? 0))
            metrics.gauge("berth_play_unacknowledged_oldest_seconds", [("tenant", tenant.id)], row?.oldest.map { max(0, now.timeIntervalSince($0)) } ?? 0)
        }
    }
}

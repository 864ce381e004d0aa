import Logging
import ServiceLifecycle
import UseCases

/// Runs the card rail's jobs (``CardPaymentJobs``) every `interval` until the application stops.
/// Every instance runs it: the jobs are idempotent (fixed keys at the provider, conditional writes).
public struct CardPaymentWorker: Service, CustomStringConvertible {
    let jobs: CardPaymentJobs
    let logger: Logger
    let interval: Duration

    public init(jobs: CardPaymentJobs, logger: Logger, interval: Duration = .seconds(1)) {
        self.jobs = jobs
        self.logger = logger
        self.interval = interval
    }

    public var description: String { "CardPaymentWorker" }

    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            // A shutdown cancels the round too (a Stripe call that does not answer), not only the wait:
            // what a round had not finished is due again at the next start.
            try? await cancelWhenGracefulShutdown {
                await self.jobs.runDue()
                try await Task.sleep(for: self.interval)
            }
        }
    }
}

import Domain
import Foundation
import ServiceLifecycle

/// One piece of periodic background work: run when `every` seconds of the injected clock have
/// passed since its last run (0: every tick).
public struct PeriodicJob: Sendable {
    public var name: String
    public var every: TimeInterval
    public var run: @Sendable (Date) async -> Void

    public init(_ name: String, every: TimeInterval = 0, run: @escaping @Sendable (Date) async -> Void) {
        self.name = name
        self.every = every
        self.run = run
    }
}

/// The one way Berth runs background work: a service that, every `tick`, runs the jobs whose time
/// has come on the injected clock, until the application stops. A shutdown cancels the round too (a
/// provider that does not answer), not only the wait: what a round had not finished is due again at
/// the next start. Every instance runs its workers: the jobs claim work with leases or conditional
/// writes, and what they retry, they retry by ``JobRetry``.
public struct PeriodicWorker: Service, CustomStringConvertible {
    public let name: String
    let jobs: [PeriodicJob]
    let clock: any BerthClock
    let tick: Duration

    public init(_ name: String, jobs: [PeriodicJob], clock: any BerthClock, tick: Duration) {
        self.name = name
        self.jobs = jobs
        self.clock = clock
        self.tick = tick
    }

    public var description: String { "PeriodicWorker(\(name))" }

    public func run() async throws {
        var last: [Int: Date] = [:]
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let now = clock.now()
            let due = Self.due(jobs, last: last, now: now)
            for index in due { last[index] = now }
            try? await cancelWhenGracefulShutdown { [jobs, tick] in
                for index in due { await jobs[index].run(now) }
                try await Task.sleep(for: tick)
            }
        }
    }

    /// The jobs to run at `now`: never run, or `every` passed since their last run (or the clock went back).
    static func due(_ jobs: [PeriodicJob], last: [Int: Date], now: Date) -> [Int] {
        jobs.indices.filter { index in
            guard let previous = last[index] else { return true }
            return now < previous || now.timeIntervalSince(previous) >= jobs[index].every
        }
    }
}

/// Where background work reports what it did (Prometheus in the server).
public protocol WorkerMetrics: Sendable {
    func count(_ name: String, _ labels: [(String, String)], by amount: Int64)
    func gauge(_ name: String, _ labels: [(String, String)], _ value: Double)
}

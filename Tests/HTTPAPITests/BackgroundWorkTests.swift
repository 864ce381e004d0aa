import BerthApp
import Domain
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import BerthWorkers

@Suite("Background work: one periodic worker on the injected clock, stopped by shutdown")
struct BackgroundWorkTests {
    @Test("a job runs at the first tick, then again once its interval has passed on the injected clock (or the clock went back)")
    func schedule() {
        let t0 = Date(epochMilliseconds: 1_900_000_000_000)
        let jobs = [PeriodicJob("each tick") { _ in }, PeriodicJob("every minute", every: 60) { _ in }]
        #expect(PeriodicWorker.due(jobs, last: [:], now: t0) == [0, 1])
        let ran = [0: t0, 1: t0]
        #expect(PeriodicWorker.due(jobs, last: ran, now: t0.addingTimeInterval(1)) == [0])
        #expect(PeriodicWorker.due(jobs, last: ran, now: t0.addingTimeInterval(59.9)) == [0])
        #expect(PeriodicWorker.due(jobs, last: ran, now: t0.addingTimeInterval(60)) == [0, 1])
        #expect(PeriodicWorker.due(jobs, last: ran, now: t0.addingTimeInterval(-5)) == [0, 1], "a clock set back runs the job instead of waiting")
    }

    @Test("the worker runs its jobs with the clock's time, tick after tick, and returns when the application shuts down")
    func runsUntilShutdown() async throws {
        let clock = TestClock(Date(epochMilliseconds: 1_900_000_000_000))
        let (runs, seen) = AsyncStream.makeStream(of: Date.self)
        let worker = PeriodicWorker("test", jobs: [PeriodicJob("record") { now in seen.yield(now) }], clock: clock, tick: .milliseconds(1))
        let group = ServiceGroup(configuration: .init(services: [worker], logger: .init(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = runs.makeAsyncIterator()
            #expect(await iterator.next() == clock.now())
            clock.advance(90)
            // Ticks already under way may still report the old time; the clock's move shows up next.
            var moved = false
            while let now = await iterator.next() {
                if now == clock.now() {
                    moved = true
                    break
                }
            }
            #expect(moved)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}

import HTTPAPI
import NIOCore
import NIOPosix
import Testing

/// `berth serve` runs its handlers with `withEventLoopHandlers`: what it promises is that every
/// task under it, child tasks included, runs on one of the group's event loops, and comes back to
/// one after a hop elsewhere.
@Suite("Handlers on the event loops")
struct EventLoopExecutorTests {
    @Test("tasks under the preference, and their child tasks, run on event loops, also after resuming from another thread")
    func runsOnEventLoops() async throws {
        #expect(MultiThreadedEventLoopGroup.currentEventLoop == nil, "the test itself starts on Swift's pool")
        let placements = try await withEventLoopHandlers {
            var onLoop = [MultiThreadedEventLoopGroup.currentEventLoop != nil]
            // Resumed from a thread of NIO's blocking pool, as a database queue would resume it.
            _ = try await NIOThreadPool.singleton.runIfActive { 1 }
            onLoop.append(MultiThreadedEventLoopGroup.currentEventLoop != nil)
            let children = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 { group.addTask { MultiThreadedEventLoopGroup.currentEventLoop != nil } }
                var all: [Bool] = []
                for await child in group { all.append(child) }
                return all
            }
            return onLoop + children
        }
        #expect(placements.count == 10 && placements.allSatisfy { $0 })
    }
}

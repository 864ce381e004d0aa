import NIOCore
import NIOPosix

/// Runs tasks on NIO's event loops instead of Swift's global concurrent pool.
///
/// Hummingbird reads each request on a connection's event loop and hands it to the connection's
/// task; on the global pool that is a wake-up of another thread for every request, and another for
/// the answer to go back to the event loop to be written. With the server's tasks preferring this
/// executor (``withEventLoopHandlers(_:)``), a job enqueued from an event loop runs on that same
/// loop, so a request is read, handled and answered on one thread; a job enqueued from elsewhere (a
/// database queue resuming a continuation) goes to the next loop of the group.
///
/// Handlers must not block: Berth's stores hop to their own threads (GRDB's queues, the PostgreSQL
/// store's thread pool) and never wait on an event loop.
public final class EventLoopExecutor: TaskExecutor {
    /// The executor over Hummingbird's default group (jobs hold it unowned: it lives as long as the process).
    public static let shared = EventLoopExecutor()

    let group: MultiThreadedEventLoopGroup

    public init(group: MultiThreadedEventLoopGroup = .singleton) {
        self.group = group
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? group.next()
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}

/// Runs `body` (the application's service group) with its tasks on the event loops of
/// Hummingbird's default group: child tasks (each connection's) inherit the preference.
public func withEventLoopHandlers<T: Sendable>(_ body: () async throws -> T) async throws -> T {
    try await withTaskExecutorPreference(EventLoopExecutor.shared) { try await body() }
}

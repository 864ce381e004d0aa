import Foundation
import Synchronization

/// How many stores (a harness's SQLite file, a conformance test's database) the test process holds
/// open at once. Swift Testing starts every test of the run at the same time: unbounded, HTTPAPITests
/// alone held 180 harnesses' SQLite files and 370 sockets open together (1,258 descriptors), and
/// beside the CLI suites the process passed 1,370, where Foundation's `Process.run` reads past
/// readdir's buffer of /proc/self/fd and crashes the whole run (seen twice). A test waits here for a
/// place before it opens its store and gives it back when it closes it.
///
/// A test that waited `patience` goes on anyway (over the budget, and says so): a test holding two
/// stores at once, or one never closed, must not hang the run.
public final class OpenStoreBudget: Sendable {
    /// The budget every suite shares.
    public static let shared = OpenStoreBudget(limit: 24)

    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Void, Never>
        /// The fallback's timer, cancelled when the waiter is admitted (so that it does not sleep on
        /// to the end of the run).
        var timer: Task<Void, Never>?
    }

    private struct State {
        var open = 0
        var nextId = 0
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())
    public let limit: Int
    public let patience: Duration

    public init(limit: Int, patience: Duration = .seconds(180)) {
        self.limit = limit
        self.patience = patience
    }

    /// Stores open now (waiters not counted).
    public var open: Int { state.withLock { $0.open } }
    /// Tests waiting for a place now.
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits for a place (first come, first served).
    public func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id: Int? = state.withLock { state in
                if state.open < limit {
                    state.open += 1
                    return nil
                }
                state.nextId += 1
                state.waiters.append(Waiter(id: state.nextId, continuation: continuation))
                return state.nextId
            }
            guard let id else {
                continuation.resume()
                return
            }
            let patience = patience
            let timer = Task.detached { [self] in
                do { try await Task.sleep(for: patience) } catch { return }  // cancelled: admitted in time
                let late: CheckedContinuation<Void, Never>? = state.withLock { state in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    state.open += 1
                    return state.waiters.remove(at: index).continuation
                }
                guard let late else { return }
                FileHandle.standardError.write(
                    Data("OpenStoreBudget: a store opened over the budget of \(self.limit) after waiting \(patience)\n".utf8)
                )
                late.resume()
            }
            let admitted = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return true }
                state.waiters[index].timer = timer
                return false
            }
            if admitted { timer.cancel() }
        }
    }

    /// Gives a place back: to the first waiter, else to the budget.
    public func leave() {
        let next: Waiter? = state.withLock { state in
            if state.waiters.isEmpty {
                state.open = max(0, state.open - 1)
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.timer?.cancel()
        next?.continuation.resume()
    }

    /// Runs `body` holding a place.
    public func holding<T>(_ body: () async throws -> T) async rethrows -> T {
        await enter()
        defer { leave() }
        return try await body()
    }
}

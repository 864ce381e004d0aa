import Domain
import Foundation
import Synchronization

/// Records webhook attempts in batches (group commit): an attempt that ends while another batch is
/// being written waits for it, then goes with every attempt that ended meanwhile in one unit of
/// work. Sixteen subjects delivered side by side cost one write, not sixteen, and the writes of the
/// app's own purchases are not queued behind a commit per delivery. An attempt's caller resumes
/// once its record is committed (or the write failed), so nothing is reported recorded that is
/// not; a batch that fails is written again one attempt at a time, so one bad record costs only its own.
final class AttemptRecorder: Sendable {
    /// One attempt's record (``OutboxRepository/recordAttempt(_:statusCode:error:delivered:nextAttemptAt:now:)``).
    struct Attempt: Sendable {
        var message: OutboxMessage
        var statusCode: Int?
        var error: String?
        var delivered: Bool
        var nextAttemptAt: Date?
        var now: Date
    }

    private struct Waiting {
        var attempt: Attempt
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        var writing = false
        /// Attempts in the batch being written.
        var inBatch = 0
    }

    private let store: any Store
    private let state = Mutex(State())

    init(store: any Store) {
        self.store = store
    }

    /// Attempts waiting for the next batch, and in the batch being written (tests wait on them).
    var counts: (waiting: Int, inBatch: Int) { state.withLock { ($0.waiting.count, $0.inBatch) } }

    /// Records `attempt`, with whichever others end before the next batch is written.
    func record(_ attempt: Attempt) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let leads = state.withLock { state -> Bool in
                state.waiting.append(Waiting(attempt: attempt, continuation: continuation))
                if state.writing { return false }
                state.writing = true
                return true
            }
            if leads { Task { await self.writeBatches() } }
        }
    }

    /// Writes what waits, batch after batch, until nothing does.
    private func writeBatches() async {
        while true {
            let batch = state.withLock { state -> [Waiting] in
                let batch = state.waiting
                state.waiting = []
                state.inBatch = batch.count
                if batch.isEmpty { state.writing = false }
                return batch
            }
            if batch.isEmpty { return }
            do {
                try await write(batch.map(\.attempt))
                for waiting in batch { waiting.continuation.resume() }
            } catch {
                for waiting in batch {
                    do {
                        try await write([waiting.attempt])
                        waiting.continuation.resume()
                    } catch {
                        waiting.continuation.resume(throwing: error)
                    }
                }
            }
        }
    }

    private func write(_ attempts: [Attempt]) async throws {
        try await store.write { tx in
            for attempt in attempts {
                try tx.outbox.recordAttempt(
                    attempt.message,
                    statusCode: attempt.statusCode,
                    error: attempt.error,
                    delivered: attempt.delivered,
                    nextAttemptAt: attempt.nextAttemptAt,
                    now: attempt.now
                )
            }
        }
    }
}

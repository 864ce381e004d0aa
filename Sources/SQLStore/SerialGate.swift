import Synchronization

/// A FIFO async mutex: one holder at a time, without blocking threads and without an actor hop
/// when the gate is free. SQLite has one writer; Berth queues its transactions here instead of
/// spinning on SQLITE_BUSY.
final class SerialGate: Sendable {
    private struct State {
        var busy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state = Mutex(State())

    func acquire() async {
        let acquired = state.withLock { state in
            guard !state.busy else { return false }
            state.busy = true
            return true
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let immediately = state.withLock { state in
                if !state.busy {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if immediately { continuation.resume() }
        }
    }

    /// Hands the gate to the longest waiter, or opens it.
    func release() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard state.head < state.waiters.count else {
                state.busy = false
                state.waiters.removeAll(keepingCapacity: true)
                state.head = 0
                return nil
            }
            let next = state.waiters[state.head]
            state.head += 1
            if state.head > 1024, state.head * 2 > state.waiters.count {
                state.waiters.removeFirst(state.head)
                state.head = 0
            }
            return next
        }
        next?.resume()
    }
}

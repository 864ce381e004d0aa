/// A FIFO async mutex: one holder at a time, without blocking threads.
/// SQLite has one writer; Berth queues its transactions here instead of spinning on SQLITE_BUSY.
actor SerialGate {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var head = 0

    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        guard head < waiters.count else {
            busy = false
            waiters.removeAll(keepingCapacity: true)
            head = 0
            return
        }
        let next = waiters[head]
        head += 1
        if head > 1024, head * 2 > waiters.count {
            waiters.removeFirst(head)
            head = 0
        }
        next.resume()
    }
}

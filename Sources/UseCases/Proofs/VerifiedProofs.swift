import AppleSignedData
import Synchronization

/// The proofs a tenant has already verified, by the SHA-256 of what the app sent: a retry, a replay
/// or a validator's relaunch re-sends the same signed transaction or receipt, and its signature,
/// chain and payload need not be checked again. Verification depends only on the bytes and the
/// tenant's fixed expectations (roots, bundle, environments), never on the time of the call, so a
/// proof that verified once verifies again. Only successes are kept; refusals are checked every
/// time. Bounded: the oldest entry goes first.
public final class VerifiedProofs: Sendable {
    public static let transactionCapacity = 4096
    public static let receiptCapacity = 256

    let transactions: BoundedCache<TransactionPayload>
    let receipts: BoundedCache<VerifiedReceipt>

    public init(transactionCapacity: Int = VerifiedProofs.transactionCapacity, receiptCapacity: Int = VerifiedProofs.receiptCapacity) {
        transactions = BoundedCache(capacity: transactionCapacity)
        receipts = BoundedCache(capacity: receiptCapacity)
    }

    /// How many of each are held (metrics, tests).
    public var counts: (transactions: Int, receipts: Int) { (transactions.count, receipts.count) }
}

/// A map of at most `capacity` entries that forgets the oldest insertion first.
final class BoundedCache<Value: Sendable>: Sendable {
    private struct State {
        var values: [String: Value] = [:]
        /// Keys in insertion order, as a ring: `next` is the oldest once the ring is full.
        var order: [String] = []
        var next = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { state.withLock { $0.values.count } }

    subscript(key: String) -> Value? {
        state.withLock { $0.values[key] }
    }

    func insert(_ value: Value, for key: String) {
        state.withLock { state in
            guard state.values.updateValue(value, forKey: key) == nil else { return }
            if state.order.count < capacity {
                state.order.append(key)
            } else {
                state.values[state.order[state.next]] = nil
                state.order[state.next] = key
                state.next = (state.next + 1) % capacity
            }
        }
    }
}

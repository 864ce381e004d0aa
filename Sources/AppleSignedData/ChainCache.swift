import Crypto
import Foundation
import Synchronization

/// The SHA-256 fingerprints of the three certificates of an x5c header.
struct ChainKey: Hashable, Sendable {
    let leaf: SHA256Digest
    let intermediate: SHA256Digest
    let root: SHA256Digest
}

/// The outcome of building one chain, kept so that later requests skip the expensive link checks.
struct TrustedChain: Sendable {
    struct Validity: Sendable {
        let role: String
        let notBefore: Date
        let notAfter: Date
    }

    let leafKey: P256.Signing.PublicKey
    /// Leaf, intermediate, root: re-checked against every payload's signedDate.
    let validity: [Validity]
    let rootFingerprint: String
}

/// A bounded, thread-safe cache of built chains keyed by certificate fingerprints.
/// Only successfully built chains are stored; evicts the oldest entry when full.
final class ChainCache: Sendable {
    struct Statistics: Hashable, Sendable {
        /// Chains built from scratch (cache misses that verified every link).
        var builds: Int = 0
        var hits: Int = 0
        var entries: Int = 0
    }

    private struct State {
        var entries: [ChainKey: TrustedChain] = [:]
        var insertionOrder: [ChainKey] = []
        var oldest = 0
        var statistics = Statistics()
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    func lookup(_ key: ChainKey) -> TrustedChain? {
        state.withLock { state in
            let found = state.entries[key]
            if found != nil { state.statistics.hits += 1 }
            return found
        }
    }

    func recordBuild() {
        state.withLock { $0.statistics.builds += 1 }
    }

    func insert(_ chain: TrustedChain, for key: ChainKey) {
        state.withLock { state in
            guard state.entries[key] == nil else { return }
            if state.insertionOrder.count < capacity {
                state.insertionOrder.append(key)
            } else {
                state.entries[state.insertionOrder[state.oldest]] = nil
                state.insertionOrder[state.oldest] = key
                state.oldest = (state.oldest + 1) % capacity
            }
            state.entries[key] = chain
        }
    }

    var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.entries = state.entries.count
            return statistics
        }
    }
}

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

/// A dictionary that forgets its oldest entry when full.
struct BoundedDictionary<Key: Hashable, Value> {
    private(set) var entries: [Key: Value] = [:]
    private var order: [Key] = []
    private var oldest = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    subscript(key: Key) -> Value? { entries[key] }

    mutating func insert(_ value: Value, for key: Key) {
        guard entries[key] == nil else { return }
        if order.count < capacity {
            order.append(key)
        } else {
            entries[order[oldest]] = nil
            order[oldest] = key
            oldest = (oldest + 1) % capacity
        }
        entries[key] = value
    }
}

/// A bounded, thread-safe cache of built chains keyed by certificate fingerprints.
/// Successfully built chains are stored for reuse. Beside them it remembers, also bounded: which
/// intermediates a configured root was seen to sign (so a new leaf under a known intermediate costs
/// one link check, not two), and which certificate triples failed and why (so the same junk sent
/// again costs three hashes, not a chain build). A failure entry never makes a valid chain pass.
///
/// A second map remembers which fingerprints an exact JWS header text stands for, so a request whose
/// header was seen before skips decoding the header and its certificates altogether. It is only a
/// shortcut to the fingerprint entry: the signature is still verified over that very header.
final class ChainCache: Sendable {
    struct Statistics: Hashable, Sendable {
        /// Chains built from scratch (cache misses that verified every link).
        var builds: Int = 0
        var hits: Int = 0
        var entries: Int = 0
    }

    /// An intermediate as signed by a root: both fingerprints.
    struct Link: Hashable, Sendable {
        let intermediate: SHA256Digest
        let root: SHA256Digest
    }

    private struct State {
        var chains: BoundedDictionary<ChainKey, TrustedChain>
        var headers: BoundedDictionary<Substring, ChainKey>
        var intermediates: BoundedDictionary<Link, Bool>
        var failures: BoundedDictionary<ChainKey, SignedDataError>
        var statistics = Statistics()
    }

    private let state: Mutex<State>

    init(capacity: Int) {
        state = Mutex(
            State(
                chains: BoundedDictionary(capacity: capacity),
                headers: BoundedDictionary(capacity: capacity),
                intermediates: BoundedDictionary(capacity: 64),
                failures: BoundedDictionary(capacity: capacity)
            )
        )
    }

    /// Whether a configured root was already seen to sign this intermediate.
    func isKnown(_ link: Link) -> Bool {
        state.withLock { $0.intermediates[link] != nil }
    }

    func remember(_ link: Link) {
        state.withLock { $0.intermediates.insert(true, for: link) }
    }

    /// Why this certificate triple failed before, if it did.
    func failure(for key: ChainKey) -> SignedDataError? {
        state.withLock { $0.failures[key] }
    }

    func recordFailure(_ error: SignedDataError, for key: ChainKey) {
        state.withLock { $0.failures.insert(error, for: key) }
    }

    /// The chain behind a header text seen before, if it is still cached.
    func lookup(header: Substring) -> TrustedChain? {
        state.withLock { state in
            guard let key = state.headers[header], let chain = state.chains[key] else { return nil }
            state.statistics.hits += 1
            return chain
        }
    }

    func lookup(_ key: ChainKey, header: Substring) -> TrustedChain? {
        state.withLock { state in
            guard let chain = state.chains[key] else { return nil }
            state.statistics.hits += 1
            state.headers.insert(key, for: header)
            return chain
        }
    }

    func recordBuild() {
        state.withLock { $0.statistics.builds += 1 }
    }

    func insert(_ chain: TrustedChain, for key: ChainKey, header: Substring) {
        state.withLock { state in
            state.chains.insert(chain, for: key)
            state.headers.insert(key, for: header)
        }
    }

    var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.entries = state.chains.entries.count
            return statistics
        }
    }
}

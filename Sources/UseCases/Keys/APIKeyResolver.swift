import AppleSignedData
import Crypto
import Domain
import Foundation
import Synchronization

/// Turns a presented key into its record: active keys only, cached for ``refreshInterval`` so a
/// request does not read the database, and so a revocation or an expiry reaches every instance
/// within that interval. Unknown keys are remembered too (briefly), so guessing does not cost a read
/// each time. A key's last use is written at most once a minute per instance. The cache runs on the
/// injected clock (tests advance it instead of waiting); an entry the clock went back past is stale.
public final class APIKeyResolver: Sendable {
    /// How long a looked-up key (or its absence) is trusted before the database is asked again.
    public static let refreshInterval: Duration = .seconds(2)
    static let touchInterval: TimeInterval = 60
    static let capacity = 10_000

    private let store: any Store
    private let clock: any BerthClock
    private let lifetime: Duration
    private let entries = Mutex<[String: (key: APIKey?, until: Date)]>([:])

    public init(store: any Store, clock: any BerthClock, lifetime: Duration = APIKeyResolver.refreshInterval) {
        self.store = store
        self.clock = clock
        self.lifetime = lifetime
    }

    /// The active key presented as `secret`, or nil (unknown, revoked or expired).
    public func resolve(_ secret: String) async throws -> APIKey? {
        let hash = APIKeys.hash(secret)
        let now = clock.now()
        let cached: APIKey?? = entries.withLock { entries in
            guard let entry = entries[hash] else { return nil }
            guard entry.until > now, entry.until.timeIntervalSince(now) <= lifetime.seconds else {
                entries[hash] = nil
                return nil
            }
            return .some(entry.key)
        }
        if let cached { return cached.flatMap { $0.isActive(at: now) ? $0 : nil } }
        let found = try await store.read { try $0.keys.key(hash: hash) }
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll() }
            entries[hash] = (found, now.addingTimeInterval(lifetime.seconds))
        }
        guard let key = found, key.isActive(at: now) else { return nil }
        if key.lastUsedAt.map({ now.timeIntervalSince($0) >= Self.touchInterval }) ?? true {
            // Informational: a failed write of the last use must not refuse the request.
            let id = key.id, since = now.addingTimeInterval(-Self.touchInterval)
            try? await store.write { try $0.keys.touch(id: id, at: now, unlessUsedSince: since) }
        }
        return key
    }
}

extension Duration {
    /// Seconds as a TimeInterval (attoseconds kept to the nanosecond).
    var seconds: TimeInterval { TimeInterval(components.seconds) + TimeInterval(components.attoseconds / 1_000_000_000) / 1e9 }
}

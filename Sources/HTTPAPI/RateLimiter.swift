import Domain
import Foundation
import Synchronization

/// Token buckets per caller for the verification endpoints: each bucket holds `burst` requests and
/// refills at `perSecond`. Time comes from the injected clock.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    static let defaultLimit = Tenant.RateLimit(burst: 60, perSecond: 10)

    private let buckets = Mutex<[String: Bucket]>([:])
    private let clock: any BerthClock

    init(clock: any BerthClock) {
        self.clock = clock
    }

    /// Takes one token for `key`, or tells how long until one is available.
    func take(_ key: String, limit: Tenant.RateLimit) -> Duration? {
        let now = clock.now()
        return buckets.withLock { buckets in
            if buckets.count > 100_000 { buckets.removeAll() }
            var bucket = buckets[key] ?? Bucket(tokens: Double(limit.burst), updated: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(Double(limit.burst), bucket.tokens + elapsed * limit.perSecond)
            bucket.updated = now
            defer { buckets[key] = bucket }
            guard bucket.tokens >= 1 else {
                let wait = (1 - bucket.tokens) / max(limit.perSecond, 0.001)
                return .milliseconds(Int64((wait * 1000).rounded(.up)))
            }
            bucket.tokens -= 1
            return nil
        }
    }
}

extension BerthRequestContext {
    /// Who the rate limit counts: the user, else the server key.
    var rateLimitKey: String? {
        switch identity {
        case .user(let tenant, let userId, _): "\(tenant.id)/user/\(userId)"
        case .server(let tenant, let keyId): "\(tenant.id)/server/\(keyId)"
        case .admin(let tenant, let keyId): "\(tenant.id)/admin/\(keyId)"
        case nil: nil
        }
    }
}

extension RateLimiter {
    /// Refuses with 429 and Retry-After when the caller's bucket is empty.
    func check(_ context: BerthRequestContext) throws {
        guard let key = context.rateLimitKey, let tenant = context.identity?.tenant else { return }
        if let wait = take(key, limit: tenant.tenant.rateLimit ?? Self.defaultLimit) {
            let seconds = max(1, Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up)))
            throw APIError(.tooManyRequests, "rate_limited", "too many verification requests; retry in \(seconds) s", headers: [.retryAfter: String(seconds)])
        }
    }
}

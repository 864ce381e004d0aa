import Domain
import Foundation
import HTTPTypes
import Synchronization
import UseCases

/// Token buckets per tenant, scope and principal: each bucket holds `burst` requests and refills at
/// `perSecond`. Time comes from the injected clock.
///
/// Memory is bounded per tenant: when a tenant's table is full, buckets that have refilled (an idle
/// caller, the same as no bucket) are dropped first, then the least recently used half. One tenant, or
/// one attacker inventing principals, never resets another tenant's limits.
final class RateLimiter: Sendable {
    /// What a bucket limits.
    enum Scope: String, Sendable {
        /// verify-purchase and verify-receipt (chain and signature work, writes).
        case verification
        /// Booking creation (a write that takes inventory).
        case booking
        /// The unauthenticated App Store notification endpoint, per client address.
        case notification
        /// Admin listings and actions (reads that scan, writes), per admin key.
        case admin
        /// A user's account: credit reservations, links, memberships (writes without a store's proof).
        case account
        /// A user's own state: balances, entitlements, lists (5× the verification limit).
        case reads
        /// Bookings named by a reference or id that the caller does not hold (V9), per key (or per
        /// user token's user): guessing references is refused once the budget is spent.
        case lookups
    }

    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    private struct Key: Hashable {
        var scope: Scope
        var principal: String
    }

    /// Most buckets kept per tenant.
    let capacityPerTenant: Int
    private let tables = Mutex<[String: [Key: Bucket]]>([:])
    private let clock: any BerthClock

    init(clock: any BerthClock, capacityPerTenant: Int = 20_000) {
        self.clock = clock
        self.capacityPerTenant = max(2, capacityPerTenant)
    }

    /// Takes one token from every bucket named (all or none), or tells how long until one is available.
    func take(tenant: String, scope: Scope, principals: [(String, Tenant.RateLimit)]) -> Duration? {
        let now = clock.now()
        // The tenant's table is mutated in place (`&tables[tenant, default:]`): taking a copy of it
        // would copy every bucket of the tenant on each request.
        return tables.withLock { tables in take(from: &tables[tenant, default: [:]], scope: scope, now: now, principals: principals) }
    }

    private func take(from table: inout [Key: Bucket], scope: Scope, now: Date, principals: [(String, Tenant.RateLimit)]) -> Duration? {
        var refreshed: [(Key, Bucket)] = []
        var wait: Double = 0
        for (principal, limit) in principals {
            let key = Key(scope: scope, principal: principal)
            var bucket = table[key] ?? Bucket(tokens: Double(limit.burst), updated: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(Double(limit.burst), bucket.tokens + elapsed * limit.perSecond)
            bucket.updated = now
            if bucket.tokens < 1 { wait = max(wait, (1 - bucket.tokens) / max(limit.perSecond, 0.001)) }
            refreshed.append((key, bucket))
        }
        if wait > 0 {
            for (key, bucket) in refreshed where table[key] != nil { table[key] = bucket }
            return .milliseconds(Int64((wait * 1000).rounded(.up)))
        }
        if table.count + refreshed.count > capacityPerTenant { evict(&table, now: now, limits: principals.map(\.1)) }
        for (key, var bucket) in refreshed {
            bucket.tokens -= 1
            table[key] = bucket
        }
        return nil
    }

    /// How long until `principal`'s bucket of `scope` holds a token again (nil: it holds one now),
    /// without taking any.
    func wait(tenant: String, scope: Scope, principal: String, limit: Tenant.RateLimit) -> Duration? {
        let now = clock.now()
        return tables.withLock { tables -> Duration? in
            guard let bucket = tables[tenant]?[Key(scope: scope, principal: principal)] else { return nil }
            let tokens = min(Double(limit.burst), bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * limit.perSecond)
            guard tokens < 1 else { return nil }
            return .milliseconds(Int64(((1 - tokens) / max(limit.perSecond, 0.001) * 1000).rounded(.up)))
        }
    }

    /// Drops `principal`'s bucket of `scope`: it is full again.
    func refill(tenant: String, scope: Scope, principal: String) {
        tables.withLock { tables in _ = tables[tenant]?.removeValue(forKey: Key(scope: scope, principal: principal)) }
    }

    /// How many buckets a tenant holds (for tests and metrics).
    func bucketCount(tenant: String) -> Int {
        tables.withLock { $0[tenant]?.count ?? 0 }
    }

    private func evict(_ table: inout [Key: Bucket], now: Date, limits: [Tenant.RateLimit]) {
        // A bucket idle long enough to be full again says nothing an absent bucket would not.
        let slowest = limits.map(\.perSecond).min() ?? 1
        let largest = Double(limits.map(\.burst).max() ?? 1)
        table = table.filter { now.timeIntervalSince($0.value.updated) * slowest + $0.value.tokens < largest }
        guard table.count >= capacityPerTenant / 2 else { return }
        let keep = table.sorted { $0.value.updated > $1.value.updated }.prefix(capacityPerTenant / 2)
        table = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
    }
}

extension RateLimiter {
    /// Refuses with 429 and Retry-After when one of the caller's buckets for `scope` is empty.
    ///
    /// Callers are keyed by who authenticated: a user token by its user; a client or server key by
    /// the key and, when it acts for a user, by that user under that key too (so one user cannot
    /// spend the key's whole allowance, and inventing user ids does not multiply it: the key's own
    /// bucket holds 20× the per-user limit). An admin key by the key.
    func check(_ caller: Caller, scope: Scope) throws {
        let tenant = caller.tenant.tenant
        let limit: Tenant.RateLimit =
            switch scope {
            case .booking: tenant.bookingLimit
            case .reads: Tenant.RateLimit(burst: tenant.verificationLimit.burst * 5, perSecond: tenant.verificationLimit.perSecond * 5)
            case .verification, .account, .admin, .notification, .lookups: tenant.verificationLimit
            }
        let aggregate = Tenant.RateLimit(burst: limit.burst * 20, perSecond: limit.perSecond * 20)
        let principals: [(String, Tenant.RateLimit)]
        switch (caller.kind, caller.key) {
        case (.userToken, _):
            principals = [("user:\(caller.userId ?? "")", limit)]
        case (.adminKey, let key?):
            principals = [("admin:\(key.id)", limit)]
        case (_, let key?):
            let holder = "\(key.role.rawValue):\(key.id)"
            principals = caller.userId.map { [(holder, aggregate), ("\(holder)/user:\($0)", limit)] } ?? [(holder, aggregate)]
        default:
            principals = [("anonymous", limit)]
        }
        try refuse(take(tenant: tenant.id, scope: scope, principals: principals), what: scope.rawValue)
    }

    /// The notification endpoint, keyed by the client's address (it carries no credentials): a
    /// failed notification takes a token.
    func checkNotification(tenant: Tenant, clientAddress: String?) throws {
        try refuse(
            take(tenant: tenant.id, scope: .notification, principals: [(Self.notificationPrincipal(clientAddress), tenant.notificationLimit)]),
            what: "notification"
        )
    }

    /// Refuses, before any work, an address whose failures used up its notification budget (T8:
    /// the refusal must save the verification, not follow it). Apple retries, and the notification
    /// history reader recovers what a refusal delayed.
    func admitNotification(tenant: Tenant, clientAddress: String?) throws {
        try refuse(
            wait(tenant: tenant.id, scope: .notification, principal: Self.notificationPrincipal(clientAddress), limit: tenant.notificationLimit),
            what: "failed notification"
        )
    }

    /// A notification from this address verified: its failure budget is whole again.
    func notificationVerified(tenant: Tenant, clientAddress: String?) {
        refill(tenant: tenant.id, scope: .notification, principal: Self.notificationPrincipal(clientAddress))
    }

    /// Every Google Play push of a tenant, whatever its outcome, takes a token of the tenant's push
    /// budget (10× the notification burst, 5× its rate): one replayed push token cannot have Berth
    /// store rows and ask Google without bound (V3). Pub/Sub retries a 429 with backoff.
    func checkPush(tenant: Tenant) throws {
        let limit = tenant.notificationLimit
        let budget = Tenant.RateLimit(burst: min(limit.burst, 1_000_000) * 10, perSecond: limit.perSecond * 5)
        try refuse(take(tenant: tenant.id, scope: .notification, principals: [("pushes", budget)]), what: "Google Play push")
    }

    /// Refuses, before the lookup, a caller whose failed booking lookups used up its budget (V9).
    func admitLookup(_ caller: Caller) throws {
        let tenant = caller.tenant.tenant
        try refuse(
            wait(tenant: tenant.id, scope: .lookups, principal: Self.lookupPrincipal(caller), limit: tenant.verificationLimit),
            what: "unknown booking"
        )
    }

    /// A lookup named a booking the caller does not hold: it takes a token of the key's budget (not
    /// the user's: inventing user ids under one key does not multiply it).
    func lookupFailed(_ caller: Caller) {
        let tenant = caller.tenant.tenant
        _ = take(tenant: tenant.id, scope: .lookups, principals: [(Self.lookupPrincipal(caller), tenant.verificationLimit)])
    }

    private static func lookupPrincipal(_ caller: Caller) -> String {
        if let key = caller.key { return "key:\(key.id)" }
        return "user:\(caller.userId ?? "")"
    }

    private static func notificationPrincipal(_ clientAddress: String?) -> String { "address:\(clientAddress ?? "unknown")" }

    private func refuse(_ wait: Duration?, what: String) throws {
        guard let wait else { return }
        let seconds = max(1, Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up)))
        throw APIError(.tooManyRequests, .rateLimited, "too many \(what) requests; retry in \(seconds) s", headers: [.retryAfter: String(seconds)])
    }
}

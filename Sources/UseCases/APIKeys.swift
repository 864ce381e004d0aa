import AppleSignedData
import Crypto
import Domain
import Foundation
import Synchronization

/// API key format and hashing: a key is shown once; only its SHA-256 is stored.
public enum APIKeys {
    public static let prefix = "berth_"

    /// A new random key, `berth_<tenant>_<43 base64url characters>` (256 bits).
    public static func generate(tenantId: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "\(prefix)\(tenantId)_\(Base64URL.encode(bytes))"
    }

    public static func hash(_ key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).hexString
    }

    /// What a listing shows of a key: its tenant prefix and 4 characters of the secret (24 bits of 256).
    public static func hint(_ key: String) -> String {
        String(key.prefix(max(0, key.count - 39))) + "…"
    }
}

/// A key just made: the stored record and the secret, shown once.
public struct IssuedAPIKey: Sendable {
    public var key: APIKey
    public var secret: String
}

/// `berth keys create`, `POST /api/admin/keys`: a new key of a role (optionally narrower scopes), audited.
public struct CreateAPIKey: Sendable {
    let store: any Store

    public init(store: any Store) { self.store = store }

    public func callAsFunction(tenantId: String, role: APIKeyRole, scopes: Set<KeyScope>? = nil, name: String? = nil, expiresAt: Date? = nil,
                               actor: Actor = .system, now: Date) async throws -> IssuedAPIKey {
        let scopes = try KeyRules.scopes(scopes, for: role)
        let name = try KeyRules.name(name)
        let secret = APIKeys.generate(tenantId: tenantId)
        let new = NewAPIKey(tenantId: tenantId, role: role, scopes: scopes, name: name, hint: APIKeys.hint(secret), hash: APIKeys.hash(secret),
                            expiresAt: expiresAt)
        let key = try await store.write { tx in
            let key = try tx.keys.create(new, now: now)
            try tx.audit.append(Self.audit(.apiKeyCreated, key, actor: actor, now: now))
            return key
        }
        return IssuedAPIKey(key: key, secret: secret)
    }

    /// A key whose secret the caller made (tests that need a known key).
    public func callAsFunction(tenantId: String, role: APIKeyRole, hash: String, now: Date) async throws -> APIKey {
        try await store.write { tx in
            let key = try tx.keys.create(NewAPIKey(tenantId: tenantId, role: role, hash: hash), now: now)
            try tx.audit.append(Self.audit(.apiKeyCreated, key, actor: .system, now: now))
            return key
        }
    }

    static func audit(_ action: AuditAction, _ key: APIKey, actor: Actor, now: Date, extra: [String: String] = [:]) -> AuditRecord {
        var detail = ["keyId": String(key.id), "role": key.role.rawValue, "scopes": key.scopes.sorted().map(\.rawValue).joined(separator: " ")]
        if !key.name.isEmpty { detail["name"] = key.name }
        detail.merge(extra) { _, new in new }
        return AuditRecord(tenantId: key.tenantId, actor: actor, action: action, bookingId: nil, purchaseId: nil, detail: detail, at: now)
    }
}

/// `berth keys revoke`, `POST /api/admin/keys/{id}/revoke`: the key stops working on every instance
/// within ``APIKeyResolver/refreshInterval``. Revoking a revoked key answers it as it is.
public struct RevokeAPIKey: Sendable {
    let store: any Store

    public init(store: any Store) { self.store = store }

    /// - Parameter tenantId: the caller's tenant (an admin key), or nil for the command line.
    public func callAsFunction(id: Int64, tenantId: String?, actor: Actor = .system, now: Date) async throws -> APIKey {
        try await store.write { tx in
            guard var key = try tx.keys.key(id: id, tenantId: tenantId, forUpdate: true) else { throw DomainError.keyNotFound(id) }
            guard key.revokedAt == nil else { return key }
            try tx.keys.revoke(id: id, at: now)
            key.revokedAt = now
            try tx.audit.append(CreateAPIKey.audit(.apiKeyRevoked, key, actor: actor, now: now))
            return key
        }
    }
}

/// `berth keys rotate`, `POST /api/admin/keys/{id}/rotate`: a new key with the same tenant, role,
/// scopes and name; the old one keeps working until `now + overlap` (default 24 h, at most 90 days),
/// so that apps and backends can switch without downtime.
public struct RotateAPIKey: Sendable {
    let store: any Store

    public init(store: any Store) { self.store = store }

    public struct Result: Sendable {
        public var issued: IssuedAPIKey
        public var old: APIKey
    }

    public func callAsFunction(id: Int64, tenantId: String?, overlap: TimeInterval?, actor: Actor = .system, now: Date) async throws -> Result {
        let until = try KeyRules.rotationExpiry(now: now, overlap: overlap)
        return try await store.write { tx in
            guard var old = try tx.keys.key(id: id, tenantId: tenantId, forUpdate: true) else { throw DomainError.keyNotFound(id) }
            guard old.isActive(at: now) else {
                throw DomainError(.conflict, .invalidTransition, "key \(id) is \(old.status(at: now).rawValue); create a new key instead", field: "id")
            }
            let secret = APIKeys.generate(tenantId: old.tenantId)
            let new = NewAPIKey(tenantId: old.tenantId, role: old.role, scopes: old.scopes == old.role.scopes ? nil : old.scopes, name: old.name,
                                hint: APIKeys.hint(secret), hash: APIKeys.hash(secret), rotatedFrom: old.id)
            let key = try tx.keys.create(new, now: now)
            let expiry = min(old.expiresAt ?? until, until)
            try tx.keys.expire(id: old.id, at: expiry)
            old.expiresAt = expiry
            try tx.audit.append(CreateAPIKey.audit(.apiKeyRotated, old, actor: actor, now: now,
                                                   extra: ["newKeyId": String(key.id), "oldKeyExpiresAt": ISO8601DateFormatter().string(from: expiry)]))
            try tx.audit.append(CreateAPIKey.audit(.apiKeyCreated, key, actor: actor, now: now, extra: ["rotatedFrom": String(old.id)]))
            return Result(issued: IssuedAPIKey(key: key, secret: secret), old: old)
        }
    }
}

extension DomainError {
    static func keyNotFound(_ id: Int64) -> DomainError {
        DomainError(.notFound, .keyNotFound, "no API key \(id) for this app", field: "id")
    }
}

/// Turns a presented key into its record: active keys only, cached for ``refreshInterval`` so a
/// request does not read the database, and so a revocation or an expiry reaches every instance
/// within that interval. Unknown keys are remembered too (briefly), so guessing does not cost a read
/// each time. A key's last use is written at most once a minute per instance.
public final class APIKeyResolver: Sendable {
    /// How long a looked-up key (or its absence) is trusted before the database is asked again.
    public static let refreshInterval: Duration = .seconds(2)
    static let touchInterval: TimeInterval = 60
    static let capacity = 10_000

    private let store: any Store
    private let clock: any BerthClock
    private let lifetime: Duration
    private let entries = Mutex<[String: (key: APIKey?, until: ContinuousClock.Instant)]>([:])

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
            guard entry.until > .now else {
                entries[hash] = nil
                return nil
            }
            return .some(entry.key)
        }
        if let cached { return cached.flatMap { $0.isActive(at: now) ? $0 : nil } }
        let found = try await store.read { try $0.keys.key(hash: hash) }
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll() }
            entries[hash] = (found, .now + lifetime)
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

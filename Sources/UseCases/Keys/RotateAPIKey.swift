import AppleSignedData
import Crypto
import Domain
import Foundation
import Synchronization

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
                throw DomainError(
                    .conflict,
                    .invalidTransition,
                    "key \(id) is \(old.status(at: now).rawValue); create a new key instead",
                    field: "id"
                )
            }
            let secret = APIKeys.generate(tenantId: old.tenantId)
            let new = NewAPIKey(
                tenantId: old.tenantId,
                role: old.role,
                scopes: old.scopes == old.role.scopes ? nil : old.scopes,
                name: old.name,
                hint: APIKeys.hint(secret),
                hash: APIKeys.hash(secret),
                rotatedFrom: old.id
            )
            let key = try tx.keys.create(new, now: now)
            let expiry = min(old.expiresAt ?? until, until)
            try tx.keys.expire(id: old.id, at: expiry)
            old.expiresAt = expiry
            try tx.audit.append(
                CreateAPIKey.audit(
                    .apiKeyRotated,
                    old,
                    actor: actor,
                    now: now,
                    extra: ["newKeyId": String(key.id), "oldKeyExpiresAt": ISO8601DateFormatter().string(from: expiry)]
                )
            )
            try tx.audit.append(CreateAPIKey.audit(.apiKeyCreated, key, actor: actor, now: now, extra: ["rotatedFrom": String(old.id)]))
            return Result(issued: IssuedAPIKey(key: key, secret: secret), old: old)
        }
    }
}

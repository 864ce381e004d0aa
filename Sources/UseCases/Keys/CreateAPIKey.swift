import AppleSignedData
import Crypto
import Domain
import Foundation
import Synchronization

/// `berth keys create`, `POST /api/admin/keys`: a new key of a role (optionally narrower scopes), audited.
public struct CreateAPIKey: Sendable {
    let store: any Store

    public init(store: any Store) { self.store = store }

    public func callAsFunction(
        tenantId: String,
        role: APIKeyRole,
        scopes: Set<KeyScope>? = nil,
        name: String? = nil,
        expiresAt: Date? = nil,
        actor: Actor = .system,
        now: Date
    ) async throws -> IssuedAPIKey {
        let scopes = try KeyRules.scopes(scopes, for: role)
        let name = try KeyRules.name(name)
        let secret = APIKeys.generate(tenantId: tenantId)
        let new = NewAPIKey(
            tenantId: tenantId,
            role: role,
            scopes: scopes,
            name: name,
            hint: APIKeys.hint(secret),
            hash: APIKeys.hash(secret),
            expiresAt: expiresAt
        )
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

import AppleSignedData
import Crypto
import Domain
import Foundation
import Synchronization

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

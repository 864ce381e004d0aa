import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

/// API keys on every backend: roles and scopes round-trip, revocation and expiry are stored, last
/// use is written at most once per interval, and one tenant never sees another's keys.
extension StoreConformance {
    @Test("keys: create, find by hash, list per tenant, revoke, expire, touch", arguments: StoreBackend.available)
    func keys(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let now = StoreConformance.now
            let client = try await store.write {
                try $0.keys.create(NewAPIKey(tenantId: "a", role: .client, name: "iOS app", hint: "berth_a_abcd…", hash: "h-client"), now: now)
            }
            let narrow = try await store.write {
                try $0.keys.create(
                    NewAPIKey(tenantId: "a", role: .server, scopes: [.read, .purchases], hash: "h-server"),
                    now: now.addingTimeInterval(1)
                )
            }
            _ = try await store.write { try $0.keys.create(NewAPIKey(tenantId: "b", role: .admin, hash: "h-admin"), now: now) }

            let found = try #require(try await store.read { try $0.keys.key(hash: "h-client") })
            #expect(found.role == .client && found.scopes == [.purchases, .read] && found.name == "iOS app" && found.hint == "berth_a_abcd…")
            #expect(try await store.read { try $0.keys.key(hash: "h-server") }?.scopes == [.read, .purchases])
            #expect(try await store.read { try $0.keys.keys(tenantId: "a") }.map(\.id) == [narrow.id, client.id], "newest first, tenant a only")
            #expect(
                try await store.read { try $0.keys.key(id: client.id, tenantId: "b", forUpdate: false) } == nil,
                "another tenant's key is not found"
            )

            try await store.write { try $0.keys.revoke(id: client.id, at: now.addingTimeInterval(5)) }
            try await store.write { try $0.keys.expire(id: narrow.id, at: now.addingTimeInterval(60)) }
            let revoked = try #require(try await store.read { try $0.keys.key(hash: "h-client") })
            #expect(revoked.revokedAt == now.addingTimeInterval(5) && !revoked.isActive(at: now.addingTimeInterval(6)))
            let expiring = try #require(try await store.read { try $0.keys.key(hash: "h-server") })
            #expect(expiring.isActive(at: now.addingTimeInterval(59)) && !expiring.isActive(at: now.addingTimeInterval(60)))

            try await store.write { try $0.keys.touch(id: narrow.id, at: now.addingTimeInterval(10), unlessUsedSince: now) }
            try await store.write { try $0.keys.touch(id: narrow.id, at: now.addingTimeInterval(20), unlessUsedSince: now.addingTimeInterval(5)) }
            #expect(
                try await store.read { try $0.keys.key(hash: "h-server") }?.lastUsedAt == now.addingTimeInterval(10),
                "a use already recorded since the interval began is not rewritten"
            )
        }
    }
}

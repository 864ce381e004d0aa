import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

/// The inventory as data on every backend.
extension StoreConformance {
    @Test(
        "inventory: the catalog seeds only what a tenant lacks; a change is stored whole and moves the tenant's version on; order of addition kept; tenants apart",
        arguments: StoreBackend.available
    )
    func inventory(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let now = Self.now
            let added = try await store.write { tx in try tx.inventory.seed(tenantId: "a", resources: [Self.rental, Self.experience], now: now) }
            #expect(added == 2)
            var edited = Self.rental
            edited.pricePerDayMinor = 7_000
            edited.retired = true
            let changed = edited
            let version = try await store.write { tx in try tx.inventory.save(tenantId: "a", resource: changed, now: now.addingTimeInterval(60)) }
            #expect(version == 2, "the seed was version 1")
            // Seeding again (the next start) adds nothing and leaves the operator's change.
            let again = try await store.write { tx in try tx.inventory.seed(tenantId: "a", resources: [Self.rental, Self.experience], now: now) }
            #expect(again == 0)
            var added2 = Self.rental
            added2.id = "boat-2"
            let newcomer = added2
            _ = try await store.write { tx in try tx.inventory.save(tenantId: "a", resource: newcomer, now: now.addingTimeInterval(120)) }
            let stored = try await store.read { tx in try tx.inventory.resources(tenantId: "a") }
            #expect(stored.map(\.resource.id) == ["boat", "tour", "boat-2"], "in the order they were added")
            #expect(stored.first?.resource == changed && stored.first?.version == 2)
            #expect(stored.map(\.version) == [2, 1, 3])
            let one = try await store.write { tx in try tx.inventory.resource(tenantId: "a", id: "tour", forUpdate: true) }
            #expect(one?.resource == Self.experience)
            let versions = try await store.read { tx in try tx.inventory.versions() }
            #expect(versions["a"] == 3 && versions["b"] == nil, "\(versions)")
            #expect(try await store.read { tx in try tx.inventory.resources(tenantId: "b") }.isEmpty)
        }
    }
}

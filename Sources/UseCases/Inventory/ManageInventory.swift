import Domain
import Foundation
import Logging

/// The tenant's inventory as data (issue "Run the season"): resources listed, added, changed and
/// retired through the admin API, checked as the catalog checks them, audited, in effect at once on
/// this instance and, through ``refresh()``, on every other one.
public struct ManageInventory: Sendable {
    let store: any Store
    let tenants: TenantRegistry
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, tenants: TenantRegistry, clock: any BerthClock, logger: Logger) {
        (self.store, self.tenants, self.clock, self.logger) = (store, tenants, clock, logger)
    }

    public func list(runtime: TenantRuntime) async throws -> [StoredResource] {
        let tenantId = runtime.id
        return try await store.read { try $0.inventory.resources(tenantId: tenantId) }
    }

    /// Adds `resource`; 409 `resource_exists` when the tenant has one with its id.
    public func create(runtime: TenantRuntime, resource: Resource, actor: Actor) async throws -> StoredResource {
        try await change(tenant: runtime.tenant, id: resource.id, actor: actor, creating: true) { _ in resource }
    }

    /// Writes `resource` as it is, new or changed (`berth inventory import`): checked and audited as
    /// the API's changes are.
    public func put(tenant: Tenant, resource: Resource, actor: Actor) async throws -> StoredResource {
        let exists = try await store.read { tx in try tx.inventory.resource(tenantId: tenant.id, id: resource.id, forUpdate: false) } != nil
        return try await change(tenant: tenant, id: resource.id, actor: actor, creating: !exists) { _ in resource }
    }

    /// Changes the resource `id` by `edit` (the stored resource in, the new one out; the id stays).
    public func update(
        runtime: TenantRuntime,
        id: String,
        actor: Actor,
        edit: @escaping @Sendable (Resource) throws -> Resource
    ) async throws
        -> StoredResource
    {
        try await change(tenant: runtime.tenant, id: id, actor: actor, creating: false, edit: edit)
    }

    /// Retires the resource `id`: its bookings stay, new ones are refused (`resource_retired`).
    public func retire(runtime: TenantRuntime, id: String, actor: Actor) async throws -> StoredResource {
        try await change(tenant: runtime.tenant, id: id, actor: actor, creating: false) { resource in
            var retired = resource
            retired.retired = true
            return retired
        }
    }

    private func change(
        tenant base: Tenant,
        id: String,
        actor: Actor,
        creating: Bool,
        edit: @escaping @Sendable (Resource) throws -> Resource
    ) async throws -> StoredResource {
        let tenantId = base.id
        let now = clock.now()
        let (saved, all) = try await store.write { tx -> (StoredResource, [StoredResource]) in
            let existing = try tx.inventory.resource(tenantId: tenantId, id: id, forUpdate: true)
            if creating, existing != nil {
                throw DomainError(
                    .conflict,
                    .resourceExists,
                    "this app already has a resource \(id); PATCH /api/admin/resources/\(id) changes it",
                    field: "id"
                )
            }
            guard creating || existing != nil else { throw DomainError(.notFound, .resourceNotFound, "no resource \(id)", field: "id") }
            var resource = try edit(existing?.resource ?? Resource(id: id, kind: .rental, name: id))
            guard resource.id == id else { throw DomainError.invalid("a resource's id cannot change; add a new resource", field: "id") }
            if resource.retired == false { resource.retired = nil }
            // Checked against the inventory as stored (what every instance will have), not this instance's copy.
            var tenant = base
            tenant.resources = try tx.inventory.resources(tenantId: tenantId).map(\.resource)
            do {
                _ = try tenant.with(resource: resource)
            } catch let error as CatalogError {
                throw DomainError(.unprocessable, .invalidField, error.description, field: "resource")
            }
            let action: AuditAction =
                creating ? .resourceCreated : (resource.retired == true && existing?.resource.retired != true ? .resourceRetired : .resourceUpdated)
            let version = try tx.inventory.save(tenantId: tenantId, resource: resource, now: now)
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: action,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: ["resourceId": id, "resource": (try? Self.text(resource)) ?? id, "version": String(version)],
                    at: now
                )
            )
            let all = try tx.inventory.resources(tenantId: tenantId)
            guard let saved = all.first(where: { $0.resource.id == id }) else { throw DomainError(.notFound, .resourceNotFound, "no resource \(id)") }
            return (saved, all)
        }
        // In effect here at once; the other instances read it within their refresh interval.
        tenants.replaceResources(tenantId: tenantId, resources: all.map { $0.resource }, version: all.map { $0.version }.max() ?? 0)
        logger.info("inventory changed", metadata: ["tenant": .string(tenantId), "resource": .string(id)])
        return saved
    }

    /// Reads the inventories that changed since this instance last read them (another instance's
    /// change, or the first read at start) and puts them in effect. Returns the tenants it changed.
    @discardableResult
    public func refresh() async throws -> [String] {
        let known = tenants.ordered.map(\.id)
        let versions = try await store.read { try $0.inventory.versions() }
        let stale = known.filter { (versions[$0] ?? 0) > tenants.inventoryVersion($0) }
        guard !stale.isEmpty else { return [] }
        let inventories = try await store.read { tx in
            try stale.map { ($0, try tx.inventory.resources(tenantId: $0)) }
        }
        var changed: [String] = []
        for (tenantId, stored) in inventories {
            let version = max(versions[tenantId] ?? 0, stored.map(\.version).max() ?? 0)
            if tenants.replaceResources(tenantId: tenantId, resources: stored.map(\.resource), version: version) { changed.append(tenantId) }
        }
        return changed
    }

    static func text(_ resource: Resource) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(resource), as: UTF8.self)
    }
}

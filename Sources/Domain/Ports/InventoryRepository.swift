import Foundation

/// A resource as the inventory keeps it: the resource (as products.json writes it) and when it last
/// changed. A retired resource stays (its bookings and reports name it) and takes no new bookings.
public struct StoredResource: Hashable, Sendable {
    public var resource: Resource
    /// The tenant's inventory version that last changed it.
    public var version: Int64
    public var createdAt: Date
    public var updatedAt: Date

    public init(resource: Resource, version: Int64, createdAt: Date, updatedAt: Date) {
        (self.resource, self.version, self.createdAt, self.updatedAt) = (resource, version, createdAt, updatedAt)
    }
}

/// Resources as data (issue "Run the season"): what each tenant rents and sells, changed while
/// Berth runs, on every instance. products.json's resources are the starting inventory.
public protocol InventoryRepository {
    /// The tenant's resources in the order they were added (retired ones included).
    func resources(tenantId: String) throws -> [StoredResource]
    /// One resource; `forUpdate` takes the tenant's inventory lock until the unit of work ends.
    func resource(tenantId: String, id: String, forUpdate: Bool) throws -> StoredResource?
    /// Every tenant's inventory version (a tenant with no inventory row is absent).
    func versions() throws -> [String: Int64]
    /// Adds the resources `tenantId` does not have yet (by id); leaves the others as they are.
    /// Returns how many were added.
    func seed(tenantId: String, resources: [Resource], now: Date) throws -> Int
    /// Writes `resource` (new or changed) and moves the tenant's version on; returns the new version.
    func save(tenantId: String, resource: Resource, now: Date) throws -> Int64
}

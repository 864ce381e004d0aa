import Foundation

/// A resource, or every resource of a tenant, closed for a time (a storm, the harbour master,
/// maintenance): no new booking inside it; the bookings already inside are the operator's to resolve.
public struct Closure: Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    /// Nil: every resource of the tenant.
    public var resourceId: String?
    public var start: Date
    public var end: Date
    public var reason: String
    public var createdBy: String
    public var createdAt: Date
    /// When it was deleted (the dates reopened); nil while in force.
    public var deletedAt: Date?

    public init(
        id: Int64,
        tenantId: String,
        resourceId: String?,
        start: Date,
        end: Date,
        reason: String,
        createdBy: String,
        createdAt: Date,
        deletedAt: Date? = nil
    ) {
        (self.id, self.tenantId, self.resourceId, self.start, self.end, self.reason, self.createdBy, self.createdAt, self.deletedAt) =
            (id, tenantId, resourceId, start, end, reason, createdBy, createdAt, deletedAt)
    }

    /// Whether it closes `resourceId` anywhere in [start, end).
    public func closes(_ resourceId: String, from start: Date, to end: Date) -> Bool {
        deletedAt == nil && (self.resourceId == nil || self.resourceId == resourceId) && self.start < end && self.end > start
    }

    /// The refusal of a booking inside it.
    public func refusal(resourceName: String, zone: TimeZone) -> DomainError {
        DomainError(
            .conflict,
            .resourceClosed,
            "\(resourceName) is closed from \(ZonedTime.format(start, in: zone)) to \(ZonedTime.format(end, in: zone)): \(reason)",
            field: "resourceId"
        )
    }
}

/// Closures, per tenant.
public protocol ClosureRepository {
    func insert(_ closure: Closure) throws
    func closure(tenantId: String, id: Int64) throws -> Closure?
    /// The tenant's closures in force (and deleted ones with `includingDeleted`), soonest first.
    func closures(tenantId: String, includingDeleted: Bool) throws -> [Closure]
    /// The closures in force that close `resourceId` somewhere in [start, end).
    func closing(tenantId: String, resourceId: String, start: Date, end: Date) throws -> [Closure]
    func delete(tenantId: String, id: Int64, at: Date) throws
}

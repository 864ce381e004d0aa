import Domain
import Foundation

extension BookingRepository {
    /// The resource's admission turn, then what the others hold of the span: the two calls every
    /// shipped unit of work that admits makes, in that order.
    func admittedOccupancy(tenantId: String, resourceId: String, start: Date, end: Date, excluding: Int64?, now: Date) throws -> Occupancy {
        try admit(tenantId: tenantId, resourceId: resourceId, now: now)
        return try occupancy(tenantId: tenantId, resourceId: resourceId, start: start, end: end, excluding: excluding)
    }
}

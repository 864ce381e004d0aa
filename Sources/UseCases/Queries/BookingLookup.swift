import Domain
import Foundation

/// A booking named by its reference (`K7MX2QA`), as operators and customers quote it: its id within
/// the tenant.
public struct BookingLookup: Sendable {
    let store: any Store

    public init(store: any Store) { self.store = store }

    /// The id of the tenant's booking with this reference (`BookingReference.normalized`), if any.
    public func id(reference: String, tenantId: String) async throws -> Int64? {
        try await store.read { try $0.bookings.booking(reference: reference, tenantId: tenantId)?.id }
    }
}

import Domain
import Foundation

/// `POST /api/admin/bookings/{id}/confirm|cancel`: an administrator's move of a booking.
public struct AdminBookingTransition: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    public func callAsFunction(_ id: Int64, to status: BookingStatus, runtime: TenantRuntime, actor: Actor, reason: String?) async throws -> Booking {
        let now = clock.now()
        let tenant = runtime.tenant
        let emitsEvents = runtime.webhook != nil
        return try await store.write { tx in
            guard let booking = try tx.bookings.booking(id: id, tenantId: tenant.id, forUpdate: true) else { throw DomainError.bookingNotFound(id) }
            var occupancy = Occupancy.none
            if BookingTransitions.needsOccupancy(to: status) {
                occupancy = try tx.bookings.admit(booking, now: now)
            }
            let transition = try BookingTransitions.admin(
                booking,
                to: status,
                actor: actor,
                reason: reason,
                resource: tenant.resource(id: booking.resourceId),
                occupancy: occupancy,
                now: now
            )
            try tx.bookings.update(transition.booking, now: now)
            try tx.audit.append(transition.audit)
            if emitsEvents { try tx.outbox.enqueue(transition.events, tenantId: tenant.id, now: now) }
            return transition.booking
        }
    }
}

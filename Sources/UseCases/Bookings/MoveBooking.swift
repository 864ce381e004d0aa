import Domain
import Foundation

/// `POST /api/bookings/{id}/move` (the customer, or a server key for them) and the operator's move
/// of any booking (`POST /api/admin/bookings/{id}/move`, closures' resolve by move): one unit of work
/// takes the new place and gives back the old one, so two customers racing for the last seat are
/// decided once (the slot's admissions take turns, as new bookings do).
public struct MoveBooking: Sendable {
    public struct Command: Sendable {
        public var runtime: TenantRuntime
        public var bookingId: Int64
        /// The customer whose booking it must be; nil: an operator's move.
        public var userId: String?
        public var actor: Actor
        public var start: BookingTime?
        public var end: BookingTime?
        public var slot: BookingTime?
        /// Operators only: another resource sold by the same product.
        public var resourceId: String?

        public init(
            runtime: TenantRuntime,
            bookingId: Int64,
            userId: String?,
            actor: Actor,
            start: BookingTime? = nil,
            end: BookingTime? = nil,
            slot: BookingTime? = nil,
            resourceId: String? = nil
        ) {
            (self.runtime, self.bookingId, self.userId, self.actor) = (runtime, bookingId, userId, actor)
            (self.start, self.end, self.slot, self.resourceId) = (start, end, slot, resourceId)
        }
    }

    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        (self.store, self.clock) = (store, clock)
    }

    public func callAsFunction(_ command: Command) async throws -> Booking {
        let tenant = command.runtime.tenant, tenantId = tenant.id, now = clock.now()
        let emitsEvents = command.runtime.webhook != nil
        if command.userId != nil, command.resourceId != nil {
            throw DomainError(.forbidden, .forbidden, "only an operator moves a booking to another resource", field: "resourceId")
        }
        let current = try await store.read { tx in try tx.bookings.booking(id: command.bookingId, tenantId: tenantId, forUpdate: false) }
        guard let current, command.userId == nil || current.userId == command.userId else { throw DomainError.bookingNotFound(command.bookingId) }
        let quote = try tenant.quote(
            BookingRequest(
                resourceId: command.resourceId ?? current.resourceId,
                start: command.start,
                end: command.end,
                slot: command.slot,
                seats: current.resourceKind == .experience ? current.seats : nil
            ),
            now: now
        )
        let policy = tenant.cancellationPolicy(resourceId: current.resourceId)
        return try await store.write { tx in
            guard let booking = try tx.bookings.booking(id: command.bookingId, tenantId: tenantId, forUpdate: true) else {
                throw DomainError.bookingNotFound(command.bookingId)
            }
            let moved = try BookingMove.moved(booking, to: quote, policy: policy, byOperator: command.userId == nil, now: now)
            if moved == booking { return booking }
            if let closure = try tx.closures.closing(tenantId: tenantId, resourceId: quote.resource.id, start: quote.start, end: quote.end).first {
                throw closure.refusal(resourceName: quote.resource.name, zone: tenant.slotTimeZone(quote.resource))
            }
            // The slots' admissions take turns (both resources', in one order: no two moves wait on each other).
            let resources = Set([booking.resourceId, quote.resource.id]).sorted()
            var occupancy = Occupancy.none
            for resourceId in resources {
                let counted = try tx.bookings.occupancy(
                    tenantId: tenantId,
                    resourceId: resourceId,
                    start: quote.start,
                    end: quote.end,
                    excluding: booking.id,
                    now: now
                )
                if resourceId == quote.resource.id { occupancy = counted }
            }
            guard Capacity.fits(quote.resource, seats: booking.seats, occupancy: occupancy) else {
                throw DomainError(.conflict, .slotTaken, "\(quote.resource.name) is full then; pick another time")
            }
            try tx.bookings.move(booking, to: moved, now: now)
            let (audit, event) = BookingMove.recorded(booking, moved: moved, actor: command.actor, now: now)
            try tx.audit.append(audit)
            if emitsEvents { try tx.outbox.enqueue([event], tenantId: tenantId, now: now) }
            return moved
        }
    }
}

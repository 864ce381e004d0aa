import Domain
import Foundation

/// `POST /api/bookings`: price a request from the catalog and hold its slot, if it fits.
public struct CreateBooking: Sendable {
    public struct Command: Sendable {
        public var runtime: TenantRuntime
        public var userId: String
        /// `user:<id>` or `server:<key id>`: whose holds it counts against.
        public var createdVia: Actor
        public var request: BookingRequest

        public init(runtime: TenantRuntime, userId: String, createdVia: Actor, request: BookingRequest) {
            self.runtime = runtime
            self.userId = userId
            self.createdVia = createdVia
            self.request = request
        }
    }

    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    public func callAsFunction(_ command: Command) async throws -> Booking {
        let tenant = command.runtime.tenant
        let now = clock.now()
        let quote = try tenant.quote(command.request, now: now)
        let draft = NewBooking(
            tenantId: tenant.id,
            userId: command.userId,
            quote: quote,
            holdExpiresAt: now.addingTimeInterval(tenant.holdDuration),
            now: now,
            createdVia: command.createdVia.rawValue
        )
        let limits = tenant.holdLimits
        let viaKey = command.createdVia.isKey
        return try await store.write { tx in try Self.admit(draft, quote: quote, limits: limits, viaKey: viaKey, tx: tx, now: now) }
    }

    /// The unit of work of an admission: count what the slot and the holders already hold (locked),
    /// admit or refuse by ``BookingAdmission``, insert the booking with its audit entry.
    public static func admit(
        _ draft: NewBooking,
        quote: BookingQuote,
        limits: HoldLimits,
        viaKey: Bool,
        tx: any StoreSession,
        now: Date
    ) throws -> Booking {
        let occupancy = try tx.bookings.occupancy(
            tenantId: draft.tenantId,
            resourceId: quote.resource.id,
            start: quote.start,
            end: quote.end,
            excluding: nil,
            now: now
        )
        let userHolds = try tx.bookings.activeHolds(tenantId: draft.tenantId, userId: draft.userId, now: now, upTo: limits.perUser)
        // Per resource and slot window (T4): holds on other days or hours do not block this one.
        let resourceHolds = try tx.bookings.activeHolds(
            tenantId: draft.tenantId,
            resourceId: quote.resource.id,
            start: quote.start,
            end: quote.end,
            now: now,
            upTo: limits.perResource
        )
        let creatorHolds =
            viaKey
            ? try tx.bookings.activeHolds(tenantId: draft.tenantId, createdVia: draft.createdVia, now: now, upTo: limits.perServerKey)
            : 0
        try BookingAdmission.check(
            BookingLoad(occupancy: occupancy, userHolds: userHolds, creatorHolds: creatorHolds, resourceHolds: resourceHolds),
            resource: quote.resource,
            seats: quote.seats,
            limits: limits,
            viaKey: viaKey
        )
        let (booking, audit) = BookingTransitions.created(draft, reference: try tx.bookings.unusedReference(tenantId: draft.tenantId))
        try tx.bookings.insert(booking, createdVia: draft.createdVia, now: now)
        try tx.audit.append(audit)
        if resourceHolds + 1 == limits.resourceAlertThreshold {
            // Operators see a slot filling with unpaid holds before customers are refused.
            try tx.audit.append(
                AuditRecord(
                    tenantId: draft.tenantId,
                    actor: .system,
                    action: .bookingHoldsHigh,
                    bookingId: booking.id,
                    purchaseId: nil,
                    detail: [
                        "resourceId": quote.resource.id, "holds": String(resourceHolds + 1), "cap": String(limits.perResource),
                        "start": String(quote.start.epochMilliseconds), "end": String(quote.end.epochMilliseconds),
                    ],
                    at: now
                )
            )
        }
        return booking
    }
}

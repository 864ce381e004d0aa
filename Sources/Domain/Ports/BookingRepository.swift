import Foundation

/// Bookings and the occupancy of resources.
public protocol BookingRepository {
    /// A tenant's booking, locked for the rest of the unit of work when `forUpdate`.
    func booking(id: Int64, tenantId: String, forUpdate: Bool) throws -> Booking?
    /// A tenant's booking by its reference (`BookingReference.normalized`).
    func booking(reference: String, tenantId: String) throws -> Booking?
    /// Whether a booking of the tenant already has `reference`.
    func referenceTaken(_ reference: String, tenantId: String) throws -> Bool
    /// Inserts a new booking (its occupancy counted when it holds its slot at `now`).
    func insert(_ booking: Booking, createdVia: String, now: Date) throws
    /// Writes a booking's new state (its occupancy follows: counted while it holds its slot at `now`).
    func update(_ booking: Booking, now: Date) throws
    /// Moves `booking` (as stored) to `moved`'s resource, start, end, price and product: its share of
    /// the old slot is given back and taken in the new one, in the caller's unit of work (which has
    /// admitted to the new slot first: ``admit(tenantId:resourceId:start:end:excluding:now:)``).
    func move(_ booking: Booking, to moved: Booking, now: Date) throws
    /// The end of a paid hold for the difference of a move (``Booking/changeOf``): its purchases and
    /// card payments pass to `original`, its share of its slot is given back and its row removed, and
    /// `original` becomes `moved` (at the hold's place), in the caller's unit of work.
    func absorb(_ hold: Booking, into original: Booking, moved: Booking, now: Date) throws
    /// The newest hold for the difference of a move of `bookingId` still waiting for payment.
    func changeHold(of bookingId: Int64, tenantId: String, now: Date) throws -> Booking?
    /// Admission to a slot, the one way a unit of work learns what a slot holds: takes the resource's
    /// admission turn, held until the unit of work ends (admissions to one resource take turns, so
    /// several instances never overbook it), releases the resource's holds that expired by `now`
    /// (each once), then answers what bookings other than `excluding` hold of a slot of the resource
    /// overlapping [start, end). A write (only in ``Store/write(_:)``). Costs the number of distinct
    /// overlapping slots, not the number of bookings.
    func admit(tenantId: String, resourceId: String, start: Date, end: Date, excluding: Int64?, now: Date) throws -> Occupancy
    /// The admission turn (and the release of expired holds) of a resource whose occupancy the unit
    /// of work does not read: a move takes both resources' turns, in one order.
    func takeTurn(tenantId: String, resourceId: String, now: Date) throws
    /// Unpaid bookings still holding their slot at `now`, of a user or of everything a creator
    /// created, counted up to `limit` (the answer is min(holds, limit): the cost stays bounded).
    func activeHolds(tenantId: String, userId: String, now: Date, upTo limit: Int) throws -> Int
    func activeHolds(tenantId: String, createdVia: String, now: Date, upTo limit: Int) throws -> Int
    /// Unpaid holds on `resourceId` whose slot overlaps [`start`, `end`): the inventory a new
    /// booking of that window competes for (holds on other days do not block it).
    func activeHolds(tenantId: String, resourceId: String, start: Date, end: Date, now: Date, upTo limit: Int) throws -> Int

    func bookings(tenantId: String, filter: BookingFilter, page: Page) throws -> (items: [Booking], total: Int)
    /// Bookings matching `filter`, oldest first, at most `limit` (the CSV export).
    func exportBookings(tenantId: String, filter: BookingFilter, limit: Int) throws -> [Booking]
}

extension BookingRepository {
    /// A random reference no booking of the tenant has yet (BookingReference: a clash is rare, so
    /// this asks once or twice).
    public func unusedReference(tenantId: String) throws -> String {
        var reference = BookingReference.random()
        while try referenceTaken(reference, tenantId: tenantId) { reference = BookingReference.random() }
        return reference
    }
}

extension BookingRepository {
    /// Admission to `booking`'s own slot: what the other bookings hold of it (the turn taken and
    /// expired holds released first, as ``admit(tenantId:resourceId:start:end:excluding:now:)``).
    public func admit(_ booking: Booking, now: Date) throws -> Occupancy {
        try admit(tenantId: booking.tenantId, resourceId: booking.resourceId, start: booking.start, end: booking.end, excluding: booking.id, now: now)
    }
}

/// What a new booking competes with when it asks for its slot, read in the inserting transaction.
public struct BookingLoad: Hashable, Sendable {
    /// What other bookings hold of an overlapping slot.
    public var occupancy: Occupancy
    /// The user's bookings still holding a slot unpaid (`pending_payment` within their hold).
    public var userHolds: Int
    /// The same, of everything the creating API key created (0 for a user's own token).
    public var creatorHolds: Int
    /// The same, on the resource asked for and overlapping the slot asked for, whoever holds them.
    public var resourceHolds: Int

    public init(occupancy: Occupancy, userHolds: Int, creatorHolds: Int, resourceHolds: Int = 0) {
        self.occupancy = occupancy
        self.userHolds = userHolds
        self.creatorHolds = creatorHolds
        self.resourceHolds = resourceHolds
    }
}

/// Caps on unpaid holds, so that nobody can keep a resource's inventory held without paying.
public struct HoldLimits: Hashable, Sendable {
    public static let defaultPerUser = 3
    /// A ceiling for one API key over all the users it names, far above normal traffic.
    public static let defaultPerServerKey = 5_000
    public static let defaultPerResource = 100

    public var perUser: Int
    public var perServerKey: Int
    /// Unpaid holds at once on one resource's overlapping slot window, whoever holds them.
    public var perResource: Int

    /// Holds on one slot window at which operators are told (an audit entry `booking.holds_high`):
    /// four fifths of the cap.
    public var resourceAlertThreshold: Int { max(1, perResource * 4 / 5) }

    public init(perUser: Int = defaultPerUser, perServerKey: Int = defaultPerServerKey, perResource: Int = defaultPerResource) {
        self.perUser = perUser
        self.perServerKey = perServerKey
        self.perResource = perResource
    }
}

public enum BookingAdmission {
    /// Whether a booking of `seats` on `resource` may take its slot now.
    public static func check(_ load: BookingLoad, resource: Resource, seats: Int, limits: HoldLimits, viaKey: Bool) throws(DomainError) {
        guard load.userHolds < limits.perUser else {
            throw DomainError(
                .conflict,
                .tooManyPendingBookings,
                "this user already holds \(load.userHolds) unpaid booking(s), the most this app allows; pay or let one expire first"
            )
        }
        guard load.resourceHolds < limits.perResource else {
            throw DomainError(
                .conflict,
                .tooManyPendingBookings,
                "\(resource.name) already has \(load.resourceHolds) unpaid bookings waiting for payment at that time, the most this app allows; try again in a few minutes",
                field: "resourceId"
            )
        }
        if viaKey, load.creatorHolds >= limits.perServerKey {
            throw DomainError(
                .conflict,
                .tooManyPendingBookings,
                "this API key already holds \(load.creatorHolds) unpaid bookings, the most this app allows"
            )
        }
        guard Capacity.fits(resource, seats: seats, occupancy: load.occupancy) else {
            throw DomainError(.conflict, .slotTaken, "\(resource.name) is not available for that time", field: "resourceId")
        }
    }
}

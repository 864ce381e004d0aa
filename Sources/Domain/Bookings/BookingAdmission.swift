/// What a new booking competes with when it asks for its slot, read in the inserting transaction.
public struct BookingLoad: Hashable, Sendable {
    /// What other bookings hold of an overlapping slot.
    public var occupancy: Occupancy
    /// The user's bookings still holding a slot unpaid (`pending_payment` within their hold).
    public var userHolds: Int
    /// The same, of everything the creating server key created (0 for a user's own token).
    public var creatorHolds: Int

    public init(occupancy: Occupancy, userHolds: Int, creatorHolds: Int) {
        self.occupancy = occupancy
        self.userHolds = userHolds
        self.creatorHolds = creatorHolds
    }
}

/// Caps on unpaid holds, so that nobody can keep a resource's inventory held without paying.
public struct HoldLimits: Hashable, Sendable {
    public static let defaultPerUser = 3
    public static let defaultPerServerKey = 500

    public var perUser: Int
    public var perServerKey: Int

    public init(perUser: Int = defaultPerUser, perServerKey: Int = defaultPerServerKey) {
        self.perUser = perUser
        self.perServerKey = perServerKey
    }
}

public enum BookingAdmission {
    /// Whether a booking of `seats` on `resource` may take its slot now.
    public static func check(_ load: BookingLoad, resource: Resource, seats: Int, limits: HoldLimits, viaServerKey: Bool) throws(DomainError) {
        guard load.userHolds < limits.perUser else {
            throw DomainError(.conflict, .tooManyPendingBookings, "this user already holds \(load.userHolds) unpaid booking(s), the most this app allows; pay or let one expire first")
        }
        if viaServerKey, load.creatorHolds >= limits.perServerKey {
            throw DomainError(.conflict, .tooManyPendingBookings, "this server key already holds \(load.creatorHolds) unpaid bookings, the most this app allows")
        }
        guard Capacity.fits(resource, seats: seats, occupancy: load.occupancy) else {
            throw DomainError(.conflict, .slotUnavailable, "\(resource.name) is not available for that time", field: "resourceId")
        }
    }
}

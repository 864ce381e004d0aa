import Domain
import Foundation

/// Closures (issue "Run the season"): a resource, or every resource, closed for a time. Made and
/// deleted by operators (audited); no booking is admitted inside one; what is already inside is
/// listed for the operator to resolve.
public struct ManageClosures: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        (self.store, self.clock) = (store, clock)
    }

    public struct Made: Sendable {
        public var closure: Closure
        /// The confirmed bookings and the pending ones still in their hold that the closure covers.
        public var bookingsInside: [Booking]

        public init(closure: Closure, bookingsInside: [Booking]) {
            (self.closure, self.bookingsInside) = (closure, bookingsInside)
        }
    }

    /// The longest closure (a season's).
    public static let longest: TimeInterval = 366 * 86_400

    public func create(runtime: TenantRuntime, resourceId: String?, start: Date, end: Date, reason: String, actor: Actor) async throws -> Made {
        let tenant = runtime.tenant
        if let resourceId, tenant.resource(id: resourceId) == nil {
            throw DomainError(.notFound, .resourceNotFound, "no resource \(resourceId)", field: "resourceId")
        }
        guard end > start else { throw DomainError.invalid("the closure ends before it starts (to must be after from)", field: "to") }
        guard end.timeIntervalSince(start) <= Self.longest else { throw DomainError.invalid("a closure lasts at most 366 days", field: "to") }
        let text = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, Text.length(text) <= 500 else {
            throw DomainError.invalid("reason: 1 to 500 characters, said to customers", field: "reason")
        }
        let now = clock.now()
        let closure = Closure(
            id: RecordID.next(),
            tenantId: tenant.id,
            resourceId: resourceId,
            start: start,
            end: end,
            reason: text,
            createdBy: actor.rawValue,
            createdAt: now
        )
        let inside = try await store.write { tx in
            try tx.closures.insert(closure)
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenant.id,
                    actor: actor,
                    action: .closureCreated,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: [
                        "closureId": String(closure.id), "resourceId": resourceId ?? "*", "from": ZonedTime.format(start, in: tenant.zone),
                        "to": ZonedTime.format(end, in: tenant.zone), "reason": text,
                    ],
                    at: now
                )
            )
            return try Self.inside(closure, tx: tx, now: now)
        }
        return Made(closure: closure, bookingsInside: inside)
    }

    public func list(runtime: TenantRuntime, includingDeleted: Bool) async throws -> [Made] {
        let tenantId = runtime.id
        let now = clock.now()
        return try await store.read { tx in
            try tx.closures.closures(tenantId: tenantId, includingDeleted: includingDeleted).map {
                Made(closure: $0, bookingsInside: $0.deletedAt == nil ? try Self.inside($0, tx: tx, now: now) : [])
            }
        }
    }

    /// Deletes (reopens) a closure; 404 `closure_not_found` for one the app does not have or deleted.
    public func delete(runtime: TenantRuntime, id: Int64, actor: Actor) async throws {
        let tenantId = runtime.id
        let now = clock.now()
        try await store.write { tx in
            guard let closure = try tx.closures.closure(tenantId: tenantId, id: id), closure.deletedAt == nil else {
                throw DomainError(.notFound, .closureNotFound, "no closure \(id)", field: "id")
            }
            try tx.closures.delete(tenantId: tenantId, id: id, at: now)
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: .closureDeleted,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: ["closureId": String(id), "resourceId": closure.resourceId ?? "*", "reason": closure.reason],
                    at: now
                )
            )
        }
    }

    /// What resolving a closure did to one booking inside it.
    public struct Resolved: Sendable {
        public enum Outcome: String, Sendable {
            /// Paid by card: refunded in full (through Stripe, exactly once: the refund's key is fixed), its slot freed.
            case refunded
            /// Paid through the App Store or Google Play (in full or in part): cancelled, and owed to the
            /// customer until the store refunds it or the operator records what they were told.
            case cancelledOwed = "cancelled_owed"
            /// Nothing was paid: cancelled, its hold released.
            case cancelled
            /// Moved to the place the operator named (the customer accepted it).
            case moved
            /// Left as it was: the message says why (a refund still in progress, another change first).
            case failed
        }
        public var booking: Booking
        public var outcome: Outcome
        public var message: String?
    }

    /// Cancels every booking inside the closure in one action: card-paid ones refunded in full,
    /// store-paid ones cancelled and owed (``OwedToCustomers``), unpaid ones cancelled. Each booking
    /// is its own unit of work; running it again after a failure finishes what is left.
    public func cancelInside(
        runtime: TenantRuntime,
        id: Int64,
        actor: Actor,
        refund: RefundCardBooking?,
        cancel: AdminBookingTransition
    ) async throws -> (Closure, [Resolved]) {
        let tenantId = runtime.id
        let now = clock.now()
        let (closure, bookings) = try await store.read { tx -> (Closure, [Booking]) in
            guard let closure = try tx.closures.closure(tenantId: tenantId, id: id), closure.deletedAt == nil else {
                throw DomainError(.notFound, .closureNotFound, "no closure \(id)", field: "id")
            }
            return (closure, try Self.inside(closure, tx: tx, now: now))
        }
        let reason = "closure: \(closure.reason)"
        let paid = try await store.read { tx in try tx.operatorViews.bookingPayments(tenantId: tenantId, bookingIds: bookings.map(\.id)) }
        var results: [Resolved] = []
        for booking in bookings {
            let rails = paid[booking.id]?.rails ?? []
            do {
                if rails.contains(.card), let refund {
                    // Every card payment of it in full (a dearer move's difference is a payment of its own).
                    let done = try await refund.all(runtime: runtime, bookingId: booking.id, reason: reason, actor: actor)
                    results.append(Resolved(booking: done.last?.booking ?? booking, outcome: .refunded))
                } else {
                    let cancelled = try await cancel(booking.id, to: .cancelled, runtime: runtime, actor: actor, reason: reason)
                    results.append(Resolved(booking: cancelled, outcome: rails.isEmpty ? .cancelled : .cancelledOwed))
                }
            } catch let error as DomainError {
                results.append(Resolved(booking: booking, outcome: .failed, message: "\(error.code.rawValue): \(error.message)"))
            }
        }
        return (closure, results)
    }

    /// Where an operator moves one booking inside a closure (a place its customer accepted).
    public struct Relocation: Sendable {
        public var bookingId: Int64
        public var start: BookingTime?
        public var end: BookingTime?
        public var slot: BookingTime?
        public var resourceId: String?

        public init(bookingId: Int64, start: BookingTime?, end: BookingTime?, slot: BookingTime?, resourceId: String?) {
            (self.bookingId, self.start, self.end, self.slot, self.resourceId) = (bookingId, start, end, slot, resourceId)
        }
    }

    /// Moves the named bookings inside the closure, each in its own unit of work (``MoveBooking``):
    /// a booking the closure does not cover is refused, a place that is full or closed too fails
    /// that booking alone and says why.
    public func moveInside(
        runtime: TenantRuntime,
        id: Int64,
        actor: Actor,
        moves: [Relocation],
        move: MoveBooking
    ) async throws -> (Closure, [Resolved]) {
        let tenantId = runtime.id
        let now = clock.now()
        let (closure, bookings) = try await store.read { tx -> (Closure, [Booking]) in
            guard let closure = try tx.closures.closure(tenantId: tenantId, id: id), closure.deletedAt == nil else {
                throw DomainError(.notFound, .closureNotFound, "no closure \(id)", field: "id")
            }
            return (closure, try Self.inside(closure, tx: tx, now: now))
        }
        let byId = Dictionary(bookings.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for relocation in moves where byId[relocation.bookingId] == nil {
            throw DomainError(.invalidInput, .invalidField, "booking \(relocation.bookingId) is not inside this closure", field: "moves")
        }
        var results: [Resolved] = []
        for relocation in moves {
            guard let booking = byId[relocation.bookingId] else { continue }
            do {
                let moved = try await move(
                    .init(
                        runtime: runtime,
                        bookingId: booking.id,
                        userId: nil,
                        actor: actor,
                        start: relocation.start,
                        end: relocation.end,
                        slot: relocation.slot,
                        resourceId: relocation.resourceId
                    )
                )
                results.append(Resolved(booking: moved.booking, outcome: .moved))
            } catch let error as DomainError {
                results.append(Resolved(booking: booking, outcome: .failed, message: "\(error.code.rawValue): \(error.message)"))
            }
        }
        return (closure, results)
    }

    static func inside(_ closure: Closure, tx: any StoreSession, now: Date) throws -> [Booking] {
        try tx.operatorViews.bookingsOverlapping(tenantId: closure.tenantId, from: closure.start, to: closure.end, resourceId: closure.resourceId)
            .filter { $0.status == .confirmed || ($0.status == .pendingPayment && $0.holdExpiresAt > now) }
    }
}

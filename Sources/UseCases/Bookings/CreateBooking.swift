import Crypto
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
        /// The caller's `Idempotency-Key`: a second request with the same key (and the same user)
        /// answers the booking the first one made instead of holding a second slot.
        public var idempotencyKey: String?

        public init(runtime: TenantRuntime, userId: String, createdVia: Actor, request: BookingRequest, idempotencyKey: String? = nil) {
            self.runtime = runtime
            self.userId = userId
            self.createdVia = createdVia
            self.request = request
            self.idempotencyKey = idempotencyKey
        }
    }

    /// A booking, and whether an earlier request with the same `Idempotency-Key` made it.
    public struct Created: Sendable {
        public var booking: Booking
        public var repeated: Bool
    }

    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    public func callAsFunction(_ command: Command) async throws -> Booking {
        try await create(command).booking
    }

    /// Creates the booking, or with an `Idempotency-Key` a request already made answers its booking:
    /// the key names the booking's id (a hash of tenant, user and key), so two requests racing with
    /// one key meet on the id's uniqueness and the second reads the first's booking. The same key
    /// for another resource, time or seat count is refused (409 `reference_in_use`).
    public func create(_ command: Command) async throws -> Created {
        let tenant = command.runtime.tenant
        let now = clock.now()
        let quote = try tenant.quote(command.request, now: now)
        let userId = command.userId
        guard let key = command.idempotencyKey else {
            return Created(booking: try await admit(command, quote: quote, id: nil, now: now), repeated: false)
        }
        let id = Self.bookingId(tenantId: tenant.id, userId: userId, idempotencyKey: key)
        let tenantId = tenant.id
        func earlier() async throws -> Booking? {
            guard let found = try await store.read({ tx in try tx.bookings.booking(id: id, tenantId: tenantId, forUpdate: false) }) else {
                return nil
            }
            guard found.userId == userId, found.resourceId == quote.resource.id, found.start == quote.start, found.end == quote.end,
                found.seats == quote.seats
            else {
                throw DomainError(
                    .conflict,
                    .referenceInUse,
                    "this Idempotency-Key already made another booking; use a new key for a new booking",
                    field: "Idempotency-Key"
                )
            }
            return found
        }
        if let found = try await earlier() { return Created(booking: found, repeated: true) }
        do {
            return Created(booking: try await admit(command, quote: quote, id: id, now: now), repeated: false)
        } catch {
            // The same key's other request won the race for the id.
            if let found = try await earlier() { return Created(booking: found, repeated: true) }
            throw error
        }
    }

    /// The id a booking made with `idempotencyKey` gets: the first 53 bits of SHA-256 over the tenant,
    /// user and key (never 0), the range of ``RecordID``.
    static func bookingId(tenantId: String, userId: String, idempotencyKey: String) -> Int64 {
        let digest = SHA256.hash(data: Data("booking\u{0}\(tenantId)\u{0}\(userId)\u{0}\(idempotencyKey)".utf8))
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        let id = Int64(value >> 11)
        return id == 0 ? 1 : id
    }

    private func admit(_ command: Command, quote: BookingQuote, id: Int64?, now: Date) async throws -> Booking {
        let tenant = command.runtime.tenant
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
        return try await store.write { tx in try Self.admit(draft, quote: quote, limits: limits, viaKey: viaKey, id: id, tx: tx, now: now) }
    }

    /// The unit of work of an admission: count what the slot and the holders already hold (locked),
    /// admit or refuse by ``BookingAdmission``, insert the booking with its audit entry.
    public static func admit(
        _ draft: NewBooking,
        quote: BookingQuote,
        limits: HoldLimits,
        viaKey: Bool,
        id: Int64? = nil,
        tx: any StoreSession,
        now: Date
    ) throws -> Booking {
        // A closure (a storm, maintenance) admits nothing inside it; read in the unit of work, so a
        // closure made a moment ago is never missed.
        if let closure = try tx.closures.closing(tenantId: draft.tenantId, resourceId: quote.resource.id, start: quote.start, end: quote.end).first {
            throw closure.refusal(resourceName: quote.resource.name, zone: quote.timeZone.flatMap(TimeZone.init(identifier:)) ?? ZonedTime.utc)
        }
        let occupancy = try tx.bookings.admit(
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
        let (booking, audit) = BookingTransitions.created(draft, reference: try tx.bookings.unusedReference(tenantId: draft.tenantId), id: id)
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

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
    /// Refunds a cheaper move's difference by card when the policy says so (nil: never).
    let refund: RefundCardBooking?

    public init(store: any Store, clock: any BerthClock, refund: RefundCardBooking? = nil) {
        (self.store, self.clock, self.refund) = (store, clock, refund)
    }

    /// What a move did: the booking (moved, or as it was while a dearer move waits), and the hold for
    /// the difference when the new place costs more than was paid.
    public struct Moved: Sendable {
        public var booking: Booking
        public var difference: Booking?
        /// What a cheaper move gave back by card (the policy's `refundPriceDifference`), in minor units.
        public var refundedMinor: Int64 = 0
    }

    public func callAsFunction(_ command: Command) async throws -> Moved {
        let tenant = command.runtime.tenant, tenantId = tenant.id, now = clock.now()
        let emitsEvents = command.runtime.webhook != nil
        if command.userId != nil, command.resourceId != nil {
            throw DomainError(.forbidden, .forbidden, "only an operator moves a booking to another resource", field: "resourceId")
        }
        let current = try await store.read { tx in try tx.bookings.booking(id: command.bookingId, tenantId: tenantId, forUpdate: false) }
        guard let current, command.userId == nil || current.userId == command.userId else { throw DomainError.bookingNotFound(command.bookingId) }
        if current.changeOf != nil {
            throw DomainError(.conflict, .invalidTransition, "this booking pays the difference of a move; move the booking it changes instead")
        }
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
        // A dearer place waits for the difference when a rail can take that amount: the card, or for
        // a rental the App Store or Google Play product of the band that covers it.
        let rules = tenant.bookingRules
        let hasCard = command.runtime.stripe != nil, isRental = quote.resource.kind == .rental
        let holdDuration = tenant.holdDuration, createdVia = command.actor.rawValue
        let refundsByCard = refund != nil && command.runtime.stripe != nil
        let result = try await store.write { tx -> Moved in
            guard let booking = try tx.bookings.booking(id: command.bookingId, tenantId: tenantId, forUpdate: true) else {
                throw DomainError.bookingNotFound(command.bookingId)
            }
            if let closure = try tx.closures.closing(tenantId: tenantId, resourceId: quote.resource.id, start: quote.start, end: quote.end).first {
                throw closure.refusal(resourceName: quote.resource.name, zone: tenant.slotTimeZone(quote.resource))
            }
            var dearer = false
            let moved: Booking
            do {
                moved = try BookingMove.moved(booking, to: quote, policy: policy, byOperator: command.userId == nil, now: now)
            } catch let error as DomainError
                where error.code == .moveCostsMore
                && (hasCard || (isRental && rules?.rentalProduct(priceMinor: quote.priceMinor - booking.priceMinor) != nil))
            {
                dearer = true
                moved = booking
            }
            if !dearer, moved == booking { return Moved(booking: booking, difference: nil) }
            if dearer, let waiting = try tx.bookings.changeHold(of: booking.id, tenantId: tenantId, now: now),
                waiting.resourceId == quote.resource.id, waiting.start == quote.start, waiting.end == quote.end
            {
                return Moved(booking: booking, difference: waiting)  // a repeat: the hold already made
            }
            let occupancy = try Self.admit(booking, to: quote, tx: tx, now: now)
            guard Capacity.fits(quote.resource, seats: booking.seats, occupancy: occupancy) else {
                throw DomainError(.conflict, .slotTaken, "\(quote.resource.name) is full then; pick another time")
            }
            if dearer, let rules {
                // The new place is held by a booking of the difference, paid like any booking; once paid,
                // the original moves there and takes its payments (``StoreSession/save(_:tenantId:store:emitsEvents:now:)``).
                let draft = BookingMove.differenceDraft(
                    booking,
                    to: quote,
                    rules: rules,
                    holdExpiresAt: now.addingTimeInterval(holdDuration),
                    now: now,
                    createdVia: createdVia
                )
                var (hold, audit) = BookingTransitions.created(draft, reference: try tx.bookings.unusedReference(tenantId: tenantId))
                hold.changeOf = booking.id
                hold.statusReason = "the difference of moving \(booking.reference.isEmpty ? String(booking.id) : booking.reference)"
                audit.detail["changeOf"] = String(booking.id)
                try tx.bookings.insert(hold, createdVia: createdVia, now: now)
                try tx.audit.append(audit)
                return Moved(booking: booking, difference: hold)
            }
            var placed = moved
            var giveBack: Int64 = 0
            // Cheaper, paid by card, and the policy gives the difference back: the booking takes the new price.
            if command.userId != nil, policy?.refundPriceDifference == true, booking.status == .confirmed, quote.priceMinor < booking.priceMinor,
                refundsByCard,
                try tx.operatorViews.bookingPayments(tenantId: tenantId, bookingIds: [booking.id])[booking.id]?.rails.contains(.card) == true
            {
                giveBack = booking.priceMinor - quote.priceMinor
                placed.priceMinor = quote.priceMinor
            }
            try tx.bookings.move(booking, to: placed, now: now)
            var (audit, event) = BookingMove.recorded(booking, moved: placed, actor: command.actor, now: now)
            if giveBack > 0 { audit.detail["refundMinor"] = String(giveBack) }
            try tx.audit.append(audit)
            if emitsEvents { try tx.outbox.enqueue([event], tenantId: tenantId, now: now) }
            return Moved(booking: placed, difference: nil, refundedMinor: giveBack)
        }
        guard result.refundedMinor > 0, let refund else { return result }
        // Asked once, recorded before Stripe is asked and retried by the jobs until it answers.
        let done = try await refund.upTo(
            result.refundedMinor,
            runtime: command.runtime,
            bookingId: result.booking.id,
            reason: "moved to a cheaper place: the difference back under the cancellation policy",
            actor: command.actor
        )
        return Moved(booking: done.last?.booking ?? result.booking, difference: nil, refundedMinor: done.reduce(0) { $0 + $1.refund.amountMinor })
    }

    /// A move's admission: both resources' turns, in one order (no two moves wait on each other),
    /// and what the other bookings hold of the new slot.
    static func admit(_ booking: Booking, to quote: BookingQuote, tx: any StoreSession, now: Date) throws -> Occupancy {
        var occupancy = Occupancy.none
        for resourceId in Set([booking.resourceId, quote.resource.id]).sorted() {
            guard resourceId == quote.resource.id else {
                try tx.bookings.takeTurn(tenantId: booking.tenantId, resourceId: resourceId, now: now)
                continue
            }
            occupancy = try tx.bookings.admit(
                tenantId: booking.tenantId,
                resourceId: resourceId,
                start: quote.start,
                end: quote.end,
                excluding: booking.id,
                now: now
            )
        }
        return occupancy
    }
}

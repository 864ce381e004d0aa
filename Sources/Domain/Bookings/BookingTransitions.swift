import Foundation

/// An administrator's move of a booking (confirm by hand, cancel), and what it writes.
public struct BookingTransition: Hashable, Sendable {
    public var booking: Booking
    public var audit: AuditRecord
    /// What the tenant's backend is told (L2): `booking.confirmed` or `booking.cancelled`.
    public var events: [WebhookEvent]
}

public enum BookingTransitions {
    /// Whether the move needs the occupancy of the booking's slot by other bookings (confirmation does).
    public static func needsOccupancy(to status: BookingStatus) -> Bool { status == .confirmed }

    /// Moves `booking` to `status` for an admin, or refuses (invalid transition, slot taken).
    public static func admin(
        _ booking: Booking,
        to status: BookingStatus,
        actor: Actor,
        reason: String?,
        resource: Resource?,
        occupancy: Occupancy,
        now: Date
    ) throws(DomainError) -> BookingTransition {
        guard booking.status.adminMay(moveTo: status) else {
            let verb = status == .confirmed ? "confirmed" : status.rawValue == "cancelled" ? "cancelled" : "moved to \(status.rawValue)"
            throw DomainError(.conflict, .invalidTransition, "a \(booking.status.rawValue) booking cannot be \(verb)")
        }
        if status == .confirmed, let resource, !Capacity.fits(resource, seats: booking.seats, occupancy: occupancy) {
            throw DomainError(.conflict, .slotUnavailable, "the slot is taken by other bookings")
        }
        var updated = booking
        updated.status = status
        updated.statusReason = reason
        updated.updatedAt = now
        if status == .confirmed { updated.confirmedAt = now }
        let audit = AuditRecord(
            tenantId: booking.tenantId,
            actor: actor,
            action: status == .confirmed ? .bookingManualConfirm : AuditAction(rawValue: "booking.\(status.rawValue)"),
            bookingId: booking.id,
            purchaseId: booking.purchaseId,
            detail: ["from": booking.status.rawValue, "to": status.rawValue, "reason": reason ?? ""],
            at: now
        )
        let event: WebhookEventType = status == .confirmed ? .bookingConfirmed : .bookingCancelled
        return BookingTransition(booking: updated, audit: audit, events: [.booking(event, updated, purchase: nil)])
    }

    /// A new booking and its audit entry, once admitted, with `reference` (one the tenant has not used).
    public static func created(_ draft: NewBooking, reference: String, id: Int64? = nil) -> (Booking, AuditRecord) {
        let quote = draft.quote
        let booking = Booking(
            id: id ?? RecordID.next(),
            tenantId: draft.tenantId,
            userId: draft.userId,
            resourceId: quote.resource.id,
            resourceKind: quote.resource.kind,
            start: quote.start,
            end: quote.end,
            seats: quote.seats,
            priceMinor: quote.priceMinor,
            currency: quote.currency,
            requiredProductId: quote.requiredProductId,
            status: .pendingPayment,
            holdExpiresAt: draft.holdExpiresAt,
            createdAt: draft.now,
            updatedAt: draft.now,
            requiredQuantity: quote.requiredQuantity,
            reference: reference,
            timeZone: quote.timeZone
        )
        let audit = AuditRecord(
            tenantId: booking.tenantId,
            actor: .user(booking.userId),
            action: .bookingCreated,
            bookingId: booking.id,
            purchaseId: nil,
            detail: ["requiredProductId": booking.requiredProductId, "price": String(booking.priceMinor), "reference": booking.reference],
            at: draft.now
        )
        return (booking, audit)
    }
}

import Foundation

/// Moving a booking to another slot, day or (for an operator) another resource of the same product:
/// what is allowed, and the booking it becomes.
public enum BookingMove {
    /// The booking `booking` becomes at `quote`'s place (itself when it is there already: a move is
    /// idempotent), or why it cannot move there.
    ///
    /// - A customer moves while the policy allows (`changeUntilHoursBefore`, else until the start);
    ///   an operator moves any booking that has not ended.
    /// - Only to a resource sold by the same product (one paid for it stays paid).
    /// - A paid booking (in full or in part) keeps what was paid: a place at the same or a lower price
    ///   moves it; for a customer, one that costs more waits for the difference (`move_costs_more`,
    ///   which ``MoveBooking`` turns into a hold for the difference when a rail can take it); an
    ///   operator's move keeps the price. An unpaid booking takes the new place's price.
    public static func moved(
        _ booking: Booking,
        to quote: BookingQuote,
        policy: CancellationPolicy?,
        byOperator: Bool,
        now: Date
    ) throws(DomainError) -> Booking {
        switch booking.status {
        case .confirmed: break
        case .pendingPayment where booking.holdExpiresAt > now: break
        default:
            throw DomainError(
                .conflict,
                .invalidTransition,
                "a \(booking.status.rawValue.replacingOccurrences(of: "_", with: " ")) booking cannot be moved"
            )
        }
        // Prices are never negative; one read from a damaged row would make the differences below overflow.
        guard booking.priceMinor >= 0 else {
            throw DomainError(.conflict, .invalidTransition, "this booking's stored price is not valid; an operator must look at it")
        }
        let hoursLeft = booking.start.timeIntervalSince(now) / 3600
        if byOperator {
            guard booking.end > now else { throw DomainError(.conflict, .bookingStarted, "this booking has ended: it cannot be moved") }
        } else {
            guard hoursLeft > 0 else { throw DomainError(.conflict, .bookingStarted, "the trip has started: ask the operator to change it") }
            if let policy, !policy.allowsChange(hoursLeft: hoursLeft) {
                throw DomainError(
                    .conflict,
                    .changeNotAllowed,
                    "changes are possible until \(policy.changeUntilHoursBefore ?? 0) hours before the start; ask the operator"
                )
            }
        }
        guard quote.requiredProductId == booking.requiredProductId || (booking.paidQuantity == 0 && booking.status == .pendingPayment) else {
            throw DomainError(
                .unprocessable,
                .invalidField,
                "\(quote.resource.name) is sold by another product than this booking; move it to a resource of the same kind",
                field: "resourceId"
            )
        }
        // Already there (a repeat of a move whose answer was lost): nothing changes, the same answer.
        guard quote.start != booking.start || quote.end != booking.end || quote.resource.id != booking.resourceId else { return booking }
        let paid = booking.status == .confirmed || booking.paidQuantity > 0
        // An operator's move keeps what was paid, whatever the new place costs (a storm's rebooking).
        if paid, !byOperator {
            guard quote.priceMinor <= booking.priceMinor else {
                let difference = CurrencyUnits.text(minor: quote.priceMinor - booking.priceMinor, currency: booking.currency)
                throw DomainError(
                    .conflict,
                    .moveCostsMore,
                    "the new place costs \(difference) more than was paid; pick one at the same price or less, or cancel and book anew"
                )
            }
        }
        var moved = booking
        moved.resourceId = quote.resource.id
        moved.start = quote.start
        moved.end = quote.end
        moved.timeZone = quote.timeZone
        moved.updatedAt = now
        if !paid {
            moved.priceMinor = quote.priceMinor
            moved.requiredProductId = quote.requiredProductId
            moved.requiredQuantity = quote.requiredQuantity
        }
        return moved
    }

    /// The hold for the difference of a paid booking's move to a dearer place: a booking of the new
    /// place at the difference, payable through the usual rails (a rental's by the band's product
    /// for that amount, or by card), naming the booking it changes.
    public static func differenceDraft(
        _ booking: Booking,
        to quote: BookingQuote,
        rules: BookingRules,
        holdExpiresAt: Date,
        now: Date,
        createdVia: String
    )
        -> NewBooking
    {
        var difference = quote
        difference.priceMinor = quote.priceMinor - booking.priceMinor
        difference.requiredQuantity = 1
        if quote.resource.kind == .rental, let product = rules.rentalProduct(priceMinor: difference.priceMinor) {
            difference.requiredProductId = product
        }
        return NewBooking(
            tenantId: booking.tenantId,
            userId: booking.userId,
            quote: difference,
            holdExpiresAt: holdExpiresAt,
            now: now,
            createdVia: createdVia
        )
    }

    /// A paid difference hold ends the move it waited for: `original` at the hold's place, its price
    /// what both paid. The audit entry and the `booking.moved` webhook name the difference.
    public static func completed(_ original: Booking, by hold: Booking, now: Date) -> (Booking, AuditRecord, WebhookEvent) {
        var moved = original
        moved.resourceId = hold.resourceId
        moved.resourceKind = hold.resourceKind
        moved.start = hold.start
        moved.end = hold.end
        moved.timeZone = hold.timeZone
        moved.updatedAt = now
        let (total, overflow) = original.priceMinor.addingReportingOverflow(hold.priceMinor)
        moved.priceMinor = overflow ? original.priceMinor : total
        var (audit, event) = recorded(original, moved: moved, actor: Actor(rawValue: "user:\(hold.userId)"), now: now)
        audit.detail["differenceBookingId"] = String(hold.id)
        audit.detail["differenceMinor"] = String(hold.priceMinor)
        event.data["differenceMinor"] = String(hold.priceMinor)
        return (moved, audit, event)
    }

    /// The audit entry and webhook of a move.
    public static func recorded(_ booking: Booking, moved: Booking, actor: Actor, now: Date) -> (AuditRecord, WebhookEvent) {
        let audit = AuditRecord(
            tenantId: booking.tenantId,
            actor: actor,
            action: .bookingMoved,
            bookingId: booking.id,
            purchaseId: booking.purchaseId,
            detail: [
                "fromResourceId": booking.resourceId, "toResourceId": moved.resourceId,
                "from": booking.localStart, "to": moved.localStart,
            ],
            at: now
        )
        var event = WebhookEvent.booking(.bookingMoved, moved, purchase: nil)
        event.data["previousResourceId"] = booking.resourceId
        event.data["previousStart"] = UTCTimestamp.format(epochMilliseconds: booking.start.epochMilliseconds, milliseconds: false)
        event.data["previousEnd"] = UTCTimestamp.format(epochMilliseconds: booking.end.epochMilliseconds, milliseconds: false)
        event.data["previousLocalStart"] = booking.localStart
        return (audit, event)
    }
}

import Foundation

extension StoreSession {
    /// Writes a purchase plan as it is, through the repositories: the store decides nothing.
    /// Events go to the outbox only for tenants that receive webhooks.
    public func save(_ plan: PurchasePlan, tenantId: String, store: StoreName, emitsEvents: Bool, now: Date) throws {
        if let purchase = plan.purchase { try purchases.insert(purchase, proofHash: plan.proofHash ?? "") }
        for effect in plan.effects { try save(effect, now: now) }
        if let replay = plan.replay { try purchases.insert(replay, store: store) }
        for record in plan.audit { try audit.append(record) }
        var events = plan.events
        // A paid difference of a move: the booking it changes moves now (told as booking.moved, not as
        // the hold's confirmation).
        for case .booking(let hold) in plan.effects where hold.changeOf != nil && hold.status == .confirmed {
            if let moved = try completeChange(hold, now: now) {
                events = events.filter { $0.subject != WebhookEvent.bookingSubject(hold.id) } + [moved]
            }
        }
        if emitsEvents, !events.isEmpty { try outbox.enqueue(events, tenantId: tenantId, now: now) }
    }

    /// Ends a move that waited for its difference, now that `hold` is paid: the booking it changes
    /// moves to the hold's place and takes its payments (``BookingRepository/absorb(_:into:moved:now:)``).
    /// A booking that is no longer confirmed (cancelled meanwhile) is left alone, and the hold stays a
    /// booking of its own (its audit entry says so). Returns the `booking.moved` event.
    func completeChange(_ hold: Booking, now: Date) throws -> WebhookEvent? {
        guard let originalId = hold.changeOf,
            let original = try bookings.booking(id: originalId, tenantId: hold.tenantId, forUpdate: true),
            original.status == .confirmed, original.userId == hold.userId
        else {
            try audit.append(
                AuditRecord(
                    tenantId: hold.tenantId,
                    actor: .system,
                    action: .bookingMoved,
                    bookingId: hold.id,
                    purchaseId: hold.purchaseId,
                    detail: ["outcome": "kept", "reason": "the booking it changes is no longer confirmed; this paid booking stands on its own"],
                    at: now
                )
            )
            return nil
        }
        let (moved, record, event) = BookingMove.completed(original, by: hold, now: now)
        try bookings.absorb(hold, into: original, moved: moved, now: now)
        try audit.append(record)
        return event
    }

    /// Writes one effect of a plan as it is.
    public func save(_ effect: PlanEffect, now: Date) throws {
        switch effect {
        case .booking(let booking): try bookings.update(booking, now: now)
        case .credits(let change): try save(change, now: now)
        case .grants(let list): for grant in list { try grants.save(grant, now: now) }
        case .subscription(let change):
            for subscription in change.subscriptions { try subscriptions.save(subscription) }
            for membership in change.memberships { try subscriptions.save(membership) }
            for cheat in change.cheats { try subscriptions.insert(cheat) }
        }
    }

    /// Writes a credit change as it is: entries, lots, uses, reservation and the balance row (and the
    /// signup bonus's record, for the bonus).
    public func save(_ change: CreditChange, now: Date) throws {
        if change.grantsSignupBonus {
            let balance = change.account.balance
            guard try credits.recordBonus(tenantId: balance.tenantId, userId: balance.userId, now: now) else {
                throw SignupBonusRecordedTwice(tenantId: balance.tenantId, userId: balance.userId)
            }
        }
        if let reservation = change.newReservation { try credits.insert(reservation) }
        for entry in change.entries { try credits.insert(entry) }
        for lot in change.newLots { try credits.insert(lot) }
        for lot in change.updatedLots { try credits.update(lot) }
        for use in change.lotUses { try credits.insert(use) }
        for status in change.statusChanges { try credits.setStatus(status.status, entryId: status.entryId) }
        // The reservation's usage entry exists by now (it references it).
        if let reservation = change.updatedReservation { try credits.update(reservation) }
        if !change.entries.isEmpty { try credits.saveBalance(change.account.balance, now: now) }
    }

    /// Writes a notification plan and its notification row as they are (once per uuid: the unique
    /// index refuses a second row, so a redelivery racing the first one fails instead of applying twice).
    public func save(_ plan: NotificationPlan, for notification: IncomingNotification, store: StoreName, emitsEvents: Bool, now: Date) throws {
        if let purchase = plan.purchase { try purchases.update(purchase) }
        for effect in plan.effects { try save(effect, now: now) }
        if let unclaimed = plan.unclaimed {
            try purchases.keepUnclaimed(unclaimed, tenantId: notification.tenantId, store: store, notificationUUID: notification.uuid)
        }
        switch plan.revocation {
        case .remember(let id):
            try purchases.rememberRevoked(
                tenantId: notification.tenantId,
                store: store,
                environment: notification.environment,
                transactionId: id,
                notification: notification,
                at: now
            )
        case .forget(let id):
            try purchases.forgetRevoked(tenantId: notification.tenantId, store: store, environment: notification.environment, transactionId: id)
        case nil:
            break
        }
        try notifications.insert(notification, outcome: plan.effect.outcome, receivedAt: now)
        for record in plan.audit { try audit.append(record) }
        if emitsEvents, !plan.events.isEmpty { try outbox.enqueue(plan.events, tenantId: notification.tenantId, now: now) }
    }
}

import Foundation

extension StoreSession {
    /// Writes a purchase plan as it is, through the repositories: the store decides nothing.
    /// Events go to the outbox only for tenants that receive webhooks.
    public func save(_ plan: PurchasePlan, tenantId: String, store: String, emitsEvents: Bool, now: Date) throws {
        if let purchase = plan.purchase { try purchases.insert(purchase, proofHash: plan.proofHash ?? "") }
        if let booking = plan.booking { try bookings.update(booking, now: now) }
        if let replay = plan.replay { try purchases.insert(replay, store: store) }
        for record in plan.audit { try audit.append(record) }
        if emitsEvents, !plan.events.isEmpty { try outbox.enqueue(plan.events, tenantId: tenantId, now: now) }
    }
}

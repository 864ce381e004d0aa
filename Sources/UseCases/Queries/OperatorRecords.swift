import Domain
import Foundation

/// The records an operator lists and exports, a page at a time (newest first) or whole up to a
/// limit (CSV): purchases, bookings with what they paid, the ledger, the audit log, notifications,
/// replays, unclaimed transactions, unapplied payments, webhook deliveries, keys, subscriptions.
/// Each is one read of the store, within the tenant; the one write is an operator's resend of a
/// webhook delivery.
public struct OperatorRecords: Sendable {
    let store: any Store

    public init(store: any Store) { self.store = store }

    public typealias Listed<T> = (items: [T], total: Int)

    public func purchases(tenantId: String, filter: PurchaseFilter, page: Page) async throws -> Listed<Purchase> {
        try await store.read { try $0.purchases.purchases(tenantId: tenantId, filter: filter, page: page) }
    }

    public func exportPurchases(tenantId: String, filter: PurchaseFilter, limit: Int) async throws -> [Purchase] {
        try await store.read { try $0.purchases.exportPurchases(tenantId: tenantId, filter: filter, limit: limit) }
    }

    /// A page of bookings, and what each has paid (store and card payments).
    public func bookings(
        tenantId: String,
        filter: BookingFilter,
        page: Page
    ) async throws -> (
        listed: Listed<Booking>, paid: [Int64: BookingPaid]
    ) {
        try await store.read { tx in
            let listed = try tx.bookings.bookings(tenantId: tenantId, filter: filter, page: page)
            return (listed, try tx.operatorViews.bookingPayments(tenantId: tenantId, bookingIds: listed.items.map(\.id)))
        }
    }

    public func exportBookings(tenantId: String, filter: BookingFilter, limit: Int) async throws -> [Booking] {
        try await store.read { try $0.bookings.exportBookings(tenantId: tenantId, filter: filter, limit: limit) }
    }

    public func ledger(tenantId: String, filter: LedgerFilter, page: Page) async throws -> Listed<LedgerEntry> {
        try await store.read { try $0.credits.entries(tenantId: tenantId, filter: filter, page: page) }
    }

    public func exportLedger(tenantId: String, filter: LedgerFilter, limit: Int) async throws -> [LedgerEntry] {
        try await store.read { try $0.credits.export(tenantId: tenantId, filter: filter, limit: limit) }
    }

    public func audit(tenantId: String, bookingId: Int64?, page: Page) async throws -> Listed<AuditEntry> {
        try await store.read { try $0.audit.audit(tenantId: tenantId, bookingId: bookingId, page: page) }
    }

    public func notifications(tenantId: String, page: Page) async throws -> Listed<StoredNotification> {
        try await store.read { try $0.notifications.notifications(tenantId: tenantId, page: page) }
    }

    public func replays(tenantId: String, page: Page) async throws -> Listed<ReplayAttempt> {
        try await store.read { try $0.purchases.replays(tenantId: tenantId, page: page) }
    }

    public func unclaimed(tenantId: String, page: Page) async throws -> Listed<UnclaimedTransaction> {
        try await store.read { try $0.purchases.unclaimed(tenantId: tenantId, page: page) }
    }

    public func unappliedPayments(tenantId: String, status: UnappliedPayment.Status?, page: Page) async throws -> Listed<UnappliedPayment> {
        try await store.read { try $0.purchases.unappliedPayments(tenantId: tenantId, status: status, page: page) }
    }

    public func webhookDeliveries(tenantId: String, page: Page) async throws -> Listed<WebhookDelivery> {
        try await store.read { try $0.outbox.deliveries(tenantId: tenantId, page: page) }
    }

    public func deadLetters(tenantId: String, page: Page) async throws -> Listed<DeadLetter> {
        try await store.read { try $0.outbox.deadLetters(tenantId: tenantId, page: page) }
    }

    /// The tenant's API keys (their secrets are never stored).
    public func keys(tenantId: String) async throws -> [APIKey] {
        try await store.read { try $0.keys.keys(tenantId: tenantId) }
    }

    /// Subscriptions of the tenant, of one user or all.
    public func subscriptions(tenantId: String, userId: String?, page: Page) async throws -> Listed<Subscription> {
        try await store.read { try $0.subscriptions.subscriptions(tenantId: tenantId, userId: userId, page: page) }
    }

    public func subscriptionCheats(tenantId: String, page: Page) async throws -> Listed<SubscriptionCheat> {
        try await store.read { try $0.subscriptions.cheats(tenantId: tenantId, page: page) }
    }

    public func unlinks(tenantId: String, page: Page) async throws -> Listed<UnlinkArchive> {
        try await store.read { try $0.subscriptions.unlinks(tenantId: tenantId, page: page) }
    }

    /// Queues a webhook delivery again (an operator's resend): false when the tenant has no such delivery.
    public func resend(deliveryId: Int64, tenantId: String, now: Date) async throws -> Bool {
        try await store.write { try $0.outbox.resend(deliveryId: deliveryId, tenantId: tenantId, now: now) }
    }
}

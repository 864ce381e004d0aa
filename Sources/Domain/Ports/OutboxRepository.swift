import Foundation

/// The webhook outbox and its delivery log. Events are enqueued in the unit of work of the change
/// they report; each message is handed to one deliverer at a time (a lease).
public protocol OutboxRepository {
    /// Queues events (each numbered within its subject, so that one booking's events arrive in order).
    func enqueue(_ events: [WebhookEvent], tenantId: String, now: Date) throws
    /// Claims up to `limit` pending messages due at `now` (of one tenant, or of all when `tenantId` is
    /// nil) for `owner` until `leaseUntil`, oldest first; messages leased to another owner and not yet
    /// expired are skipped, dead letters too, and a message whose subject has an earlier message
    /// still waiting is held back.
    func claimDue(tenantId: String?, now: Date, limit: Int, owner: String, leaseUntil: Date) throws -> [OutboxMessage]
    /// Records an attempt and releases the lease: success marks the message delivered; failure
    /// schedules the next attempt at `nextAttemptAt`, or, when that is nil, sets the message aside as
    /// a dead letter.
    func recordAttempt(_ message: OutboxMessage, statusCode: Int?, error: String?, delivered: Bool, nextAttemptAt: Date?, now: Date) throws
    /// Gives a claimed message back without an attempt (it waits behind an earlier one of its subject).
    func release(_ message: OutboxMessage) throws
    /// Marks a message as not deliverable (its tenant has no webhook any more).
    func skip(_ message: OutboxMessage) throws
    /// Messages waiting to be delivered (the webhook queue's depth).
    func pendingCount() throws -> Int
    func deliveries(tenantId: String, page: Page) throws -> (items: [WebhookDelivery], total: Int)
    /// The tenant's dead letters, newest first.
    func deadLetters(tenantId: String, page: Page) throws -> (items: [DeadLetter], total: Int)
    /// Queues the message of a delivery again (a dead letter starts a new round of attempts); false
    /// when the delivery is not the tenant's.
    func resend(deliveryId: Int64, tenantId: String, now: Date) throws -> Bool
}

extension OutboxRepository {
    /// Claims due messages of every tenant.
    public func claimDue(now: Date, limit: Int, owner: String, leaseUntil: Date) throws -> [OutboxMessage] {
        try claimDue(tenantId: nil, now: now, limit: limit, owner: owner, leaseUntil: leaseUntil)
    }
}

import Foundation

/// App Store Server Notifications as received (one row per tenant and notification uuid).
public protocol NotificationRepository {
    /// The outcome stored for a uuid already received, if any.
    func outcome(tenantId: String, uuid: String) throws -> String?
    func insert(_ notification: IncomingNotification, outcome: String, receivedAt: Date) throws
    func notifications(tenantId: String, page: Page) throws -> (items: [StoredNotification], total: Int)
}

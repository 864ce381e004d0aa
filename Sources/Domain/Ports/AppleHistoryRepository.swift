import Foundation

/// How far each tenant's Get Notification History reading got, per environment.
public protocol AppleHistoryRepository {
    func mark(tenantId: String, environment: StoreEnvironment) throws -> Date?
    /// Moves the mark forward (never back).
    func setMark(tenantId: String, environment: StoreEnvironment, checkedUntil: Date, at now: Date) throws
}

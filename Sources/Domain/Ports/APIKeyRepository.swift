import Foundation

/// Tenants' rows and their API keys (only hashes are stored).
public protocol APIKeyRepository {
    /// Makes sure every catalog tenant has its row (new tenants added, names updated).
    func syncTenants(_ tenants: [(id: String, name: String)], now: Date) throws
    func create(_ key: NewAPIKey, now: Date) throws -> APIKey
    /// The key with this hash, whatever its state (callers judge ``APIKey/isActive(at:)``).
    func key(hash: String) throws -> APIKey?
    /// One key of a tenant by id; `forUpdate` locks it for the unit of work.
    func key(id: Int64, tenantId: String?, forUpdate: Bool) throws -> APIKey?
    /// A tenant's keys (or every tenant's), newest first.
    func keys(tenantId: String?) throws -> [APIKey]
    func revoke(id: Int64, at: Date) throws
    func expire(id: Int64, at: Date) throws
    /// Records a use, unless one at or after `since` is already recorded.
    func touch(id: Int64, at: Date, unlessUsedSince since: Date) throws
}

/// Answers of `POST /api/verify-receipt`.
public protocol ReceiptCheckRepository {
    func record(_ check: ReceiptCheck) throws
    func receiptChecks(tenantId: String, receiptSHA256: String) throws -> [ReceiptCheck]
}

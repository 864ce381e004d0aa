import Foundation

/// Tenants' rows and their API keys (only hashes are stored).
public protocol APIKeyRepository {
    /// Makes sure every catalog tenant has its row (new tenants added, names updated).
    func syncTenants(_ tenants: [(id: String, name: String)], now: Date) throws
    func create(tenantId: String, role: APIKeyRole, hash: String, now: Date) throws -> APIKey
    func key(hash: String) throws -> APIKey?
}

/// Answers of `POST /api/verify-receipt`.
public protocol ReceiptCheckRepository {
    func record(_ check: ReceiptCheck) throws
    func receiptChecks(tenantId: String, receiptSHA256: String) throws -> [ReceiptCheck]
}

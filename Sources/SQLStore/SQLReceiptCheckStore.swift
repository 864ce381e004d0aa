import Domain
import Foundation
import SQLKit

/// Receipt checks on SQL.
extension SQLBookingStore: ReceiptCheckStore {
    public func record(_ check: ReceiptCheck) async throws {
        try await database.exclusively { sql in
            try await sql.raw("""
                INSERT INTO receipt_checks (id, tenant_id, user_id, receipt_sha256, outcome, is_premium, product_id, expires_at, at)
                VALUES (\(bind: RandomID.next()), \(bind: check.tenantId), \(bind: check.userId), \(bind: check.receiptSHA256), \(bind: check.outcome),
                \(bind: check.isPremium ? 1 : 0), \(bind: check.productId), \(bind: check.expiresAt?.epochMilliseconds), \(bind: check.at.epochMilliseconds))
                """).run()
        }
    }

    public func receiptChecks(tenantId: String, receiptSHA256: String) async throws -> [ReceiptCheck] {
        try await database.read { sql in
            try await sql.raw("""
                SELECT tenant_id, user_id, receipt_sha256, outcome, is_premium, product_id, expires_at, at FROM receipt_checks
                WHERE tenant_id = \(bind: tenantId) AND receipt_sha256 = \(bind: receiptSHA256) ORDER BY at
                """).all().map { row in
                ReceiptCheck(
                    tenantId: try row.decode(column: "tenant_id", as: String.self), userId: try row.decode(column: "user_id", as: String?.self),
                    receiptSHA256: try row.decode(column: "receipt_sha256", as: String.self), outcome: try row.decode(column: "outcome", as: String.self),
                    isPremium: try row.decode(column: "is_premium", as: Int.self) != 0, productId: try row.decode(column: "product_id", as: String?.self),
                    expiresAt: try row.decode(column: "expires_at", as: Int64?.self).map(Date.init(epochMilliseconds:)),
                    at: Date(epochMilliseconds: try row.decode(column: "at", as: Int64.self))
                )
            }
        }
    }
}

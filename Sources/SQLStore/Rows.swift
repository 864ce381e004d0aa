import Domain
import Foundation
import SQLKit

/// Column lists and row decoding, kept next to each other so they cannot drift apart.
enum Rows {
    static let bookingColumns = """
        id, tenant_id, user_id, resource_id, resource_kind, starts_at, ends_at, seats, price_minor, currency, \
        required_product_id, status, hold_expires_at, created_at, updated_at, confirmed_at, purchase_id, status_reason, \
        required_quantity, environment, created_via
        """

    static func booking(_ row: any SQLRow) throws -> Booking {
        Booking(
            id: try row.decode(column: "id", as: Int64.self),
            tenantId: try row.decode(column: "tenant_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self),
            resourceId: try row.decode(column: "resource_id", as: String.self),
            resourceKind: try enumValue(Resource.Kind.self, row, "resource_kind"),
            start: try date(row, "starts_at"),
            end: try date(row, "ends_at"),
            seats: try row.decode(column: "seats", as: Int.self),
            priceMinor: try row.decode(column: "price_minor", as: Int64.self),
            currency: try row.decode(column: "currency", as: String.self),
            requiredProductId: try row.decode(column: "required_product_id", as: String.self),
            status: try enumValue(BookingStatus.self, row, "status"),
            holdExpiresAt: try date(row, "hold_expires_at"),
            createdAt: try date(row, "created_at"),
            updatedAt: try date(row, "updated_at"),
            confirmedAt: try optionalDate(row, "confirmed_at"),
            purchaseId: try row.decode(column: "purchase_id", as: Int64?.self),
            statusReason: try row.decode(column: "status_reason", as: String?.self),
            requiredQuantity: try row.decode(column: "required_quantity", as: Int.self),
            environment: try row.decode(column: "environment", as: String?.self)
        )
    }

    static let purchaseColumns = """
        id, tenant_id, user_id, booking_id, store, environment, transaction_id, original_transaction_id, product_id, \
        status, outcome_code, purchased_at, created_at, price_milliunits, currency, quantity
        """

    static func purchase(_ row: any SQLRow) throws -> Purchase {
        Purchase(
            id: try row.decode(column: "id", as: Int64.self),
            tenantId: try row.decode(column: "tenant_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self),
            bookingId: try row.decode(column: "booking_id", as: Int64?.self),
            store: try row.decode(column: "store", as: String.self),
            environment: try row.decode(column: "environment", as: String.self),
            transactionId: try row.decode(column: "transaction_id", as: String.self),
            originalTransactionId: try row.decode(column: "original_transaction_id", as: String.self),
            productId: try row.decode(column: "product_id", as: String.self),
            status: try enumValue(PurchaseStatus.self, row, "status"),
            outcomeCode: try row.decode(column: "outcome_code", as: String?.self),
            purchasedAt: try date(row, "purchased_at"),
            createdAt: try date(row, "created_at"),
            priceMilliunits: try row.decode(column: "price_milliunits", as: Int64?.self),
            currency: try row.decode(column: "currency", as: String?.self),
            quantity: try row.decode(column: "quantity", as: Int?.self)
        )
    }

    static func replay(_ row: any SQLRow) throws -> ReplayAttempt {
        ReplayAttempt(
            id: try row.decode(column: "id", as: Int64.self),
            tenantId: try row.decode(column: "tenant_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self),
            bookingId: try row.decode(column: "booking_id", as: Int64?.self),
            environment: try row.decode(column: "environment", as: String.self),
            transactionId: try row.decode(column: "transaction_id", as: String.self),
            existingPurchaseId: try row.decode(column: "existing_purchase_id", as: Int64.self),
            reason: try row.decode(column: "reason", as: String.self),
            proofHash: try row.decode(column: "proof_hash", as: String.self),
            at: try date(row, "at")
        )
    }

    static func audit(_ row: any SQLRow) throws -> AuditEntry {
        AuditEntry(
            id: try row.decode(column: "id", as: Int64.self),
            tenantId: try row.decode(column: "tenant_id", as: String.self),
            actor: try row.decode(column: "actor", as: String.self),
            action: try row.decode(column: "action", as: String.self),
            bookingId: try row.decode(column: "booking_id", as: Int64?.self),
            purchaseId: try row.decode(column: "purchase_id", as: Int64?.self),
            detail: try row.decode(column: "detail", as: String?.self),
            at: try date(row, "at")
        )
    }

    private static func date(_ row: any SQLRow, _ column: String) throws -> Date {
        Date(epochMilliseconds: try row.decode(column: column, as: Int64.self))
    }

    private static func optionalDate(_ row: any SQLRow, _ column: String) throws -> Date? {
        try row.decode(column: column, as: Int64?.self).map(Date.init(epochMilliseconds:))
    }

    private static func enumValue<T: RawRepresentable>(_ type: T.Type, _ row: any SQLRow, _ column: String) throws -> T where T.RawValue == String {
        let raw = try row.decode(column: column, as: String.self)
        guard let value = T(rawValue: raw) else { throw StoreError("unexpected \(column) \(raw) in the database") }
        return value
    }
}

/// Random positive ids below 2^53 (exact as JavaScript numbers, unguessable, no sequence to contend on).
enum RandomID {
    static func next() -> Int64 { Int64.random(in: 1...(1 << 53) - 1) }
}

import Domain
import Foundation
import SQLKit

/// App Store Server Notifications on SQL.
extension SQLBookingStore: NotificationStore {
    public func applyNotification(
        _ notification: IncomingNotification, resources: [Resource], now: Date,
        decide: @escaping @Sendable (IncomingNotification, Purchase?, Booking?, Bool) -> NotificationEffect
    ) async throws -> (outcome: String, duplicate: Bool) {
        try await database.transaction { sql in
            if let seen = try await sql.raw("""
                SELECT outcome FROM apple_notifications WHERE tenant_id = \(bind: notification.tenantId) AND notification_uuid = \(bind: notification.uuid)
                """).first() {
                return (try seen.decode(column: "outcome", as: String.self), true)
            }
            var purchase: Purchase?
            if let transactionId = notification.transactionId {
                purchase = try await sql.raw("""
                    SELECT \(unsafeRaw: Rows.purchaseColumns) FROM purchases
                    WHERE store = 'app_store' AND environment = \(bind: notification.environment) AND transaction_id = \(bind: transactionId)
                    AND tenant_id = \(bind: notification.tenantId)
                    """).first().map(Rows.purchase)
            }
            var booking: Booking?
            if let purchase, let bookingId = purchase.bookingId {
                booking = try await Self.booking(sql, id: bookingId, tenantId: notification.tenantId)
            }
            var slotFree = false
            if let booking, let resource = resources.first(where: { $0.id == booking.resourceId }) {
                let occupancy = try await Self.occupancy(sql, tenantId: booking.tenantId, resourceId: booking.resourceId, start: booking.start, end: booking.end, excluding: booking.id, now: now)
                slotFree = Capacity.fits(resource, seats: booking.seats, occupancy: occupancy)
            }
            let effect = decide(notification, purchase, booking, slotFree)
            let stamp = now.epochMilliseconds
            switch effect {
            case .refundBooking:
                purchase?.status = .refunded
                booking?.status = .refunded
                if let purchase, let booking {
                    try await sql.raw("UPDATE purchases SET status = 'refunded' WHERE id = \(bind: purchase.id)").run()
                    try await sql.raw("UPDATE bookings SET status = 'refunded', status_reason = \(bind: notification.type), updated_at = \(bind: stamp) WHERE id = \(bind: booking.id)").run()
                }
            case .refundPurchaseOnly:
                purchase?.status = .refunded
                if let purchase {
                    try await sql.raw("UPDATE purchases SET status = 'refunded' WHERE id = \(bind: purchase.id)").run()
                }
            case .reinstateBooking(let free):
                purchase?.status = free ? .applied : .needsRefund
                booking?.status = free ? .confirmed : .paymentNeedsRefund
                if let purchase, let booking {
                    try await sql.raw("UPDATE purchases SET status = \(bind: free ? "applied" : "needs_refund"), outcome_code = \(bind: free ? nil : "slot_unavailable") WHERE id = \(bind: purchase.id)").run()
                    try await sql.raw("""
                        UPDATE bookings SET status = \(bind: free ? "confirmed" : "payment_needs_refund"), status_reason = 'REFUND_REVERSED', updated_at = \(bind: stamp)
                        WHERE id = \(bind: booking.id)
                        """).run()
                }
            case .keepUnclaimed:
                if let transactionId = notification.transactionId, let productId = notification.productId {
                    try await sql.raw("""
                        INSERT INTO unclaimed_transactions (id, tenant_id, store, environment, transaction_id, original_transaction_id, product_id, notification_uuid, purchased_at, received_at)
                        VALUES (\(bind: RandomID.next()), \(bind: notification.tenantId), 'app_store', \(bind: notification.environment), \(bind: transactionId),
                        \(bind: notification.originalTransactionId ?? transactionId), \(bind: productId), \(bind: notification.uuid),
                        \(bind: (notification.purchasedAt ?? now).epochMilliseconds), \(bind: stamp))
                        ON CONFLICT DO NOTHING
                        """).run()
                }
            case .rememberRevoked:
                if let transactionId = notification.transactionId {
                    try await sql.raw("""
                        INSERT INTO revoked_transactions (id, tenant_id, store, environment, transaction_id, notification_type, notification_uuid, received_at)
                        VALUES (\(bind: RandomID.next()), \(bind: notification.tenantId), 'app_store', \(bind: notification.environment), \(bind: transactionId),
                        \(bind: notification.type), \(bind: notification.uuid), \(bind: stamp))
                        ON CONFLICT DO NOTHING
                        """).run()
                }
            case .forgetRevoked:
                if let transactionId = notification.transactionId {
                    try await sql.raw("""
                        DELETE FROM revoked_transactions WHERE tenant_id = \(bind: notification.tenantId) AND store = 'app_store'
                        AND environment = \(bind: notification.environment) AND transaction_id = \(bind: transactionId)
                        """).run()
                }
            case .recordOnly:
                break
            }
            try await sql.raw("""
                INSERT INTO apple_notifications (id, tenant_id, notification_uuid, notification_type, subtype, environment, signed_at, transaction_id, outcome, payload_sha256, received_at)
                VALUES (\(bind: RandomID.next()), \(bind: notification.tenantId), \(bind: notification.uuid), \(bind: notification.type), \(bind: notification.subtype),
                \(bind: notification.environment), \(bind: notification.signedAt.epochMilliseconds), \(bind: notification.transactionId), \(bind: effect.outcome),
                \(bind: notification.payloadHash), \(bind: stamp))
                """).run()
            try await Self.audit(sql, tenantId: notification.tenantId, actor: "apple", action: "notification.\(notification.type.lowercased())",
                                 bookingId: booking?.id, purchaseId: purchase?.id, detail: ["uuid": notification.uuid, "outcome": effect.outcome], at: now)
            if notification.emitsEvents {
                try await Self.enqueue(sql, tenantId: notification.tenantId, events: effect.events(booking: booking, purchase: purchase), now: now)
            }
            return (effect.outcome, false)
        }
    }

    public func unclaimedTransactions(tenantId: String, page: Page) async throws -> (items: [UnclaimedTransaction], total: Int) {
        try await database.read { sql in
            let total = try await sql.raw("SELECT COUNT(*) AS n FROM unclaimed_transactions WHERE tenant_id = \(bind: tenantId)").first()?.decode(column: "n", as: Int.self) ?? 0
            let rows = try await sql.raw("""
                SELECT u.environment, u.transaction_id, u.product_id, u.purchased_at, u.received_at, p.id AS purchase_id
                FROM unclaimed_transactions u
                LEFT JOIN purchases p ON p.store = u.store AND p.environment = u.environment AND p.transaction_id = u.transaction_id
                AND p.tenant_id = u.tenant_id
                WHERE u.tenant_id = \(bind: tenantId) ORDER BY u.received_at DESC, u.id DESC LIMIT \(bind: page.limit) OFFSET \(bind: page.offset)
                """).all()
            let items = try rows.map { row in
                UnclaimedTransaction(
                    environment: try row.decode(column: "environment", as: String.self), transactionId: try row.decode(column: "transaction_id", as: String.self),
                    productId: try row.decode(column: "product_id", as: String.self),
                    purchasedAt: Date(epochMilliseconds: try row.decode(column: "purchased_at", as: Int64.self)),
                    receivedAt: Date(epochMilliseconds: try row.decode(column: "received_at", as: Int64.self)),
                    claimedByPurchaseId: try row.decode(column: "purchase_id", as: Int64?.self)
                )
            }
            return (items, total)
        }
    }

    public func purchase(tenantId: String, environment: String, transactionId: String) async throws -> (Purchase, Booking?)? {
        try await database.read { sql in
            guard let purchase = try await sql.raw("""
                SELECT \(unsafeRaw: Rows.purchaseColumns) FROM purchases
                WHERE store = 'app_store' AND environment = \(bind: environment) AND transaction_id = \(bind: transactionId) AND tenant_id = \(bind: tenantId)
                """).first().map(Rows.purchase) else { return nil }
            let booking = try await purchase.bookingId.asyncFlatMap { try await Self.booking(sql, id: $0, tenantId: tenantId) }
            return (purchase, booking)
        }
    }

    public func notifications(tenantId: String, page: Page) async throws -> (items: [StoredNotification], total: Int) {
        try await database.read { sql in
            let total = try await sql.select().column(SQLFunction("COUNT", args: SQLLiteral.all), as: "n").from("apple_notifications")
                .where("tenant_id", .equal, tenantId).first()?.decode(column: "n", as: Int.self) ?? 0
            let rows = try await sql.select().column(SQLRaw("notification_uuid, notification_type, subtype, environment, transaction_id, outcome, payload_sha256, signed_at, received_at"))
                .from("apple_notifications").where("tenant_id", .equal, tenantId)
                .orderBy("received_at", .descending).orderBy("id", .descending).limit(page.limit).offset(page.offset).all()
            let items = try rows.map { row in
                StoredNotification(
                    uuid: try row.decode(column: "notification_uuid", as: String.self), type: try row.decode(column: "notification_type", as: String.self),
                    subtype: try row.decode(column: "subtype", as: String?.self), environment: try row.decode(column: "environment", as: String.self),
                    transactionId: try row.decode(column: "transaction_id", as: String?.self), outcome: try row.decode(column: "outcome", as: String.self),
                    payloadHash: try row.decode(column: "payload_sha256", as: String.self),
                    signedAt: Date(epochMilliseconds: try row.decode(column: "signed_at", as: Int64.self)),
                    receivedAt: Date(epochMilliseconds: try row.decode(column: "received_at", as: Int64.self))
                )
            }
            return (items, total)
        }
    }
}

extension Optional {
    func asyncFlatMap<T>(_ transform: (Wrapped) async throws -> T?) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}

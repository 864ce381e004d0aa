import Domain
import Foundation

/// Money owed to customers (``OwedFacts``): the bookings that may owe, their store payments and card
/// payments, and how an operator closed them. Bound parameters only; the bookings' ids of one page
/// are read in one statement per table.
extension SQLOperatorViews {
    func owedFacts(tenantId: String, now: Date, bookingId: Int64?, limit: Int) throws -> [OwedFacts] {
        let nowMs = now.epochMilliseconds
        var sql = """
            SELECT \(SQLBookings.columns) FROM bookings b
            WHERE b.tenant_id = ?
              AND (
                ((b.status IN ('cancelled', 'payment_needs_refund') OR (b.status = 'pending_payment' AND b.paid_quantity > 0 AND b.hold_expires_at <= ?))
                  AND (EXISTS (SELECT 1 FROM purchases p WHERE p.tenant_id = b.tenant_id AND p.booking_id = b.id
                                AND p.store IN ('app_store', 'google_play') AND p.status IN ('applied', 'needs_refund'))
                       OR EXISTS (SELECT 1 FROM card_payments c WHERE c.tenant_id = b.tenant_id AND c.booking_id = b.id
                                  AND c.purpose = 'booking' AND c.status = 'succeeded' AND c.amount_refunded < c.amount_minor)))
                OR EXISTS (SELECT 1 FROM purchases p WHERE p.tenant_id = b.tenant_id AND p.booking_id = b.id
                           AND p.store IN ('app_store', 'google_play') AND p.status = 'needs_refund')
              )
            """
        var arguments: SQLArguments = [tenantId, nowMs]
        if let bookingId {
            sql += " AND b.id = ?"
            arguments.append(bookingId)
        }
        sql += " ORDER BY b.updated_at DESC, b.id DESC LIMIT ?"
        arguments.append(max(1, min(limit, 1000)))
        let bookings = try db.rows(sql, arguments).map(SQLBookings.decode)
        guard !bookings.isEmpty else { return [] }
        let ids = bookings.map(\.id)
        let list = Array(repeating: "?", count: ids.count).joined(separator: ", ")
        let idArguments: SQLArguments = ids.map { $0 }

        var stores: [Int64: [OwedFacts.StorePayment]] = [:]
        for row in try db.rows(
            """
            SELECT id, booking_id, store, status, price_milliunits, currency, quantity, outcome_code FROM purchases
            WHERE tenant_id = ? AND booking_id IN (\(list)) AND store IN ('app_store', 'google_play') AND status IN ('applied', 'needs_refund')
            ORDER BY id
            """,
            [tenantId] + idArguments
        ) {
            let quantity: Int64? = row["quantity"]
            stores[row["booking_id"], default: []].append(
                OwedFacts.StorePayment(
                    purchaseId: row["id"],
                    store: StoreName(rawValue: row["store"]),
                    status: try row.value(PurchaseStatus.self, "status"),
                    priceMilliunits: row["price_milliunits"],
                    currency: row["currency"],
                    quantity: quantity.map { Int(clamping: $0) },
                    outcomeCode: row["outcome_code"]
                )
            )
        }
        var cards: [Int64: (left: Int64, currency: String, purchases: [Int64])] = [:]
        for row in try db.rows(
            """
            SELECT booking_id, amount_minor, amount_refunded, currency, purchase_id FROM card_payments
            WHERE tenant_id = ? AND booking_id IN (\(list)) AND purpose = 'booking' AND status = 'succeeded'
            ORDER BY id
            """,
            [tenantId] + idArguments
        ) {
            let amount: Int64 = row["amount_minor"], refunded: Int64 = row["amount_refunded"]
            var entry = cards[row["booking_id"]] ?? (0, row["currency"], [])
            let (remaining, overflow) = amount.subtractingReportingOverflow(refunded)
            entry.left = Overview.sum(entry.left, overflow ? 0 : max(0, remaining))
            if let purchase = row["purchase_id"] as Int64? { entry.purchases.append(purchase) }
            cards[row["booking_id"]] = entry
        }
        var resolutions: [Int64: OwedPayment.Resolved] = [:]
        for row in try db.rows(
            "SELECT booking_id, how, note, actor, resolved_at FROM owed_resolutions WHERE tenant_id = ? AND booking_id IN (\(list))",
            [tenantId] + idArguments
        ) {
            guard let how = OwedPayment.Resolution(rawValue: row["how"]) else { continue }
            resolutions[row["booking_id"]] = OwedPayment.Resolved(how: how, note: row["note"], actor: row["actor"], at: row.date("resolved_at"))
        }
        return bookings.map { booking in
            OwedFacts(
                booking: booking,
                storePayments: stores[booking.id] ?? [],
                cardRefundable: cards[booking.id]?.left ?? 0,
                cardCurrency: cards[booking.id]?.currency,
                cardPurchaseIds: cards[booking.id]?.purchases ?? [],
                resolved: resolutions[booking.id]
            )
        }
    }

    func bookingPayments(tenantId: String, bookingIds: [Int64]) throws -> [Int64: BookingPaid] {
        guard !bookingIds.isEmpty else { return [:] }
        let list = Array(repeating: "?", count: bookingIds.count).joined(separator: ", ")
        let ids: SQLArguments = bookingIds.map { $0 }
        let bookings = Dictionary(
            try db.rows("SELECT \(SQLBookings.columns) FROM bookings WHERE tenant_id = ? AND id IN (\(list))", [tenantId] + ids).map(
                SQLBookings.decode
            )
            .map { ($0.id, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        var paid: [Int64: BookingPaid] = [:]
        for row in try db.rows(
            """
            SELECT id, booking_id, store, status, price_milliunits, currency, quantity, outcome_code FROM purchases
            WHERE tenant_id = ? AND booking_id IN (\(list)) AND store IN ('app_store', 'google_play') AND status = 'applied' ORDER BY id
            """,
            [tenantId] + ids
        ) {
            guard let booking = bookings[row["booking_id"]], let rail = OwedPayment.Rail(store: StoreName(rawValue: row["store"])) else { continue }
            let quantity: Int64? = row["quantity"]
            let payment = OwedFacts.StorePayment(
                purchaseId: row["id"],
                store: StoreName(rawValue: row["store"]),
                status: .applied,
                priceMilliunits: row["price_milliunits"],
                currency: row["currency"],
                quantity: quantity.map { Int(clamping: $0) },
                outcomeCode: nil
            )
            let (amount, _, _) = OwedRules.amount(payment, booking: booking)
            var entry = paid[booking.id] ?? BookingPaid(rails: [], amountMinor: 0)
            if !entry.rails.contains(rail) { entry.rails.append(rail) }
            entry.amountMinor = Overview.sum(entry.amountMinor, amount)
            paid[booking.id] = entry
        }
        for row in try db.rows(
            """
            SELECT booking_id, amount_minor, amount_refunded FROM card_payments
            WHERE tenant_id = ? AND booking_id IN (\(list)) AND purpose = 'booking' AND status = 'succeeded' ORDER BY id
            """,
            [tenantId] + ids
        ) {
            let amount: Int64 = row["amount_minor"], refunded: Int64 = row["amount_refunded"]
            let (left, overflow) = amount.subtractingReportingOverflow(refunded)
            var entry = paid[row["booking_id"]] ?? BookingPaid(rails: [], amountMinor: 0)
            if !entry.rails.contains(.card) { entry.rails.append(.card) }
            entry.amountMinor = Overview.sum(entry.amountMinor, overflow ? 0 : max(0, left))
            paid[row["booking_id"]] = entry
        }
        return paid
    }

    func bookingsOverlapping(tenantId: String, from: Date, to: Date, resourceId: String?) throws -> [Booking] {
        var sql = """
            SELECT \(SQLBookings.columns) FROM bookings
            WHERE tenant_id = ? AND starts_at < ? AND ends_at > ? AND status IN ('confirmed', 'pending_payment')
            """
        var arguments: SQLArguments = [tenantId, to.epochMilliseconds, from.epochMilliseconds]
        if let resourceId {
            sql += " AND resource_id = ?"
            arguments.append(resourceId)
        }
        sql += " ORDER BY starts_at, id LIMIT 5000"
        return try db.rows(sql, arguments).map(SQLBookings.decode)
    }

    func resolveOwed(tenantId: String, bookingId: Int64, resolved: OwedPayment.Resolved) throws -> Bool {
        try db.run(
            """
            INSERT INTO owed_resolutions (tenant_id, booking_id, how, note, actor, resolved_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT DO NOTHING
            """,
            [tenantId, bookingId, resolved.how.rawValue, resolved.note, resolved.actor, resolved.at.epochMilliseconds]
        ) == 1
    }
}

import Domain
import Foundation

/// Operators' search, a customer's timeline and the overview's figures (SQLite and PostgreSQL).
struct SQLOperatorViews: OperatorViewRepository {
    let db: any SQLExecutor

    private static func money(_ milliunits: Int64?, _ currency: String?) -> String {
        guard let milliunits, let currency else { return "" }
        var minor = milliunits
        for _ in CurrencyUnits.fractionDigits(currency)..<3 { minor /= 10 }
        return CurrencyUnits.text(minor: minor, currency: currency)
    }

    private func purchaseHit(_ row: SQLRow, matched: String) -> SearchHit {
        let id: Int64 = row["id"]
        let price = Self.money(row["price_milliunits"], row["currency"])
        let store: String = row["store"], product: String = row["product_id"], status: String = row["status"],
            environment: String = row["environment"]
        return SearchHit(
            kind: .purchase,
            id: String(id),
            matched: matched,
            userId: row["user_id"],
            bookingId: row["booking_id"],
            purchaseId: id,
            summary: "purchase of \(product) · \(store) \(environment)\(price.isEmpty ? "" : " · \(price)") · \(status)",
            at: row.date("purchased_at"),
            amount: price.isEmpty ? nil : price
        )
    }

    private func bookingHit(_ row: SQLRow, matched: String) -> SearchHit {
        let id: Int64 = row["id"]
        let reference: String? = row["reference"]
        let resource: String = row["resource_id"], status: String = row["status"]
        return SearchHit(
            kind: .booking,
            id: String(id),
            matched: matched,
            userId: row["user_id"],
            bookingId: id,
            purchaseId: row["purchase_id"],
            summary: "booking \(reference ?? String(id)) · \(resource) · \(status)",
            at: row.date("starts_at"),
            amount: CurrencyUnits.text(minor: row["price_minor"], currency: row["currency"])
        )
    }

    static let purchaseColumns = "id, user_id, booking_id, store, environment, product_id, status, price_milliunits, currency, purchased_at"
    static let bookingColumns = "id, user_id, reference, resource_id, status, starts_at, purchase_id, price_minor, currency"

    func search(tenantId: String, text: String, reference: String?, limit: Int) throws -> [SearchHit] {
        var hits: [SearchHit] = []
        if let reference {
            hits += try db.rows("SELECT \(Self.bookingColumns) FROM bookings WHERE tenant_id = ? AND reference = ?", [tenantId, reference])
                .map { bookingHit($0, matched: "reference") }
        }
        if let number = Int64(text), number > 0 {
            hits += try db.rows("SELECT \(Self.bookingColumns) FROM bookings WHERE tenant_id = ? AND id = ?", [tenantId, number])
                .map { bookingHit($0, matched: "id") }
            hits += try db.rows("SELECT \(Self.purchaseColumns) FROM purchases WHERE tenant_id = ? AND id = ?", [tenantId, number])
                .map { purchaseHit($0, matched: "id") }
        }
        hits += try db.rows(
            "SELECT \(Self.purchaseColumns) FROM purchases WHERE tenant_id = ? AND transaction_id = ? ORDER BY purchased_at DESC LIMIT ?",
            [tenantId, text, limit]
        ).map { purchaseHit($0, matched: "transactionId") }
        hits += try db.rows(
            """
            SELECT \(Self.purchaseColumns) FROM purchases WHERE tenant_id = ? AND original_transaction_id = ? AND transaction_id <> ?
            ORDER BY purchased_at DESC LIMIT ?
            """,
            [tenantId, text, text, limit]
        ).map { purchaseHit($0, matched: "originalTransactionId") }
        hits += try db.rows(
            "SELECT \(Self.purchaseColumns) FROM purchases WHERE tenant_id = ? AND order_id = ? ORDER BY purchased_at DESC LIMIT ?",
            [tenantId, text, limit]
        ).map { purchaseHit($0, matched: "orderId") }
        hits += try db.rows(
            """
            SELECT id, booking_id, user_id, purpose, amount_minor, currency, status, created_at FROM card_payments
            WHERE tenant_id = ? AND provider_ref = ? ORDER BY created_at DESC LIMIT ?
            """,
            [tenantId, text, limit]
        ).map { row in
            let id: Int64 = row["id"], amount: Int64 = row["amount_minor"], currency: String = row["currency"], status: String = row["status"],
                purpose: String = row["purpose"]
            return SearchHit(
                kind: .cardPayment,
                id: String(id),
                matched: "paymentIntent",
                userId: row["user_id"],
                bookingId: row["booking_id"],
                summary: "card \(purpose) · \(CurrencyUnits.text(minor: amount, currency: currency.uppercased())) · \(status)",
                at: row.date("created_at"),
                amount: CurrencyUnits.text(minor: amount, currency: currency.uppercased())
            )
        }
        hits += try db.rows(
            """
            SELECT id, user_id, booking_id, product_id, store, status, reason_code, first_seen_at FROM unapplied_payments
            WHERE tenant_id = ? AND (transaction_id = ? OR original_transaction_id = ?) ORDER BY first_seen_at DESC LIMIT ?
            """,
            [tenantId, text, text, limit]
        ).map { row in
            let id: Int64 = row["id"], product: String = row["product_id"], status: String = row["status"], reason: String = row["reason_code"]
            return SearchHit(
                kind: .unappliedPayment,
                id: String(id),
                matched: "transactionId",
                userId: row["user_id"],
                bookingId: row["booking_id"],
                summary: "unapplied payment of \(product) · \(reason) · \(status)",
                at: row.date("first_seen_at")
            )
        }
        // A user id: anyone the tenant has bookings, purchases, credits, subscriptions or grants of.
        let known = try db.row(
            """
            SELECT 1 AS known WHERE EXISTS (SELECT 1 FROM purchases WHERE tenant_id = ? AND user_id = ?)
                OR EXISTS (SELECT 1 FROM bookings WHERE tenant_id = ? AND user_id = ?)
                OR EXISTS (SELECT 1 FROM credit_ledger WHERE tenant_id = ? AND user_id = ?)
                OR EXISTS (SELECT 1 FROM subscriptions WHERE tenant_id = ? AND user_id = ?)
                OR EXISTS (SELECT 1 FROM entitlement_grants WHERE tenant_id = ? AND user_id = ?)
            """,
            [tenantId, text, tenantId, text, tenantId, text, tenantId, text, tenantId, text]
        )
        if known != nil {
            hits.append(SearchHit(kind: .user, id: text, matched: "userId", userId: text, summary: "customer \(text)", at: nil))
        }
        var seen = Set<String>()
        return Array(hits.filter { seen.insert("\($0.kind.rawValue):\($0.id)").inserted }.prefix(limit))
    }

    func purchases(tenantId: String, transactionIds: [String]) throws -> [SearchHit] {
        guard !transactionIds.isEmpty else { return [] }
        let marks = Array(repeating: "?", count: transactionIds.count).joined(separator: ", ")
        var arguments: SQLArguments = [tenantId]
        for id in transactionIds { arguments += [id] }
        return try db.rows(
            "SELECT \(Self.purchaseColumns) FROM purchases WHERE tenant_id = ? AND transaction_id IN (\(marks)) ORDER BY purchased_at DESC",
            arguments
        ).map { purchaseHit($0, matched: "appleOrderId") }
    }

    /// Everything that happened to one user, newest first: purchases, bookings and their changes,
    /// credits, subscriptions and the store notifications that moved them, grants, unapplied and
    /// card payments, consent (the words are the Domain's, from each entry's kind and detail).
    func timeline(tenantId: String, userId: String, limit: Int) throws -> [TimelineEntry] {
        let (purchases, transactions) = try purchaseEntries(tenantId: tenantId, userId: userId, limit: limit)
        let (bookings, bookingIds) = try bookingEntries(tenantId: tenantId, userId: userId, limit: limit)
        let (subscriptions, originals) = try subscriptionEntries(tenantId: tenantId, userId: userId, limit: limit)
        var entries = purchases + bookings + subscriptions
        entries += try bookingChangeEntries(tenantId: tenantId, bookingIds: bookingIds, limit: limit)
        entries += try creditEntries(tenantId: tenantId, userId: userId, limit: limit)
        // The store notifications that moved this user's purchases and subscriptions.
        entries += try notificationEntries(tenantId: tenantId, transactions: Array(Set(transactions + originals)).sorted(), limit: limit)
        entries += try grantEntries(tenantId: tenantId, userId: userId, limit: limit)
        entries += try unappliedEntries(tenantId: tenantId, userId: userId, limit: limit)
        entries += try cardEntries(tenantId: tenantId, userId: userId, limit: limit)
        entries += try consentEntries(tenantId: tenantId, userId: userId)
        return entries.sorted { ($0.at, $0.kind) > ($1.at, $1.kind) }
    }

    /// A user's purchases, and the transaction ids they name (original ones included).
    private func purchaseEntries(tenantId: String, userId: String, limit: Int) throws -> ([TimelineEntry], [String]) {
        var entries: [TimelineEntry] = []
        let purchases = try db.rows(
            """
            SELECT id, booking_id, store, environment, transaction_id, original_transaction_id, product_id, status, outcome_code, price_milliunits, currency,
                   quantity, credits, target_kind, order_id, purchased_at
            FROM purchases WHERE tenant_id = ? AND user_id = ? ORDER BY purchased_at DESC LIMIT ?
            """,
            [tenantId, userId, limit]
        )
        for row in purchases {
            let product: String = row["product_id"], store: String = row["store"], environment: String = row["environment"],
                status: String = row["status"]
            let price = Self.money(row["price_milliunits"], row["currency"])
            var detail = [
                "store": store, "environment": environment, "productId": product, "status": status, "transactionId": row["transaction_id"] as String,
                "originalTransactionId": row["original_transaction_id"] as String,
            ]
            if !price.isEmpty { detail["amount"] = price }
            if let milliunits: Int64 = row["price_milliunits"], let currency: String = row["currency"] {
                detail["priceMilliunits"] = String(milliunits)
                detail["currency"] = currency
            }
            if let code: String = row["outcome_code"] { detail["outcomeCode"] = code }
            if let order: String = row["order_id"] { detail["orderId"] = order }
            if let kind: String = row["target_kind"] { detail["kind"] = kind }
            entries.append(
                TimelineEntry(
                    kind: "purchase",
                    at: row.date("purchased_at"),
                    summary: "",
                    detail: detail,
                    bookingId: row["booking_id"],
                    purchaseId: row["id"]
                )
            )
        }
        let transactions = purchases.map { $0["transaction_id"] as String } + purchases.map { $0["original_transaction_id"] as String }
        return (entries, transactions)
    }

    private func bookingEntries(tenantId: String, userId: String, limit: Int) throws -> ([TimelineEntry], [Int64]) {
        var entries: [TimelineEntry] = []
        let bookings = try db.rows(
            """
            SELECT id, reference, resource_id, resource_kind, status, status_reason, starts_at, ends_at, seats, price_minor, currency, time_zone, created_at
            FROM bookings WHERE tenant_id = ? AND user_id = ? ORDER BY created_at DESC LIMIT ?
            """,
            [tenantId, userId, limit]
        )
        var bookingIds: [Int64] = []
        for row in bookings {
            let id: Int64 = row["id"]
            bookingIds.append(id)
            let resource: String = row["resource_id"], status: String = row["status"], reference: String = (row["reference"] as String?) ?? String(id)
            let zone = (row["time_zone"] as String?).flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: "UTC") ?? .current
            let start = ZonedTime.format(row.date("starts_at"), in: zone)
            var detail = [
                "reference": reference, "resourceId": resource, "status": status, "localStart": start, "timeZone": ZonedTime.name(zone),
                "localEnd": ZonedTime.format(row.date("ends_at"), in: zone), "resourceKind": row["resource_kind"] as String,
                "seats": String(row["seats"] as Int64),
                "price": CurrencyUnits.text(minor: row["price_minor"], currency: row["currency"]),
            ]
            if let reason: String = row["status_reason"] { detail["reason"] = reason }
            entries.append(
                TimelineEntry(
                    kind: "booking",
                    at: row.date("created_at"),
                    summary: "",
                    detail: detail,
                    bookingId: id
                )
            )
        }
        return (entries, bookingIds)
    }

    /// The audit trail and the webhook events of a user's bookings.
    private func bookingChangeEntries(tenantId: String, bookingIds: [Int64], limit: Int) throws -> [TimelineEntry] {
        guard !bookingIds.isEmpty else { return [] }
        var entries: [TimelineEntry] = []
        let marks = Array(repeating: "?", count: bookingIds.count).joined(separator: ", ")
        var arguments: SQLArguments = [tenantId]
        for id in bookingIds { arguments += [id] }
        let changes = try db.rows(
            """
            SELECT action, actor, booking_id, purchase_id, detail, at FROM audit_log
            WHERE tenant_id = ? AND booking_id IN (\(marks)) AND action <> 'booking.created' ORDER BY at DESC LIMIT \(limit)
            """,
            arguments
        )
        for row in changes {
            let action: String = row["action"], actor: String = row["actor"]
            var detail = ["action": action, "actor": actor]
            if let text: String = row["detail"], let data = text.data(using: .utf8),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            {
                for (key, value) in object { detail[key] = "\(value)" }
            }
            entries.append(
                TimelineEntry(
                    kind: "booking_change",
                    at: row.date("at"),
                    summary: "",
                    detail: detail,
                    bookingId: row["booking_id"],
                    purchaseId: row["purchase_id"]
                )
            )
        }
        let hooks = try db.rows(
            """
            SELECT event_type, status, attempts, delivered_at, dead_at, created_at, subject FROM webhook_outbox
            WHERE tenant_id = ? AND subject IN (\(bookingIds.map { _ in "?" }.joined(separator: ", "))) ORDER BY created_at DESC LIMIT \(limit)
            """,
            ([tenantId] as SQLArguments) + bookingIds.map { WebhookEvent.bookingSubject($0) as (any SQLBindable)? }
        )
        entries += hooks.map(Self.webhookEntry)
        return entries
    }

    /// Credit webhook events and ledger lines.
    private func creditEntries(tenantId: String, userId: String, limit: Int) throws -> [TimelineEntry] {
        var entries: [TimelineEntry] = []
        let creditHooks = try db.rows(
            """
            SELECT event_type, status, attempts, delivered_at, dead_at, created_at, subject FROM webhook_outbox
            WHERE tenant_id = ? AND subject LIKE ? ESCAPE '!' ORDER BY created_at DESC LIMIT ?
            """,
            [tenantId, "credits:%:" + Self.likeLiteral(userId), limit]
        )
        entries += creditHooks.filter { ($0["subject"] as String?)?.hasSuffix(":\(userId)") == true }.map(Self.webhookEntry)
        let ledger = try db.rows(
            """
            SELECT id, credit_type, type, amount, balance_after, status, actor, reason, product_id, purchase_id, created_at FROM credit_ledger
            WHERE tenant_id = ? AND user_id = ? ORDER BY created_at DESC LIMIT ?
            """,
            [tenantId, userId, limit]
        )
        for row in ledger {
            let type: String = row["type"], amount: Int64 = row["amount"], balance: Int64 = row["balance_after"],
                creditType: String = row["credit_type"]
            var detail = [
                "type": type, "amount": String(amount), "balanceAfter": String(balance), "creditType": creditType, "actor": row["actor"] as String,
                "status": row["status"] as String,
            ]
            if let reason: String = row["reason"] { detail["reason"] = reason }
            entries.append(
                TimelineEntry(
                    kind: "credits",
                    at: row.date("created_at"),
                    summary: "",
                    detail: detail,
                    purchaseId: row["purchase_id"]
                )
            )
        }
        return entries
    }

    /// A user's subscriptions, and their original transaction ids.
    private func subscriptionEntries(tenantId: String, userId: String, limit: Int) throws -> ([TimelineEntry], [String]) {
        var entries: [TimelineEntry] = []
        let subscriptions = try db.rows(
            """
            SELECT original_transaction_id, product_id, store, environment, expires_at, revoked_at, ended, auto_renew, created_at, updated_at
            FROM subscriptions WHERE tenant_id = ? AND user_id = ? ORDER BY created_at DESC LIMIT ?
            """,
            [tenantId, userId, limit]
        )
        var originals: [String] = []
        for row in subscriptions {
            let original: String = row["original_transaction_id"], product: String = row["product_id"], store: String = row["store"]
            originals.append(original)
            var detail = [
                "originalTransactionId": original, "productId": product, "store": store, "environment": row["environment"] as String,
                "ended": (row["ended"] as Int64) != 0 ? "true" : "false",
            ]
            if let expires = row.optionalDate("expires_at") {
                detail["expiresAt"] = UTCTimestamp.format(epochMilliseconds: expires.epochMilliseconds, milliseconds: false)
            }
            if let revoked = row.optionalDate("revoked_at") {
                detail["revokedAt"] = UTCTimestamp.format(epochMilliseconds: revoked.epochMilliseconds, milliseconds: false)
            }
            entries.append(
                TimelineEntry(kind: "subscription", at: row.date("created_at"), summary: "", detail: detail)
            )
        }
        return (entries, originals)
    }

    private func notificationEntries(tenantId: String, transactions: [String], limit: Int) throws -> [TimelineEntry] {
        guard !transactions.isEmpty else { return [] }
        var entries: [TimelineEntry] = []
        let marks = Array(repeating: "?", count: transactions.count).joined(separator: ", ")
        let notifications = try db.rows(
            """
            SELECT notification_type, subtype, environment, transaction_id, outcome, received_at FROM apple_notifications
            WHERE tenant_id = ? AND transaction_id IN (\(marks)) ORDER BY received_at DESC LIMIT \(limit)
            """,
            ([tenantId] as SQLArguments) + transactions.map { $0 as (any SQLBindable)? }
        )
        for row in notifications {
            let type: String = row["notification_type"], outcome: String = row["outcome"]
            let subtype: String? = row["subtype"]
            entries.append(
                TimelineEntry(
                    kind: "notification",
                    at: row.date("received_at"),
                    summary: "",
                    detail: [
                        "type": type, "subtype": subtype ?? "", "outcome": outcome, "environment": row["environment"] as String,
                        "transactionId": (row["transaction_id"] as String?) ?? "",
                    ]
                )
            )
        }
        return entries
    }

    private func grantEntries(tenantId: String, userId: String, limit: Int) throws -> [TimelineEntry] {
        var entries: [TimelineEntry] = []
        let grants = try db.rows(
            """
            SELECT entitlement, source, reference, product_id, starts_at, ends_at, state, ended_reason FROM entitlement_grants
            WHERE tenant_id = ? AND user_id = ? ORDER BY starts_at DESC LIMIT ?
            """,
            [tenantId, userId, limit]
        )
        for row in grants {
            let entitlement: String = row["entitlement"], source: String = row["source"], state: String = row["state"]
            var detail = ["entitlement": entitlement, "source": source, "reference": row["reference"] as String, "state": state]
            if let reason: String = row["ended_reason"] { detail["endedReason"] = reason }
            entries.append(
                TimelineEntry(kind: "grant", at: row.date("starts_at"), summary: "", detail: detail)
            )
        }
        return entries
    }

    private func unappliedEntries(tenantId: String, userId: String, limit: Int) throws -> [TimelineEntry] {
        var entries: [TimelineEntry] = []
        let unapplied = try db.rows(
            """
            SELECT id, product_id, store, reason_code, reason, status, first_seen_at, note FROM unapplied_payments
            WHERE tenant_id = ? AND user_id = ? ORDER BY first_seen_at DESC LIMIT ?
            """,
            [tenantId, userId, limit]
        )
        for row in unapplied {
            let product: String = row["product_id"], status: String = row["status"], code: String = row["reason_code"]
            var detail = [
                "productId": product, "store": row["store"] as String, "reasonCode": code, "reason": row["reason"] as String, "status": status,
                "id": String(row["id"] as Int64),
            ]
            if let note: String = row["note"] { detail["note"] = note }
            entries.append(
                TimelineEntry(
                    kind: "unapplied_payment",
                    at: row.date("first_seen_at"),
                    summary: "",
                    detail: detail
                )
            )
        }
        return entries
    }

    /// Card payments and their refunds.
    private func cardEntries(tenantId: String, userId: String, limit: Int) throws -> [TimelineEntry] {
        var entries: [TimelineEntry] = []
        let cards = try db.rows(
            """
            SELECT id, booking_id, purpose, amount_minor, currency, status, amount_refunded, provider_ref, created_at FROM card_payments
            WHERE tenant_id = ? AND user_id = ? ORDER BY created_at DESC LIMIT ?
            """,
            [tenantId, userId, limit]
        )
        var paymentIds: [Int64] = []
        for row in cards {
            paymentIds.append(row["id"])
            let amount: Int64 = row["amount_minor"], currency: String = row["currency"], status: String = row["status"],
                purpose: String = row["purpose"]
            entries.append(
                TimelineEntry(
                    kind: "card_payment",
                    at: row.date("created_at"),
                    summary: "",
                    detail: [
                        "purpose": purpose, "amount": String(amount), "currency": currency, "status": status,
                        "paymentIntent": (row["provider_ref"] as String?) ?? "", "refunded": String(row["amount_refunded"] as Int64),
                    ],
                    bookingId: row["booking_id"]
                )
            )
        }
        if !paymentIds.isEmpty {
            let refunds = try db.rows(
                """
                SELECT r.amount_minor, r.status, r.reason, r.actor, r.created_at, p.currency, p.booking_id FROM card_refunds r
                JOIN card_payments p ON p.id = r.payment_id WHERE r.tenant_id = ? AND r.payment_id IN (\(paymentIds.map { _ in "?" }.joined(separator: ", ")))
                ORDER BY r.created_at DESC LIMIT \(limit)
                """,
                ([tenantId] as SQLArguments) + paymentIds.map { $0 as (any SQLBindable)? }
            )
            for row in refunds {
                let amount: Int64 = row["amount_minor"], currency: String = row["currency"], reason: String = row["reason"],
                    status: String = row["status"]
                entries.append(
                    TimelineEntry(
                        kind: "refund",
                        at: row.date("created_at"),
                        summary: "",
                        detail: [
                            "amount": String(amount), "currency": currency, "reason": reason, "status": status, "actor": row["actor"] as String,
                        ],
                        bookingId: row["booking_id"]
                    )
                )
            }
        }
        return entries
    }

    private func consentEntries(tenantId: String, userId: String) throws -> [TimelineEntry] {
        var entries: [TimelineEntry] = []
        if let consent = try db.row(
            "SELECT consented, text_version, recorded_at FROM consumption_consents WHERE tenant_id = ? AND user_id = ?",
            [tenantId, userId]
        ) {
            let given = (consent["consented"] as Int64) != 0
            entries.append(
                TimelineEntry(
                    kind: "consent",
                    at: consent.date("recorded_at"),
                    summary: "",
                    detail: ["consented": given ? "true" : "false", "textVersion": consent["text_version"] as String]
                )
            )
        }
        return entries
    }

    func customerFacts(tenantId: String, userId: String) throws -> CustomerFacts {
        var facts = CustomerFacts()
        var paid: [String: Int64] = [:], refunded: [String: Int64] = [:]
        for row in try db.rows(
            """
            SELECT currency, COUNT(*) AS n, COALESCE(SUM(price_milliunits), 0) AS total FROM purchases
            WHERE tenant_id = ? AND user_id = ? AND currency IS NOT NULL AND price_milliunits IS NOT NULL GROUP BY currency
            """,
            [tenantId, userId]
        ) {
            let currency: String = row["currency"]
            paid[currency.uppercased()] = Overview.sum(paid[currency.uppercased()] ?? 0, row["total"])
            facts.purchases += Int(row["n"] as Int64)
        }
        facts.purchasesWithoutAmount = try db.count(
            "SELECT COUNT(*) FROM purchases WHERE tenant_id = ? AND user_id = ? AND (currency IS NULL OR price_milliunits IS NULL)",
            [tenantId, userId]
        )
        facts.purchases += facts.purchasesWithoutAmount
        for row in try db.rows(
            """
            SELECT currency, COALESCE(SUM(price_milliunits), 0) AS total FROM purchases
            WHERE tenant_id = ? AND user_id = ? AND status = 'refunded' AND store <> ? AND currency IS NOT NULL AND price_milliunits IS NOT NULL
            GROUP BY currency
            """,
            [tenantId, userId, StoreName.card.rawValue]
        ) {
            let currency = (row["currency"] as String).uppercased()
            refunded[currency] = Overview.sum(refunded[currency] ?? 0, row["total"])
        }
        for row in try db.rows(
            """
            SELECT p.currency, COALESCE(SUM(r.amount_minor), 0) AS total FROM card_refunds r JOIN card_payments p ON p.id = r.payment_id
            WHERE r.tenant_id = ? AND p.user_id = ? AND r.status = 'succeeded' GROUP BY p.currency
            """,
            [tenantId, userId]
        ) {
            let currency = (row["currency"] as String).uppercased()
            refunded[currency] = Overview.sum(refunded[currency] ?? 0, CurrencyUnits.milliunits(minor: row["total"], currency: currency))
        }
        facts.paid = paid.sorted { $0.key < $1.key }.map { CustomerFacts.Amount(currency: $0.key, milliunits: $0.value) }
        facts.refunded = refunded.sorted { $0.key < $1.key }.map { CustomerFacts.Amount(currency: $0.key, milliunits: $0.value) }
        facts.bookings = try db.count("SELECT COUNT(*) FROM bookings WHERE tenant_id = ? AND user_id = ?", [tenantId, userId])
        facts.stores = try db.rows("SELECT DISTINCT store FROM purchases WHERE tenant_id = ? AND user_id = ? ORDER BY store", [tenantId, userId])
            .map { $0["store"] }
        var first: Int64?
        for sql in [
            "SELECT MIN(purchased_at) AS t FROM purchases WHERE tenant_id = ? AND user_id = ?",
            "SELECT MIN(created_at) AS t FROM bookings WHERE tenant_id = ? AND user_id = ?",
            "SELECT MIN(created_at) AS t FROM credit_ledger WHERE tenant_id = ? AND user_id = ?",
            "SELECT MIN(created_at) AS t FROM subscriptions WHERE tenant_id = ? AND user_id = ?",
        ] {
            if let row = try db.row(sql, [tenantId, userId]), let value = row["t"] as Int64? { first = min(first ?? value, value) }
        }
        facts.firstSeen = first.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) }
        return facts
    }

    /// `text` matched literally by LIKE … ESCAPE '!' (a user id may hold `%` or `_`).
    static func likeLiteral(_ text: String) -> String {
        text.replacingOccurrences(of: "!", with: "!!").replacingOccurrences(of: "%", with: "!%").replacingOccurrences(of: "_", with: "!_")
    }

    static func webhookEntry(_ row: SQLRow) -> TimelineEntry {
        let type: String = row["event_type"], status: String = row["status"], attempts: Int64 = row["attempts"]
        let dead = row.optionalDate("dead_at") != nil
        let state = dead ? "given up" : status
        return TimelineEntry(
            kind: "webhook",
            at: row.date("created_at"),
            summary: "",
            detail: ["event": type, "status": state, "attempts": String(attempts), "subject": (row["subject"] as String?) ?? ""]
        )
    }

    func overview(tenantId: String, from: Date, to: Date, now: Date, heldUntil: Date, playOverdueBefore: Date) throws -> OverviewFacts {
        var facts = OverviewFacts()
        let (start, end) = (from.epochMilliseconds, to.epochMilliseconds)
        try money(into: &facts, tenantId: tenantId, start: start, end: end)
        try activity(into: &facts, tenantId: tenantId, start: start, end: end, now: now)
        try slotsAndSubscriptions(into: &facts, tenantId: tenantId, now: now, heldUntil: heldUntil)
        try attention(into: &facts, tenantId: tenantId, playOverdueBefore: playOverdueBefore)
        return facts
    }

    /// Takings and refunds by hour, store, currency and status; purchases without an amount by store.
    private func money(into facts: inout OverviewFacts, tenantId: String, start: Int64, end: Int64) throws {
        for row in try db.rows(
            """
            SELECT store, COUNT(*) AS n FROM purchases
            WHERE tenant_id = ? AND purchased_at >= ? AND purchased_at < ? AND (currency IS NULL OR price_milliunits IS NULL)
            GROUP BY store
            """,
            [tenantId, start, end]
        ) {
            facts.withoutAmount[row["store"]] = row["n"]
        }
        facts.money = try db.rows(
            """
            SELECT purchased_at / 3600000 AS hour, store, currency, status, COUNT(*) AS n, COALESCE(SUM(price_milliunits), 0) AS total FROM purchases
            WHERE tenant_id = ? AND purchased_at >= ? AND purchased_at < ? AND currency IS NOT NULL AND price_milliunits IS NOT NULL
            GROUP BY purchased_at / 3600000, store, currency, status
            """,
            [tenantId, start, end]
        ).map { row in
            OverviewFacts.Money(
                hour: row["hour"],
                store: row["store"],
                currency: row["currency"],
                status: row["status"],
                count: row["n"],
                milliunits: row["total"]
            )
        }
        // Store refunds at the hour they happened; card refunds from the card rail's own records
        // (a partial refund is its part; the card purchase row is left out so nothing counts twice).
        facts.refunds = try db.rows(
            """
            SELECT refunded_at / 3600000 AS hour, store, currency, COUNT(*) AS n, COALESCE(SUM(price_milliunits), 0) AS total FROM purchases
            WHERE tenant_id = ? AND refunded_at >= ? AND refunded_at < ? AND store <> ? AND currency IS NOT NULL AND price_milliunits IS NOT NULL
            GROUP BY refunded_at / 3600000, store, currency
            """,
            [tenantId, start, end, StoreName.card.rawValue]
        ).map { row in
            OverviewFacts.Money(
                hour: row["hour"],
                store: row["store"],
                currency: row["currency"],
                status: "refunded",
                count: row["n"],
                milliunits: row["total"]
            )
        }
        for row in try db.rows(
            """
            SELECT r.updated_at / 3600000 AS hour, p.currency, COUNT(*) AS n, COALESCE(SUM(r.amount_minor), 0) AS total FROM card_refunds r
            JOIN card_payments p ON p.id = r.payment_id
            WHERE r.tenant_id = ? AND r.status = 'succeeded' AND r.updated_at >= ? AND r.updated_at < ?
            GROUP BY r.updated_at / 3600000, p.currency
            """,
            [tenantId, start, end]
        ) {
            let currency = (row["currency"] as String).uppercased()
            facts.refunds.append(
                OverviewFacts.Money(
                    hour: row["hour"],
                    store: StoreName.card.rawValue,
                    currency: currency,
                    status: "refunded",
                    count: row["n"],
                    milliunits: CurrencyUnits.milliunits(minor: row["total"], currency: currency)
                )
            )
        }
    }

    /// New and ended subscriptions, credit packs bought and credits spent, bookings made, by hour.
    private func activity(into facts: inout OverviewFacts, tenantId: String, start: Int64, end: Int64, now: Date) throws {
        func counts(_ sql: String, _ arguments: SQLArguments) throws -> [OverviewFacts.Count] {
            try db.rows(sql, arguments).map { OverviewFacts.Count(hour: $0["hour"], count: $0["n"], amount: ($0["total"] as Int64?) ?? 0) }
        }
        facts.newSubscriptions = try counts(
            """
            SELECT created_at / 3600000 AS hour, COUNT(*) AS n, 0 AS total FROM subscriptions WHERE tenant_id = ? AND created_at >= ? AND created_at < ? GROUP BY created_at / 3600000
            """,
            [tenantId, start, end]
        )
        // Ended: revoked, or expired (and not renewed since) within the period.
        facts.endedSubscriptions = try counts(
            """
            SELECT COALESCE(revoked_at, expires_at) / 3600000 AS hour, COUNT(*) AS n, 0 AS total FROM subscriptions
            WHERE tenant_id = ? AND COALESCE(revoked_at, expires_at) >= ? AND COALESCE(revoked_at, expires_at) < ? AND COALESCE(revoked_at, expires_at) <= ?
            GROUP BY COALESCE(revoked_at, expires_at) / 3600000
            """,
            [tenantId, start, end, now.epochMilliseconds]
        )
        facts.creditPacks = try counts(
            """
            SELECT purchased_at / 3600000 AS hour, COUNT(*) AS n, 0 AS total FROM purchases
            WHERE tenant_id = ? AND target_kind = 'credits' AND purchased_at >= ? AND purchased_at < ? GROUP BY purchased_at / 3600000
            """,
            [tenantId, start, end]
        )
        facts.creditsSpent = try counts(
            """
            SELECT created_at / 3600000 AS hour, COUNT(*) AS n, COALESCE(SUM(-amount), 0) AS total FROM credit_ledger
            WHERE tenant_id = ? AND type = 'usage' AND created_at >= ? AND created_at < ? GROUP BY created_at / 3600000
            """,
            [tenantId, start, end]
        )
        facts.bookingsMade = try counts(
            """
            SELECT created_at / 3600000 AS hour, COUNT(*) AS n,
                   SUM(CASE WHEN purchase_id IS NULL AND paid_quantity = 0 AND confirmed_at IS NULL THEN 1 ELSE 0 END) AS total FROM bookings
            WHERE tenant_id = ? AND created_at >= ? AND created_at < ? GROUP BY created_at / 3600000
            """,
            [tenantId, start, end]
        )
    }

    /// What holds a slot from the start of today to `heldUntil`, and the subscriptions active now.
    private func slotsAndSubscriptions(into facts: inout OverviewFacts, tenantId: String, now: Date, heldUntil: Date) throws {
        // From the start of today (rentals last at most 30 days).
        let todayFloor = now.addingTimeInterval(-Double(Tenant.maximumRentalDays + 2) * 86_400).epochMilliseconds
        facts.held = try db.rows(
            """
            SELECT resource_id, starts_at, ends_at, seats, status FROM bookings
            WHERE tenant_id = ? AND starts_at >= ? AND starts_at < ? AND ends_at > ?
              AND (status = 'confirmed' OR (status = 'pending_payment' AND hold_expires_at > ?))
            ORDER BY starts_at LIMIT 100000
            """,
            [tenantId, todayFloor, heldUntil.epochMilliseconds, now.addingTimeInterval(-86_400).epochMilliseconds, now.epochMilliseconds]
        ).map { row in
            OverviewFacts.Held(
                resourceId: row["resource_id"],
                start: row.date("starts_at"),
                end: row.date("ends_at"),
                seats: row["seats"],
                confirmed: (row["status"] as String) == "confirmed"
            )
        }
        facts.activeSubscriptions = try db.rows(
            """
            SELECT s.product_id, p.currency, p.price_milliunits, COUNT(*) AS n FROM subscriptions s
            LEFT JOIN purchases p ON p.id = (SELECT q.id FROM purchases q WHERE q.tenant_id = s.tenant_id AND q.original_transaction_id = s.original_transaction_id
                                             ORDER BY q.purchased_at DESC LIMIT 1)
            WHERE s.tenant_id = ? AND s.ended = 0 AND s.revoked_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > ?)
            GROUP BY s.product_id, p.currency, p.price_milliunits
            """,
            [tenantId, now.epochMilliseconds]
        ).map { row in
            OverviewFacts.Active(productId: row["product_id"], currency: row["currency"], milliunits: row["price_milliunits"], count: row["n"])
        }
    }

    /// What waits for someone: unapplied payments, dead letters, the webhook backlog, Play
    /// acknowledgements overdue, refunds owed.
    private func attention(into facts: inout OverviewFacts, tenantId: String, playOverdueBefore: Date) throws {
        facts.unappliedPayments = try db.count("SELECT COUNT(*) FROM unapplied_payments WHERE tenant_id = ? AND status = 'open'", [tenantId])
        facts.deadLetters = try db.count("SELECT COUNT(*) FROM webhook_outbox WHERE tenant_id = ? AND dead_at IS NOT NULL", [tenantId])
        facts.webhookBacklog = try db.count(
            "SELECT COUNT(*) FROM webhook_outbox WHERE tenant_id = ? AND status = 'pending' AND dead_at IS NULL",
            [tenantId]
        )
        facts.overduePlayAcknowledgements = try db.count(
            """
            SELECT COUNT(*) FROM play_acknowledgements WHERE tenant_id = ? AND status = 'pending' AND purchased_at < ?
            """,
            [tenantId, playOverdueBefore.epochMilliseconds]
        )
        facts.bookingsNeedingRefund = try db.count(
            "SELECT COUNT(*) FROM bookings WHERE tenant_id = ? AND status = 'payment_needs_refund'",
            [tenantId]
        )
        facts.purchasesNeedingRefund = try db.count("SELECT COUNT(*) FROM purchases WHERE tenant_id = ? AND status = 'needs_refund'", [tenantId])
    }
}

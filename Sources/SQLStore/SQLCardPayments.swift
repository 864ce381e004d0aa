import Domain
import Foundation

/// Card payments, card refunds and payment provider events, written once for both backends.
struct SQLCardPayments: CardPaymentRepository {
    let db: any SQLExecutor

    static let columns = """
        id, tenant_id, booking_id, user_id, purpose, provider, environment, provider_ref, amount_minor, currency, status, provider_status, amount_refunded, \
        amount_captured, capture_before, dispute_status, idempotency_key, purchase_id, next_check_at, check_failures, created_at, updated_at, last_event_at
        """

    func insert(_ p: CardPayment) throws {
        try db.run(
            "INSERT INTO card_payments (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            Self.arguments(p)
        )
    }

    func update(_ p: CardPayment) throws {
        try db.run(
            """
            UPDATE card_payments SET provider_ref = ?, status = ?, provider_status = ?, amount_refunded = ?, amount_captured = ?, capture_before = ?,
                dispute_status = ?, purchase_id = ?, next_check_at = ?, check_failures = ?, updated_at = ?, last_event_at = ?
            WHERE id = ? AND tenant_id = ?
            """,
            [
                p.providerRef, p.status.rawValue, p.providerStatus, p.amountRefunded, p.amountCaptured, p.captureBefore?.epochMilliseconds,
                p.disputeStatus, p.purchaseId, p.nextCheckAt?.epochMilliseconds,
                p.checkFailures, p.updatedAt.epochMilliseconds, p.lastEventAt?.epochMilliseconds, p.id, p.tenantId,
            ]
        )
    }

    func payment(id: Int64, tenantId: String, forUpdate: Bool) throws -> CardPayment? {
        try db.row(
            "SELECT \(Self.columns) FROM card_payments WHERE id = ? AND tenant_id = ?\(forUpdate ? db.dialect.forUpdate : "")",
            [id, tenantId]
        )
        .map(Self.decode)
    }

    func payment(provider: String, providerRef: String, tenantId: String, forUpdate: Bool) throws -> CardPayment? {
        try db.row(
            "SELECT \(Self.columns) FROM card_payments WHERE provider = ? AND provider_ref = ? AND tenant_id = ?\(forUpdate ? db.dialect.forUpdate : "")",
            [provider, providerRef, tenantId]
        ).map(Self.decode)
    }

    func openPayment(bookingId: Int64, purpose: CardPaymentPurpose, tenantId: String, forUpdate: Bool) throws -> CardPayment? {
        try db.row(
            """
            SELECT \(Self.columns) FROM card_payments WHERE tenant_id = ? AND booking_id = ? AND purpose = ? AND status IN ('creating', 'open', 'authorized')\
            \(forUpdate ? db.dialect.forUpdate : "")
            """,
            [tenantId, bookingId, purpose.rawValue]
        ).map(Self.decode)
    }

    func payments(bookingId: Int64, tenantId: String) throws -> [CardPayment] {
        try db.rows(
            "SELECT \(Self.columns) FROM card_payments WHERE tenant_id = ? AND booking_id = ? ORDER BY created_at DESC, id DESC LIMIT 100",
            [tenantId, bookingId]
        ).map(Self.decode)
    }

    func dueChecks(now: Date, limit: Int) throws -> [CardPayment] {
        try db.rows(
            """
            SELECT \(Self.columns) FROM card_payments WHERE status IN ('creating', 'open', 'authorized') AND next_check_at <= ? ORDER BY next_check_at, id LIMIT ?
            """,
            [now.epochMilliseconds, limit]
        ).map(Self.decode)
    }

    static let refundColumns = """
        id, tenant_id, payment_id, provider_ref, amount_minor, status, reason, initiated_by, actor, idempotency_key, attempts, last_error, \
        next_attempt_at, created_at, updated_at
        """

    func insert(_ r: CardRefund) throws {
        try db.run(
            "INSERT INTO card_refunds (\(Self.refundColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                r.id, r.tenantId, r.paymentId, r.providerRef, r.amountMinor, r.status.rawValue, r.reason, r.initiatedBy.rawValue, r.actor,
                r.idempotencyKey,
                r.attempts, r.lastError, r.nextAttemptAt?.epochMilliseconds, r.createdAt.epochMilliseconds, r.updatedAt.epochMilliseconds,
            ]
        )
    }

    func update(_ r: CardRefund) throws {
        try db.run(
            """
            UPDATE card_refunds SET provider_ref = ?, status = ?, attempts = ?, last_error = ?, next_attempt_at = ?, updated_at = ? WHERE id = ? AND tenant_id = ?
            """,
            [
                r.providerRef, r.status.rawValue, r.attempts, r.lastError, r.nextAttemptAt?.epochMilliseconds, r.updatedAt.epochMilliseconds, r.id,
                r.tenantId,
            ]
        )
    }

    func refund(id: Int64, tenantId: String, forUpdate: Bool) throws -> CardRefund? {
        try db.row(
            "SELECT \(Self.refundColumns) FROM card_refunds WHERE id = ? AND tenant_id = ?\(forUpdate ? db.dialect.forUpdate : "")",
            [id, tenantId]
        )
        .map(Self.decodeRefund)
    }

    func refunds(paymentId: Int64, tenantId: String) throws -> [CardRefund] {
        try db.rows(
            "SELECT \(Self.refundColumns) FROM card_refunds WHERE payment_id = ? AND tenant_id = ? ORDER BY created_at, id LIMIT 1000",
            [paymentId, tenantId]
        ).map(Self.decodeRefund)
    }

    func dueRefunds(now: Date, limit: Int) throws -> [CardRefund] {
        try db.rows(
            "SELECT \(Self.refundColumns) FROM card_refunds WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
            [now.epochMilliseconds, limit]
        ).map(Self.decodeRefund)
    }

    func recordEvent(_ e: PaymentEventRecord) throws -> Bool {
        try db.run(
            """
            INSERT INTO payment_events (tenant_id, provider, event_id, type, object_id, created, livemode, received_at, outcome, payload_sha256)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, provider, event_id) DO NOTHING
            """,
            [
                e.tenantId, e.provider, e.eventId, e.type, e.objectId, e.created.epochMilliseconds, e.livemode, e.receivedAt.epochMilliseconds,
                e.outcome,
                e.payloadHash,
            ]
        ) == 1
    }

    func eventOutcome(tenantId: String, provider: String, eventId: String) throws -> String? {
        try db.row("SELECT outcome FROM payment_events WHERE tenant_id = ? AND provider = ? AND event_id = ?", [tenantId, provider, eventId])
            .map { $0["outcome"] }
    }

    func setEventOutcome(_ outcome: String, tenantId: String, provider: String, eventId: String) throws {
        try db.run(
            "UPDATE payment_events SET outcome = ? WHERE tenant_id = ? AND provider = ? AND event_id = ?",
            [outcome, tenantId, provider, eventId]
        )
    }

    static func arguments(_ p: CardPayment) -> SQLArguments {
        [
            p.id, p.tenantId, p.bookingId, p.userId, p.purpose.rawValue, p.provider, p.environment, p.providerRef, p.amountMinor, p.currency,
            p.status.rawValue,
            p.providerStatus, p.amountRefunded, p.amountCaptured, p.captureBefore?.epochMilliseconds, p.disputeStatus, p.idempotencyKey, p.purchaseId,
            p.nextCheckAt?.epochMilliseconds, p.checkFailures, p.createdAt.epochMilliseconds,
            p.updatedAt.epochMilliseconds, p.lastEventAt?.epochMilliseconds,
        ]
    }

    static func decode(_ row: SQLRow) throws -> CardPayment {
        CardPayment(
            id: row["id"],
            tenantId: row["tenant_id"],
            bookingId: row["booking_id"],
            userId: row["user_id"],
            purpose: try row.value(CardPaymentPurpose.self, "purpose"),
            provider: row["provider"],
            environment: row["environment"],
            providerRef: row["provider_ref"],
            amountMinor: row["amount_minor"],
            currency: row["currency"],
            status: try row.value(CardPaymentStatus.self, "status"),
            providerStatus: row["provider_status"],
            amountRefunded: row["amount_refunded"],
            amountCaptured: row["amount_captured"],
            captureBefore: row.optionalDate("capture_before"),
            disputeStatus: row["dispute_status"],
            idempotencyKey: row["idempotency_key"],
            purchaseId: row["purchase_id"],
            nextCheckAt: row.optionalDate("next_check_at"),
            checkFailures: row["check_failures"],
            createdAt: row.date("created_at"),
            updatedAt: row.date("updated_at"),
            lastEventAt: row.optionalDate("last_event_at")
        )
    }

    static func decodeRefund(_ row: SQLRow) throws -> CardRefund {
        CardRefund(
            id: row["id"],
            tenantId: row["tenant_id"],
            paymentId: row["payment_id"],
            providerRef: row["provider_ref"],
            amountMinor: row["amount_minor"],
            status: try row.value(CardRefundStatus.self, "status"),
            reason: row["reason"],
            initiatedBy: try row.value(RefundInitiator.self, "initiated_by"),
            actor: row["actor"],
            idempotencyKey: row["idempotency_key"],
            attempts: row["attempts"],
            lastError: row["last_error"],
            nextAttemptAt: row.optionalDate("next_attempt_at"),
            createdAt: row.date("created_at"),
            updatedAt: row.date("updated_at")
        )
    }
}

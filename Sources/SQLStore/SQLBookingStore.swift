import Domain
import Foundation
import SQLKit

/// The booking and purchase ports on SQL (SQLite through ``SQLiteDatabase``).
/// It stores and reads; every business decision comes in from Domain as a closure or value.
public struct SQLBookingStore: BookingStore, APIKeyStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) {
        self.database = database
    }

    /// Makes sure every catalog tenant has its row (new tenants added, names updated).
    public func syncTenants(_ catalog: Catalog, now: Date) async throws {
        try await database.transaction { sql in
            for tenant in catalog.tenants {
                try await sql.raw("""
                    INSERT INTO tenants (id, name, created_at) VALUES (\(bind: tenant.id), \(bind: tenant.name), \(bind: now.epochMilliseconds))
                    ON CONFLICT (id) DO UPDATE SET name = excluded.name
                    """).run()
            }
        }
    }

    // MARK: - Bookings

    public func createBooking(_ draft: NewBooking, admit: @escaping @Sendable (BookingLoad) throws -> Void) async throws -> Booking {
        try await database.transaction { sql in
            let quote = draft.quote
            let occupancy = try await Self.occupancy(sql, tenantId: draft.tenantId, resourceId: quote.resource.id, start: quote.start, end: quote.end, excluding: nil, now: draft.now)
            let stamp = draft.now.epochMilliseconds
            let userHolds = try await sql.raw("""
                SELECT COUNT(*) AS n FROM bookings WHERE tenant_id = \(bind: draft.tenantId) AND user_id = \(bind: draft.userId)
                AND status = 'pending_payment' AND hold_expires_at > \(bind: stamp)
                """).first()?.decode(column: "n", as: Int.self) ?? 0
            var creatorHolds = 0
            if draft.createdVia.hasPrefix("server:") {
                creatorHolds = try await sql.raw("""
                    SELECT COUNT(*) AS n FROM bookings WHERE tenant_id = \(bind: draft.tenantId) AND created_via = \(bind: draft.createdVia)
                    AND status = 'pending_payment' AND hold_expires_at > \(bind: stamp)
                    """).first()?.decode(column: "n", as: Int.self) ?? 0
            }
            try admit(BookingLoad(occupancy: occupancy, userHolds: userHolds, creatorHolds: creatorHolds))
            let booking = Booking(
                id: RandomID.next(), tenantId: draft.tenantId, userId: draft.userId, resourceId: quote.resource.id,
                resourceKind: quote.resource.kind, start: quote.start, end: quote.end, seats: quote.seats,
                priceMinor: quote.priceMinor, currency: quote.currency, requiredProductId: quote.requiredProductId,
                status: .pendingPayment, holdExpiresAt: draft.holdExpiresAt, createdAt: draft.now, updatedAt: draft.now,
                requiredQuantity: quote.requiredQuantity
            )
            try await sql.raw("""
                INSERT INTO bookings (\(unsafeRaw: Rows.bookingColumns)) VALUES (
                \(bind: booking.id), \(bind: booking.tenantId), \(bind: booking.userId), \(bind: booking.resourceId),
                \(bind: booking.resourceKind.rawValue), \(bind: booking.start.epochMilliseconds), \(bind: booking.end.epochMilliseconds),
                \(bind: booking.seats), \(bind: booking.priceMinor), \(bind: booking.currency), \(bind: booking.requiredProductId),
                \(bind: booking.status.rawValue), \(bind: booking.holdExpiresAt.epochMilliseconds), \(bind: booking.createdAt.epochMilliseconds),
                \(bind: booking.updatedAt.epochMilliseconds), NULL, NULL, NULL, \(bind: booking.requiredQuantity), NULL, \(bind: draft.createdVia))
                """).run()
            try await Self.audit(sql, tenantId: booking.tenantId, actor: "user:\(booking.userId)", action: "booking.created",
                                 bookingId: booking.id, purchaseId: nil, detail: ["requiredProductId": booking.requiredProductId, "price": String(booking.priceMinor)], at: draft.now)
            return booking
        }
    }

    public func booking(id: Int64, tenantId: String) async throws -> Booking? {
        try await database.read { sql in
            try await Self.booking(sql, id: id, tenantId: tenantId)
        }
    }

    public func bookings(tenantId: String, filter: BookingFilter, page: Page) async throws -> (items: [Booking], total: Int) {
        try await database.read { sql in
            func filtered(_ query: SQLSelectBuilder) -> SQLSelectBuilder {
                var query = query.from("bookings").where("tenant_id", .equal, tenantId)
                if let status = filter.status { query = query.where("status", .equal, status.rawValue) }
                if let resource = filter.resourceId { query = query.where("resource_id", .equal, resource) }
                if let user = filter.userId { query = query.where("user_id", .equal, user) }
                if let from = filter.from { query = query.where("ends_at", .greaterThan, from.epochMilliseconds) }
                if let to = filter.to { query = query.where("starts_at", .lessThan, to.epochMilliseconds) }
                return query
            }
            let total = try await filtered(sql.select().column(SQLFunction("COUNT", args: SQLLiteral.all), as: "n"))
                .first()?.decode(column: "n", as: Int.self) ?? 0
            let rows = try await filtered(sql.select().column(SQLRaw(Rows.bookingColumns)))
                .orderBy("created_at", .descending).orderBy("id", .descending)
                .limit(page.limit).offset(page.offset).all()
            return (try rows.map(Rows.booking), total)
        }
    }

    public func changeBookingStatus(
        id: Int64, tenantId: String, to status: BookingStatus, actor: String, reason: String?, now: Date,
        allowed: @escaping @Sendable (Booking, Occupancy) throws -> Void
    ) async throws -> Booking {
        try await database.transaction { sql in
            guard var booking = try await Self.booking(sql, id: id, tenantId: tenantId) else {
                throw DomainError.bookingNotFound(id)
            }
            let occupancy = status == .confirmed
                ? try await Self.occupancy(sql, tenantId: tenantId, resourceId: booking.resourceId, start: booking.start, end: booking.end, excluding: booking.id, now: now)
                : Occupancy.none
            try allowed(booking, occupancy)
            let previous = booking.status
            booking.status = status
            booking.statusReason = reason
            booking.updatedAt = now
            if status == .confirmed { booking.confirmedAt = now }
            try await sql.raw("""
                UPDATE bookings SET status = \(bind: status.rawValue), status_reason = \(bind: reason), updated_at = \(bind: now.epochMilliseconds),
                confirmed_at = \(bind: booking.confirmedAt?.epochMilliseconds) WHERE id = \(bind: id) AND tenant_id = \(bind: tenantId)
                """).run()
            try await Self.audit(sql, tenantId: tenantId, actor: actor, action: status == .confirmed ? "booking.manual_confirm" : "booking.\(status.rawValue)",
                                 bookingId: id, purchaseId: booking.purchaseId, detail: ["from": previous.rawValue, "to": status.rawValue, "reason": reason ?? ""], at: now)
            return booking
        }
    }

    // MARK: - Purchases

    public func applyPurchase(
        _ claim: PurchaseClaim, resource: Resource?, now: Date,
        decide: @escaping @Sendable (PurchaseContext) -> PurchaseDecision
    ) async throws -> PurchaseOutcome {
        try await database.transaction { sql in
            let existing = try await sql.raw("""
                SELECT \(unsafeRaw: Rows.purchaseColumns) FROM purchases
                WHERE store = \(bind: claim.store) AND environment = \(bind: claim.environment) AND transaction_id = \(bind: claim.transactionId)
                """).first().map(Rows.purchase)
            guard var booking = try await Self.booking(sql, id: claim.bookingId, tenantId: claim.tenantId), booking.userId == claim.userId else {
                throw DomainError.bookingNotFound(claim.bookingId)
            }
            var revokedByApple = false
            if existing == nil {
                revokedByApple = try await sql.raw("""
                    SELECT 1 AS found FROM revoked_transactions WHERE tenant_id = \(bind: claim.tenantId) AND store = \(bind: claim.store)
                    AND environment = \(bind: claim.environment) AND transaction_id = \(bind: claim.transactionId)
                    """).first() != nil
            }
            var occupancy = Occupancy.none
            if existing == nil, !revokedByApple, booking.status == .pendingPayment, booking.holdExpiresAt <= now {
                occupancy = try await Self.occupancy(sql, tenantId: claim.tenantId, resourceId: booking.resourceId, start: booking.start, end: booking.end, excluding: booking.id, now: now)
            }
            let decision = decide(PurchaseContext(claim: claim, existing: existing, booking: booking, resource: resource, occupancy: occupancy, now: now,
                                                  revokedByApple: revokedByApple))
            let actor = "user:\(claim.userId)"
            switch decision {
            case .repeatOf(let purchase):
                return PurchaseOutcome(decision: decision, purchase: purchase, booking: booking)

            case .refuse(let code, _):
                try await Self.audit(sql, tenantId: claim.tenantId, actor: actor, action: "purchase.refused", bookingId: claim.bookingId, purchaseId: nil,
                                     detail: ["transactionId": claim.transactionId, "environment": claim.environment, "code": code, "proof": claim.proofKind], at: now)
                let refused = Purchase(
                    id: 0, tenantId: claim.tenantId, userId: claim.userId, bookingId: claim.bookingId, store: claim.store, environment: claim.environment,
                    transactionId: claim.transactionId, originalTransactionId: claim.originalTransactionId, productId: claim.productId,
                    status: .refunded, outcomeCode: code, purchasedAt: claim.purchasedAt, createdAt: now
                )
                return PurchaseOutcome(decision: decision, purchase: refused, booking: booking)

            case .replay(let original, let reason):
                try await sql.raw("""
                    INSERT INTO replay_attempts (id, tenant_id, user_id, booking_id, store, environment, transaction_id, existing_purchase_id, reason, proof_hash, at)
                    VALUES (\(bind: RandomID.next()), \(bind: claim.tenantId), \(bind: claim.userId), \(bind: claim.bookingId), \(bind: claim.store),
                    \(bind: claim.environment), \(bind: claim.transactionId), \(bind: original.id), \(bind: reason), \(bind: claim.proofHash), \(bind: now.epochMilliseconds))
                    """).run()
                try await Self.audit(sql, tenantId: claim.tenantId, actor: actor, action: "replay.detected", bookingId: claim.bookingId,
                                     purchaseId: original.id, detail: ["transactionId": claim.transactionId, "reason": reason], at: now)
                if claim.emitsEvents {
                    try await Self.enqueue(sql, tenantId: claim.tenantId, events: decision.events(booking: booking, purchase: original), now: now)
                }
                return PurchaseOutcome(decision: decision, purchase: original, booking: booking)

            case .confirm, .needsRefund:
                var status = PurchaseStatus.applied
                var outcomeCode: String?
                if case .needsRefund(let code, _, let bookingStatus) = decision {
                    status = .needsRefund
                    outcomeCode = code
                    if let bookingStatus {
                        booking.status = bookingStatus
                        booking.statusReason = code
                    }
                } else {
                    booking.status = .confirmed
                    booking.confirmedAt = now
                    booking.statusReason = nil
                    booking.environment = claim.environment
                }
                let purchase = Purchase(
                    id: RandomID.next(), tenantId: claim.tenantId, userId: claim.userId, bookingId: claim.bookingId,
                    store: claim.store, environment: claim.environment, transactionId: claim.transactionId,
                    originalTransactionId: claim.originalTransactionId, productId: claim.productId, status: status,
                    outcomeCode: outcomeCode, purchasedAt: claim.purchasedAt, createdAt: now,
                    priceMilliunits: claim.priceMilliunits, currency: claim.currency, quantity: claim.quantity
                )
                try await sql.raw("""
                    INSERT INTO purchases (\(unsafeRaw: Rows.purchaseColumns), proof_hash) VALUES (
                    \(bind: purchase.id), \(bind: purchase.tenantId), \(bind: purchase.userId), \(bind: purchase.bookingId), \(bind: purchase.store),
                    \(bind: purchase.environment), \(bind: purchase.transactionId), \(bind: purchase.originalTransactionId), \(bind: purchase.productId),
                    \(bind: purchase.status.rawValue), \(bind: purchase.outcomeCode), \(bind: purchase.purchasedAt.epochMilliseconds),
                    \(bind: purchase.createdAt.epochMilliseconds), \(bind: purchase.priceMilliunits), \(bind: purchase.currency), \(bind: purchase.quantity),
                    \(bind: claim.proofHash))
                    """).run()
                if status == .applied { booking.purchaseId = purchase.id }
                booking.updatedAt = now
                try await sql.raw("""
                    UPDATE bookings SET status = \(bind: booking.status.rawValue), status_reason = \(bind: booking.statusReason),
                    confirmed_at = \(bind: booking.confirmedAt?.epochMilliseconds), purchase_id = \(bind: booking.purchaseId),
                    environment = \(bind: booking.environment), updated_at = \(bind: now.epochMilliseconds) WHERE id = \(bind: booking.id)
                    """).run()
                try await Self.audit(sql, tenantId: claim.tenantId, actor: actor,
                                     action: status == .applied ? "booking.confirmed" : "purchase.needs_refund",
                                     bookingId: booking.id, purchaseId: purchase.id,
                                     detail: ["transactionId": claim.transactionId, "productId": claim.productId, "outcome": outcomeCode ?? "applied"], at: now)
                if claim.emitsEvents {
                    try await Self.enqueue(sql, tenantId: claim.tenantId, events: decision.events(booking: booking, purchase: purchase), now: now)
                }
                return PurchaseOutcome(decision: decision, purchase: purchase, booking: booking)
            }
        }
    }

    public func purchases(tenantId: String, page: Page) async throws -> (items: [Purchase], total: Int) {
        try await list(table: "purchases", columns: Rows.purchaseColumns, order: "created_at", tenantId: tenantId, page: page, decode: Rows.purchase)
    }

    public func replays(tenantId: String, page: Page) async throws -> (items: [ReplayAttempt], total: Int) {
        try await list(table: "replay_attempts", columns: "id, tenant_id, user_id, booking_id, environment, transaction_id, existing_purchase_id, reason, proof_hash, at",
                       order: "at", tenantId: tenantId, page: page, decode: Rows.replay)
    }

    public func audit(tenantId: String, page: Page) async throws -> (items: [AuditEntry], total: Int) {
        try await list(table: "audit_log", columns: "id, tenant_id, actor, action, booking_id, purchase_id, detail, at",
                       order: "at", tenantId: tenantId, page: page, decode: Rows.audit)
    }

    // MARK: - API keys

    public func createKey(tenantId: String, role: APIKeyRole, hash: String, now: Date) async throws -> APIKey {
        try await database.transaction { sql in
            guard try await sql.raw("SELECT id FROM tenants WHERE id = \(bind: tenantId)").first() != nil else {
                throw DomainError(.notFound, "tenant_not_found", "no tenant \(tenantId) in the database; start the server or run migrate with the catalog first")
            }
            let key = APIKey(id: RandomID.next(), tenantId: tenantId, role: role, createdAt: now)
            try await sql.raw("""
                INSERT INTO api_keys (id, tenant_id, role, key_hash, created_at) VALUES
                (\(bind: key.id), \(bind: tenantId), \(bind: role.rawValue), \(bind: hash), \(bind: now.epochMilliseconds))
                """).run()
            try await Self.audit(sql, tenantId: tenantId, actor: "system", action: "api_key.created", bookingId: nil, purchaseId: nil,
                                 detail: ["keyId": String(key.id), "role": role.rawValue], at: now)
            return key
        }
    }

    public func key(hash: String) async throws -> APIKey? {
        try await database.read { sql in
            guard let row = try await sql.raw("SELECT id, tenant_id, role, created_at FROM api_keys WHERE key_hash = \(bind: hash) AND revoked_at IS NULL").first() else {
                return nil
            }
            guard let role = APIKeyRole(rawValue: try row.decode(column: "role", as: String.self)) else { return nil }
            return APIKey(id: try row.decode(column: "id", as: Int64.self), tenantId: try row.decode(column: "tenant_id", as: String.self),
                          role: role, createdAt: Date(epochMilliseconds: try row.decode(column: "created_at", as: Int64.self)))
        }
    }

    // MARK: - Helpers

    private func list<T: Sendable>(
        table: String, columns: String, order: String, tenantId: String, page: Page, decode: @escaping @Sendable (any SQLRow) throws -> T
    ) async throws -> (items: [T], total: Int) {
        try await database.read { sql in
            let total = try await sql.select().column(SQLFunction("COUNT", args: SQLLiteral.all), as: "n").from(table)
                .where("tenant_id", .equal, tenantId).first()?.decode(column: "n", as: Int.self) ?? 0
            let rows = try await sql.select().column(SQLRaw(columns)).from(table).where("tenant_id", .equal, tenantId)
                .orderBy(order, .descending).orderBy("id", .descending).limit(page.limit).offset(page.offset).all()
            return (try rows.map(decode), total)
        }
    }

    static func booking(_ sql: any SQLDatabase, id: Int64, tenantId: String) async throws -> Booking? {
        try await sql.raw("SELECT \(unsafeRaw: Rows.bookingColumns) FROM bookings WHERE id = \(bind: id) AND tenant_id = \(bind: tenantId)")
            .first().map(Rows.booking)
    }

    /// How many bookings (and seats) of a resource hold a slot that overlaps [start, end) at `now`.
    static func occupancy(
        _ sql: any SQLDatabase, tenantId: String, resourceId: String, start: Date, end: Date, excluding: Int64?, now: Date
    ) async throws -> Occupancy {
        // Rentals last at most 30 days: bookings starting earlier than that cannot overlap (keeps the index range short).
        let earliest = start.addingTimeInterval(-TimeInterval(Tenant.maximumRentalDays + 1) * 86_400).epochMilliseconds
        let row = try await sql.raw("""
            SELECT COUNT(*) AS bookings, COALESCE(SUM(seats), 0) AS seats FROM bookings
            WHERE tenant_id = \(bind: tenantId) AND resource_id = \(bind: resourceId)
            AND starts_at > \(bind: earliest) AND starts_at < \(bind: end.epochMilliseconds) AND ends_at > \(bind: start.epochMilliseconds)
            AND (status = 'confirmed' OR (status = 'pending_payment' AND hold_expires_at > \(bind: now.epochMilliseconds)))
            AND id <> \(bind: excluding ?? 0)
            """).first()
        return Occupancy(bookings: try row?.decode(column: "bookings", as: Int.self) ?? 0, seats: try row?.decode(column: "seats", as: Int.self) ?? 0)
    }

    static func audit(
        _ sql: any SQLDatabase, tenantId: String, actor: String, action: String, bookingId: Int64?, purchaseId: Int64?,
        detail: [String: String], at: Date
    ) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(detail), as: UTF8.self)
        try await sql.raw("""
            INSERT INTO audit_log (id, tenant_id, actor, action, booking_id, purchase_id, detail, at) VALUES
            (\(bind: RandomID.next()), \(bind: tenantId), \(bind: actor), \(bind: action), \(bind: bookingId), \(bind: purchaseId), \(bind: text), \(bind: at.epochMilliseconds))
            """).run()
    }
}

import Domain
import Foundation

/// Bookings and slot occupancy (SQLite and PostgreSQL).
struct SQLBookings: BookingRepository {
    let db: any SQLExecutor

    static let columns = """
        id, tenant_id, user_id, resource_id, resource_kind, starts_at, ends_at, seats, price_minor, currency, \
        required_product_id, status, hold_expires_at, created_at, updated_at, confirmed_at, purchase_id, status_reason, \
        required_quantity, environment, created_via, paid_quantity, reference, time_zone, change_of
        """

    static func decode(_ row: SQLRow) throws -> Booking {
        let reference: String? = row["reference"]
        let timeZone: String? = row["time_zone"]
        let changeOf: Int64? = row["change_of"]
        var booking = Booking(
            id: row["id"],
            tenantId: row["tenant_id"],
            userId: row["user_id"],
            resourceId: row["resource_id"],
            resourceKind: try row.value(Resource.Kind.self, "resource_kind"),
            start: row.date("starts_at"),
            end: row.date("ends_at"),
            seats: row["seats"],
            priceMinor: row["price_minor"],
            currency: row["currency"],
            requiredProductId: row["required_product_id"],
            status: try row.value(BookingStatus.self, "status"),
            holdExpiresAt: row.date("hold_expires_at"),
            createdAt: row.date("created_at"),
            updatedAt: row.date("updated_at"),
            confirmedAt: row.optionalDate("confirmed_at"),
            purchaseId: row["purchase_id"],
            statusReason: row["status_reason"],
            requiredQuantity: row["required_quantity"],
            environment: row["environment"],
            paidQuantity: row["paid_quantity"],
            reference: reference ?? "",
            timeZone: timeZone
        )
        booking.changeOf = changeOf
        return booking
    }

    func booking(id: Int64, tenantId: String, forUpdate: Bool) throws -> Booking? {
        try db.row("SELECT \(Self.columns) FROM bookings WHERE id = ? AND tenant_id = ?\(forUpdate ? db.dialect.forUpdate : "")", [id, tenantId])
            .map(Self.decode)
    }

    func booking(reference: String, tenantId: String) throws -> Booking? {
        try db.row("SELECT \(Self.columns) FROM bookings WHERE tenant_id = ? AND reference = ?", [tenantId, reference]).map(Self.decode)
    }

    func referenceTaken(_ reference: String, tenantId: String) throws -> Bool {
        try db.row("SELECT 1 AS taken FROM bookings WHERE tenant_id = ? AND reference = ?", [tenantId, reference]) != nil
    }

    func insert(_ b: Booking, createdVia: String, now: Date) throws {
        let occupies = b.holdsSlot(at: now)
        try db.run(
            """
            INSERT INTO bookings (\(Self.columns), occupying) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                b.id, b.tenantId, b.userId, b.resourceId, b.resourceKind.rawValue, b.start.epochMilliseconds, b.end.epochMilliseconds, b.seats,
                b.priceMinor, b.currency, b.requiredProductId, b.status.rawValue, b.holdExpiresAt.epochMilliseconds, b.createdAt.epochMilliseconds,
                b.updatedAt.epochMilliseconds, b.confirmedAt?.epochMilliseconds, b.purchaseId, b.statusReason, b.requiredQuantity, b.environment,
                createdVia, b.paidQuantity, b.reference.isEmpty ? nil : b.reference, b.timeZone, b.changeOf, occupies,
            ]
        )
        try count(b, from: .none, to: SlotShare(b, occupying: occupies))
    }

    func update(_ b: Booking, now: Date) throws {
        let before = try db.row("SELECT occupying, status, seats FROM bookings WHERE id = ?", [b.id]).map {
            SlotShare(
                occupying: ($0["occupying"] as Int) != 0,
                pending: ($0["status"] as String) == BookingStatus.pendingPayment.rawValue,
                seats: $0["seats"]
            )
        }
        let occupies = b.holdsSlot(at: now)
        try db.run(
            """
            UPDATE bookings SET status = ?, status_reason = ?, confirmed_at = ?, purchase_id = ?, environment = ?, updated_at = ?, occupying = ?,
                paid_quantity = ?, hold_expires_at = ?
            WHERE id = ? AND tenant_id = ?
            """,
            [
                b.status.rawValue, b.statusReason, b.confirmedAt?.epochMilliseconds, b.purchaseId, b.environment, b.updatedAt.epochMilliseconds,
                occupies, b.paidQuantity, b.holdExpiresAt.epochMilliseconds, b.id, b.tenantId,
            ]
        )
        try count(b, from: before ?? .none, to: SlotShare(b, occupying: occupies))
    }

    func move(_ booking: Booking, to moved: Booking, now: Date) throws {
        let before = try db.row("SELECT occupying, status, seats FROM bookings WHERE id = ?", [booking.id]).map {
            SlotShare(
                occupying: ($0["occupying"] as Int) != 0,
                pending: ($0["status"] as String) == BookingStatus.pendingPayment.rawValue,
                seats: $0["seats"]
            )
        }
        let occupies = moved.holdsSlot(at: now)
        try db.run(
            """
            UPDATE bookings SET resource_id = ?, starts_at = ?, ends_at = ?, price_minor = ?, required_product_id = ?, required_quantity = ?,
                time_zone = ?, status_reason = ?, updated_at = ?, occupying = ?
            WHERE id = ? AND tenant_id = ?
            """,
            [
                moved.resourceId, moved.start.epochMilliseconds, moved.end.epochMilliseconds, moved.priceMinor, moved.requiredProductId,
                moved.requiredQuantity, moved.timeZone, moved.statusReason, moved.updatedAt.epochMilliseconds, occupies, moved.id, moved.tenantId,
            ]
        )
        try count(booking, from: before ?? .none, to: .none)
        try count(moved, from: .none, to: SlotShare(moved, occupying: occupies))
    }

    func absorb(_ hold: Booking, into original: Booking, moved: Booking, now: Date) throws {
        let before = try db.row("SELECT occupying, status, seats FROM bookings WHERE id = ? AND tenant_id = ?", [hold.id, hold.tenantId]).map {
            SlotShare(
                occupying: ($0["occupying"] as Int) != 0,
                pending: ($0["status"] as String) == BookingStatus.pendingPayment.rawValue,
                seats: $0["seats"]
            )
        }
        try db.run(
            "UPDATE purchases SET booking_id = ?, target_ref = ? WHERE tenant_id = ? AND booking_id = ?",
            [original.id, String(original.id), hold.tenantId, hold.id]
        )
        try db.run("UPDATE card_payments SET booking_id = ? WHERE tenant_id = ? AND booking_id = ?", [original.id, hold.tenantId, hold.id])
        try db.run("UPDATE unapplied_payments SET booking_id = ? WHERE tenant_id = ? AND booking_id = ?", [original.id, hold.tenantId, hold.id])
        try count(hold, from: before ?? .none, to: .none)
        try db.run("DELETE FROM bookings WHERE id = ? AND tenant_id = ?", [hold.id, hold.tenantId])
        try move(original, to: moved, now: now)
    }

    func changeHold(of bookingId: Int64, tenantId: String, now: Date) throws -> Booking? {
        try db.row(
            """
            SELECT \(Self.columns) FROM bookings WHERE tenant_id = ? AND change_of = ? AND status = 'pending_payment' AND hold_expires_at > ?
            ORDER BY created_at DESC LIMIT 1
            """,
            [tenantId, bookingId, now.epochMilliseconds]
        ).map(Self.decode)
    }

    /// What one booking adds to its slot's row of `slot_occupancy`: while it occupies the slot, one
    /// booking, its seats, and one unpaid hold if it is still pending payment.
    struct SlotShare: Equatable {
        var bookings = 0
        var seats = 0
        var holds = 0

        static let none = SlotShare()

        init() {}

        init(occupying: Bool, pending: Bool, seats: Int) {
            guard occupying else { return }
            bookings = 1
            self.seats = seats
            holds = pending ? 1 : 0
        }

        init(_ booking: Booking, occupying: Bool) {
            self.init(occupying: occupying, pending: booking.status == .pendingPayment, seats: booking.seats)
        }
    }

    /// Moves a booking's share of its slot from `before` to `after`.
    private func count(_ b: Booking, from before: SlotShare, to after: SlotShare) throws {
        guard before != after else { return }
        if before.bookings == after.bookings, before.seats == after.seats {
            // Paid (or a paid booking back to pending): only the unpaid holds change, on a row that exists.
            try db.run(
                "UPDATE slot_occupancy SET holds = holds + ? WHERE tenant_id = ? AND resource_id = ? AND starts_at = ? AND ends_at = ?",
                [after.holds - before.holds, b.tenantId, b.resourceId, b.start.epochMilliseconds, b.end.epochMilliseconds]
            )
            return
        }
        try count(
            tenantId: b.tenantId,
            resourceId: b.resourceId,
            start: b.start.epochMilliseconds,
            end: b.end.epochMilliseconds,
            bookings: after.bookings - before.bookings,
            seats: after.seats - before.seats,
            holds: after.holds - before.holds
        )
    }

    private func count(tenantId: String, resourceId: String, start: Int64, end: Int64, bookings: Int, seats: Int, holds: Int) throws {
        try db.run(
            """
            INSERT INTO slot_occupancy (tenant_id, resource_id, starts_at, ends_at, bookings, seats, holds) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, resource_id, starts_at, ends_at) DO UPDATE SET bookings = slot_occupancy.bookings + excluded.bookings,
                seats = slot_occupancy.seats + excluded.seats, holds = slot_occupancy.holds + excluded.holds
            """,
            [tenantId, resourceId, start, end, bookings, seats, holds]
        )
        if bookings < 0 {
            try db.run(
                "DELETE FROM slot_occupancy WHERE tenant_id = ? AND resource_id = ? AND starts_at = ? AND ends_at = ? AND bookings <= 0",
                [tenantId, resourceId, start, end]
            )
        }
    }

    func admit(tenantId: String, resourceId: String, start: Date, end: Date, excluding: Int64?, now: Date) throws -> Occupancy {
        try takeTurn(tenantId: tenantId, resourceId: resourceId, now: now)
        return try occupancy(tenantId: tenantId, resourceId: resourceId, start: start, end: end, excluding: excluding)
    }

    func takeTurn(tenantId: String, resourceId: String, now: Date) throws {
        let stamp = now.epochMilliseconds
        // Admissions to one resource take turns from here to their commit (no overbooking when
        // several instances admit at once).
        try db.lock("occupancy:\(tenantId):\(resourceId)")
        // Release the holds of this resource that expired by now (each is released once).
        let expired = try db.rows(Admission.expiredHolds, [tenantId, resourceId, stamp])
        for row in expired {
            try db.run("UPDATE bookings SET occupying = 0 WHERE id = ?", [row["id"] as Int64])
            let seats: Int = row["seats"]
            try count(
                tenantId: tenantId,
                resourceId: resourceId,
                start: row["starts_at"],
                end: row["ends_at"],
                bookings: -1,
                seats: -seats,
                holds: -1
            )
        }
    }

    /// What the others hold of the span, as of this unit's turn (``admit(tenantId:resourceId:start:end:excluding:now:)``).
    private func occupancy(tenantId: String, resourceId: String, start: Date, end: Date, excluding: Int64?) throws -> Occupancy {
        // Rentals last at most 30 days: slots starting earlier than that cannot overlap (keeps the range short).
        let earliest = start.addingTimeInterval(-TimeInterval(Tenant.maximumRentalDays + 1) * 86_400).epochMilliseconds
        let row = try db.row(Admission.slotOccupancy, [tenantId, resourceId, earliest, end.epochMilliseconds, start.epochMilliseconds])
        var occupancy = Occupancy(bookings: row?["bookings"] ?? 0, seats: row?["seats"] ?? 0)
        // The excluded booking's own share is taken out only where it was counted: its slot overlaps
        // this span (a booking moving to another day is not counted there).
        if let excluding,
            let own = try db.row(
                "SELECT seats FROM bookings WHERE id = ? AND resource_id = ? AND occupying = 1 AND starts_at > ? AND starts_at < ? AND ends_at > ?",
                [excluding, resourceId, earliest, end.epochMilliseconds, start.epochMilliseconds]
            )
        {
            occupancy.bookings -= 1
            occupancy.seats -= own["seats"] as Int
        }
        return occupancy
    }

    func activeHolds(tenantId: String, userId: String, now: Date, upTo limit: Int) throws -> Int {
        try db.lock("holds:\(tenantId):user:\(userId)")
        return try db.count(Admission.userHolds, [tenantId, userId, now.epochMilliseconds, limit])
    }

    func activeHolds(tenantId: String, createdVia: String, now: Date, upTo limit: Int) throws -> Int {
        try db.lock("holds:\(tenantId):via:\(createdVia)")
        return try db.count(Admission.creatorHolds, [tenantId, createdVia, now.epochMilliseconds, limit])
    }

    func activeHolds(tenantId: String, resourceId: String, start: Date, end: Date, now: Date, upTo limit: Int) throws -> Int {
        try db.lock("holds:\(tenantId):resource:\(resourceId)")
        // Bookings last at most 30 days: one starting earlier than that cannot overlap. Without this
        // bound the index range was every booking of the resource before `end`, so each new booking
        // read all earlier ones (confirmed and expired included) and grew slower as they accumulated.
        let earliest = start.addingTimeInterval(-TimeInterval(Tenant.maximumRentalDays + 1) * 86_400).epochMilliseconds
        // The holds of the overlapping slots, counted per slot as they come and go (a slot held by
        // 100,000 unpaid bookings is one row), less the ones that expired by `now` and are not
        // released yet (few: every admission on the resource releases them; read by the partial
        // index of occupying holds, which holds only those).
        let counted = try db.count(Admission.slotHolds, [tenantId, resourceId, earliest, end.epochMilliseconds, start.epochMilliseconds])
        let expired = try db.count(
            Admission.expiredHoldsInWindow,
            [tenantId, resourceId, now.epochMilliseconds, earliest, end.epochMilliseconds, start.epochMilliseconds]
        )
        return min(max(0, counted - expired), limit)
    }

    func exportBookings(tenantId: String, filter: BookingFilter, limit: Int) throws -> [Booking] {
        let (clause, arguments) = Self.whereClause(tenantId: tenantId, filter: filter)
        return try db.rows("SELECT \(Self.columns) FROM bookings WHERE \(clause) ORDER BY created_at, id LIMIT ?", arguments + [limit]).map(
            Self.decode
        )
    }

    func bookings(tenantId: String, filter: BookingFilter, page: Page) throws -> (items: [Booking], total: Int) {
        let (clause, arguments) = Self.whereClause(tenantId: tenantId, filter: filter)
        return try db.page(
            table: "bookings",
            columns: Self.columns,
            whereClause: clause,
            arguments: arguments,
            order: filter.upcomingFirst == nil
                ? "created_at"
                : "CASE WHEN ends_at > ? THEN 0 ELSE 1 END, CASE WHEN ends_at > ? THEN starts_at ELSE -starts_at END, id",
            orderArguments: filter.upcomingFirst.map { [$0.epochMilliseconds, $0.epochMilliseconds] },
            page: page,
            decode: Self.decode
        )
    }

    static func whereClause(tenantId: String, filter: BookingFilter) -> (String, SQLArguments) {
        var clause = "tenant_id = ?"
        var arguments: SQLArguments = [tenantId]
        if let status = filter.status {
            clause += " AND status = ?"
            arguments += [status.rawValue]
        }
        if let resource = filter.resourceId {
            clause += " AND resource_id = ?"
            arguments += [resource]
        }
        if let user = filter.userId {
            clause += " AND user_id = ?"
            arguments += [user]
        }
        if let from = filter.from {
            clause += " AND ends_at > ?"
            arguments += [from.epochMilliseconds]
        }
        if let to = filter.to {
            clause += " AND starts_at < ?"
            arguments += [to.epochMilliseconds]
        }
        return (clause, arguments)
    }
}

extension SQLBookings {
    /// The statements of a booking's admission (``CreateBooking``), each read by an index whose
    /// range does not grow with the bookings of the slot (`SQLBookingsPlanTests` checks SQLite's
    /// plan of each): a new booking costs the same with 100 or 100,000 unpaid bookings waiting.
    enum Admission {
        /// The resource's holds that expired by now and still occupy their slot: the partial index of
        /// occupying holds, whose range (`hold_expires_at <= now`) holds only those.
        static let expiredHolds = """
            SELECT id, starts_at, ends_at, seats FROM bookings
            WHERE tenant_id = ? AND resource_id = ? AND status = 'pending_payment' AND occupying = 1 AND hold_expires_at <= ?
            """
        /// The same, overlapping a window. The window's terms are written `+starts_at` so that SQLite
        /// does not read them by an index over `starts_at` instead (`bookings_by_status`: every unpaid
        /// booking of the window, the scan this replaced); PostgreSQL reads `+x` as `x`.
        static let expiredHoldsInWindow = """
            SELECT COUNT(*) FROM bookings
            WHERE tenant_id = ? AND resource_id = ? AND status = 'pending_payment' AND occupying = 1 AND hold_expires_at <= ?
              AND +starts_at > ? AND +starts_at < ? AND +ends_at > ?
            """
        /// What the overlapping slots hold: one row per distinct slot.
        static let slotOccupancy = """
            SELECT COALESCE(SUM(bookings), 0) AS bookings, COALESCE(SUM(seats), 0) AS seats FROM slot_occupancy
            WHERE tenant_id = ? AND resource_id = ? AND starts_at > ? AND starts_at < ? AND ends_at > ?
            """
        /// The unpaid holds of the overlapping slots, counted per slot.
        static let slotHolds = """
            SELECT COALESCE(SUM(holds), 0) FROM slot_occupancy
            WHERE tenant_id = ? AND resource_id = ? AND starts_at > ? AND starts_at < ? AND ends_at > ?
            """
        /// A user's unpaid holds, up to the cap.
        static let userHolds = """
            SELECT COUNT(*) FROM (SELECT 1 FROM bookings WHERE tenant_id = ? AND user_id = ? AND status = 'pending_payment' AND hold_expires_at > ? LIMIT ?) AS holds
            """
        /// What one API key holds unpaid, up to the cap.
        static let creatorHolds = """
            SELECT COUNT(*) FROM (SELECT 1 FROM bookings WHERE tenant_id = ? AND created_via = ? AND status = 'pending_payment' AND hold_expires_at > ? LIMIT ?) AS holds
            """

        static let all: [(name: String, sql: String, index: String)] = [
            ("expiredHolds", expiredHolds, "bookings_occupying_holds"),
            ("expiredHoldsInWindow", expiredHoldsInWindow, "bookings_occupying_holds"),
            ("slotOccupancy", slotOccupancy, "sqlite_autoindex_slot_occupancy_1"),
            ("slotHolds", slotHolds, "sqlite_autoindex_slot_occupancy_1"),
            ("userHolds", userHolds, "bookings_holds_by_user"),
            ("creatorHolds", creatorHolds, "bookings_holds_by_creator"),
        ]
    }
}

import Domain
import Foundation

/// Money owed to customers (``OwedPayment``): what the tenant's bookings owe now, and an operator's
/// closing of a store-paid one (`customer_told`, `credited`, `refunded_elsewhere`), audited and told
/// to the tenant's backend (`owed.resolved`). Card money is given back by a refund through the card
/// rail (``RefundCardBooking``); once refunded it is owed no more.
public struct OwedToCustomers: Sendable {
    let store: any Store
    let clock: any BerthClock

    /// Bookings read at most for one listing (the most recently changed first).
    public static let limit = 500

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// What is owed and not closed (`resolved` false), or what was closed (`resolved` true).
    public func list(runtime: TenantRuntime, resolved: Bool) async throws -> [OwedPayment] {
        let now = clock.now()
        let tenantId = runtime.id
        let facts = try await store.read { try $0.operatorViews.owedFacts(tenantId: tenantId, now: now, bookingId: nil, limit: Self.limit) }
        return facts.flatMap { OwedRules.owed($0, now: now) }.filter { ($0.resolved != nil) == resolved }
    }

    /// Closes what booking `bookingId` owes through the stores (and, with `refunded_elsewhere`, a card
    /// payment refunded outside Berth). 404 `owed_not_found` when it owes nothing open of that kind;
    /// 409 `owed_resolved` when it was closed already.
    public func resolve(
        runtime: TenantRuntime,
        bookingId: Int64,
        how: OwedPayment.Resolution,
        note: String?,
        actor: Actor
    ) async throws -> [OwedPayment] {
        let now = clock.now()
        let tenantId = runtime.id
        let emitsEvents = runtime.webhook != nil
        let resolved = OwedPayment.Resolved(how: how, note: note, actor: actor.rawValue, at: now)
        return try await store.write { tx in
            let facts = try tx.operatorViews.owedFacts(tenantId: tenantId, now: now, bookingId: bookingId, limit: 1)
            let owed = facts.flatMap { OwedRules.owed($0, now: now) }
            guard let booking = facts.first?.booking else {
                throw DomainError(.notFound, .owedNotFound, "booking \(bookingId) owes its customer nothing", field: "id")
            }
            if owed.contains(where: { $0.resolved != nil }) {
                throw DomainError(.conflict, .owedResolved, "what booking \(booking.reference) owed was closed already", field: "id")
            }
            // A card payment is given back by a refund through Berth, unless it went back elsewhere.
            let closing = owed.filter { $0.rail != .card || how == .refundedElsewhere }
            guard !closing.isEmpty else {
                throw DomainError(
                    .notFound,
                    .owedNotFound,
                    "booking \(booking.reference) owes only a card payment: refund it (POST /api/admin/bookings/\(bookingId)/refund)",
                    field: "id"
                )
            }
            guard try tx.operatorViews.resolveOwed(tenantId: tenantId, bookingId: bookingId, resolved: resolved) else {
                throw DomainError(.conflict, .owedResolved, "what booking \(booking.reference) owed was closed already", field: "id")
            }
            var detail = [
                "how": how.rawValue, "rails": closing.map(\.rail.rawValue).joined(separator: ","),
                "amounts": closing.map { Self.text($0.amountMinor, $0.currency) }.joined(separator: ","),
            ]
            if let note { detail["note"] = note }
            try tx.audit.append(
                AuditRecord(tenantId: tenantId, actor: actor, action: .owedResolved, bookingId: bookingId, purchaseId: nil, detail: detail, at: now)
            )
            if emitsEvents {
                var data = detail
                data["bookingId"] = String(bookingId)
                data["reference"] = booking.reference
                data["userId"] = booking.userId
                try tx.outbox.enqueue(
                    [WebhookEvent(type: .owedResolved, data: data, subject: WebhookEvent.bookingSubject(bookingId))],
                    tenantId: tenantId,
                    now: now
                )
            }
            return closing.map { entry in
                var entry = entry
                entry.resolved = resolved
                return entry
            }
        }
    }

    /// `13500` EUR → `135.00 EUR`.
    static func text(_ minor: Int64, _ currency: String) -> String { CurrencyUnits.text(minor: minor, currency: currency) }
}

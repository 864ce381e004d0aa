import Domain
import Foundation

/// Commit and release share one unit of work: the reservation and its account locked, the rule decides.
enum SettleReservation {
    static func settle(
        _ runtime: TenantRuntime,
        store: any Store,
        clock: any BerthClock,
        userId: String,
        reservationId: Int64,
        decide: @escaping @Sendable (CreditReservation, CreditAccount, Date, CreditSettings) throws(DomainError) -> CreditChange?
    ) async throws -> CreditReservationResult {
        let settings = try CreditRequests.settings(runtime)
        let tenantId = runtime.id, emits = runtime.webhook != nil
        return try await store.write { tx in
            let now = clock.now()
            guard let reservation = try tx.credits.reservation(id: reservationId, tenantId: tenantId, forUpdate: true), reservation.userId == userId
            else {
                throw DomainError(.notFound, .reservationNotFound, "no reservation \(reservationId) for this user", field: "id")
            }
            let account = try tx.credits.account(tenantId: tenantId, userId: userId, creditType: reservation.creditType, now: now, forUpdate: true)
            guard let change = try decide(reservation, account, now, settings) else {
                return CreditReservationResult(reservation: reservation, credits: account.summary, repeated: true)
            }
            try tx.save(change, now: now)
            if emits, let event = change.event(reason: .usage) { try tx.outbox.enqueue([event], tenantId: tenantId, now: now) }
            return CreditReservationResult(reservation: change.updatedReservation ?? reservation, credits: change.account.summary, repeated: false)
        }
    }
}

import Domain
import Foundation

/// `POST /api/credits/reservations/{id}/commit`: spend a held reservation.
public struct CommitReservation: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// Spends a held reservation (the app's work succeeded). Committing twice answers the same.
    public func callAsFunction(_ runtime: TenantRuntime, userId: String, reservationId: Int64, actor: Actor) async throws -> CreditReservationResult {
        try await SettleReservation.settle(runtime, store: store, clock: clock, userId: userId, reservationId: reservationId) {
            reservation,
            account,
            now,
            settings throws(DomainError) in
            try CreditRules.commit(reservation, account: account, actor: actor, negativeAllowed: settings.negativeAllowed, now: now)
        }
    }
}

import Domain
import Foundation

/// `POST /api/credits/reservations/{id}/release`: give a held reservation's credits back.
public struct ReleaseReservation: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// Gives a held reservation's credits back (the app's work failed). Releasing twice answers the same.
    public func callAsFunction(_ runtime: TenantRuntime, userId: String, reservationId: Int64) async throws -> CreditReservationResult {
        try await SettleReservation.settle(runtime, store: store, clock: clock, userId: userId, reservationId: reservationId) {
            reservation,
            account,
            now,
            _ throws(DomainError) in
            try CreditRules.release(reservation, account: account, now: now)
        }
    }
}

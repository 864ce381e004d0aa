import Domain
import Foundation

/// `POST /api/credits/reservations`: hold credits for work in progress.
public struct ReserveCredits: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// Holds `amount` credits for work in progress, or refuses with `insufficient_credits` and the
    /// balance. A retry with the same reference finds the live reservation instead of holding twice.
    public func callAsFunction(
        _ runtime: TenantRuntime,
        userId: String,
        amount: Int64,
        creditType: String?,
        reference: String?,
        profileId: String?
    ) async throws -> CreditReservationResult {
        let settings = try CreditRequests.settings(runtime)
        let type = try CreditRequests.creditType(creditType, settings: settings)
        guard (1...Int64(settings.reservationLimit)).contains(amount) else {
            throw DomainError(.invalidInput, .invalidField, "amount must be 1...\(settings.reservationLimit)", field: "amount")
        }
        let tenant = runtime.tenant, emits = runtime.webhook != nil, clock = self.clock
        return try await store.write { tx in
            // The time is read inside the unit of work: expiry is judged when the account can no
            // longer change under it (S14), not before waiting for the lock.
            let now = clock.now()
            try tx.grantSignupBonusIfDue(tenant: tenant, userId: userId, emitsEvents: emits, now: now)
            if let reference, var earlier = try tx.credits.reservation(reference: reference, tenantId: tenant.id, userId: userId) {
                switch earlier.status(at: now) {
                case .held, .committed:
                    guard earlier.amount == amount, earlier.creditType == type, earlier.profileId == profileId else {
                        throw DomainError(
                            .conflict,
                            .referenceInUse,
                            "reference \(reference) already holds \(earlier.amount) \(earlier.creditType) credit(s) for another request",
                            field: "reference"
                        )
                    }
                    let account = try tx.credits.account(tenantId: tenant.id, userId: userId, creditType: type, now: now, forUpdate: false)
                    return CreditReservationResult(reservation: earlier, credits: account.summary, repeated: true)
                case .expired where earlier.status == .held:
                    earlier.status = .expired
                    earlier.settledAt = earlier.expiresAt
                    try tx.credits.update(earlier)
                case .released, .expired:
                    break
                }
            }
            let account = try tx.credits.account(tenantId: tenant.id, userId: userId, creditType: type, now: now, forUpdate: true)
            let change = try CreditRules.reserve(
                account,
                amount: amount,
                reference: reference,
                profileId: profileId,
                duration: settings.reservationDuration,
                now: now
            )
            guard let reservation = change.newReservation else {
                throw DomainError(.unavailable, .internalError, "the reservation was not made; nothing was applied")
            }
            try tx.save(change, now: now)
            return CreditReservationResult(reservation: reservation, credits: change.account.summary, repeated: false)
        }
    }
}

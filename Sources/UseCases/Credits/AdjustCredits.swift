import Domain
import Foundation

/// `POST /api/admin/credits/adjustments`: an operator's correction of a balance (audited).
public struct AdjustCredits: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// An operator's correction of a user's balance (positive or negative), with its reason.
    public func callAsFunction(
        _ runtime: TenantRuntime,
        userId: String,
        creditType: String?,
        amount: Int64,
        reason: String,
        actor: Actor
    ) async throws -> (entry: LedgerEntry, credits: CreditSummary) {
        let settings = try CreditRequests.settings(runtime)
        let type = try CreditRequests.creditType(creditType, settings: settings)
        // A range check, not abs(): abs(Int64.min) traps.
        guard amount != 0, (-1_000_000...1_000_000).contains(amount) else {
            throw DomainError(.invalidInput, .invalidField, "amount must be a non-zero integer within ±1000000", field: "amount")
        }
        let tenantId = runtime.id, emits = runtime.webhook != nil, now = clock.now()
        return try await store.write { tx in
            let account = try tx.credits.account(tenantId: tenantId, userId: userId, creditType: type, now: now, forUpdate: true)
            let change = try CreditRules.adjust(
                account,
                amount: amount,
                actor: actor,
                reason: reason,
                negativeAllowed: settings.negativeAllowed,
                now: now
            )
            try tx.save(change, now: now)
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: .creditsAdjusted,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: ["userId": userId, "creditType": type, "amount": String(amount), "reason": reason],
                    at: now
                )
            )
            if emits, let event = change.event(reason: .adjustment) { try tx.outbox.enqueue([event], tenantId: tenantId, now: now) }
            return (change.entries[0], change.account.summary)
        }
    }
}

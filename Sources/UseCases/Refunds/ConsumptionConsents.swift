import Domain
import Foundation

/// The customer's consent, given in the app, to Berth telling Apple how they used a purchase when
/// they ask for a refund (Send Consumption Information needs it). Each change is audited.
public struct ConsumptionConsents: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    public func current(runtime: TenantRuntime, userId: String) async throws -> ConsumptionConsent? {
        let tenantId = runtime.id
        return try await store.read { try $0.consents.consent(tenantId: tenantId, userId: userId) }
    }

    public func record(runtime: TenantRuntime, userId: String, consented: Bool, textVersion: String, actor: Actor) async throws -> ConsumptionConsent
    {
        let consent = ConsumptionConsent(
            tenantId: runtime.id,
            userId: userId,
            consented: consented,
            textVersion: textVersion,
            recordedAt: clock.now()
        )
        try await store.write { tx in
            try tx.consents.record(consent)
            try tx.audit.append(
                AuditRecord(
                    tenantId: consent.tenantId,
                    actor: actor,
                    action: .consumptionConsent,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: ["userId": userId, "consented": consented ? "true" : "false", "textVersion": textVersion],
                    at: consent.recordedAt
                )
            )
        }
        return consent
    }
}

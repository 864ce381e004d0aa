import Domain
import Foundation

/// What every credit request checks first: that the app sells credits, and which credit type it means.
public enum CreditRequests {
    /// The tenant's credit settings, or 404 for an app that sells no credits.
    public static func settings(_ runtime: TenantRuntime) throws(DomainError) -> CreditSettings {
        guard let settings = runtime.tenant.credits else {
            throw DomainError(.notFound, .creditsNotOffered, "this app does not sell credits")
        }
        return settings
    }

    /// The credit type a request names, or the tenant's only one.
    public static func creditType(_ requested: String?, settings: CreditSettings) throws(DomainError) -> String {
        guard let requested else {
            guard let type = settings.defaultType else {
                throw DomainError(
                    .invalidInput,
                    .missingField,
                    "this app has several credit types (\(settings.types.joined(separator: ", "))): name creditType",
                    field: "creditType"
                )
            }
            return type
        }
        guard settings.types.contains(requested) else {
            throw DomainError(
                .invalidInput,
                .unknownCreditType,
                "creditType must be one of \(settings.types.joined(separator: ", "))",
                field: "creditType"
            )
        }
        return requested
    }

    /// Makes sure the bonus is granted before a read shows the user's credits (a write only the first time).
    static func ensureBonus(_ runtime: TenantRuntime, userId: String, store: any Store, clock: any BerthClock) async throws {
        guard runtime.tenant.credits?.signupBonus != nil else { return }
        let tenant = runtime.tenant, emits = runtime.webhook != nil
        if try await store.read({ try $0.credits.hasBonus(tenantId: tenant.id, userId: userId) }) { return }
        let now = clock.now()
        try await store.write { tx in try tx.grantSignupBonusIfDue(tenant: tenant, userId: userId, emitsEvents: emits, now: now) }
    }
}

/// A reservation with the balance after it; `repeated` when the app's reference (or a second commit
/// or release) found the earlier answer.
public struct CreditReservationResult: Sendable {
    public var reservation: CreditReservation
    public var credits: CreditSummary
    public var repeated: Bool
}

import Domain
import Foundation

/// A user's credits: balances, history, lots, reservations (reserve → commit or release) and the
/// purchase-eligibility rule of report apps. Every entry point grants the signup bonus first when
/// it is due, so users who existed before the tenant enabled it get it on their next call.
public struct CreditAccounts: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// A reservation with the balance after it; `repeated` when the app's reference found an earlier one.
    public struct ReservationResult: Sendable {
        public var reservation: CreditReservation
        public var credits: CreditSummary
        public var repeated: Bool
    }

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
                throw DomainError(.invalidInput, .missingField, "this app has several credit types (\(settings.types.joined(separator: ", "))): name creditType", field: "creditType")
            }
            return type
        }
        guard settings.types.contains(requested) else {
            throw DomainError(.invalidInput, .unknownCreditType, "creditType must be one of \(settings.types.joined(separator: ", "))", field: "creditType")
        }
        return requested
    }

    /// Makes sure the bonus is granted before a read shows the user's credits (a write only the first time).
    func ensureBonus(_ runtime: TenantRuntime, userId: String) async throws {
        guard runtime.tenant.credits?.signupBonus != nil else { return }
        let tenant = runtime.tenant, emits = runtime.webhook != nil
        if try await store.read({ try $0.credits.hasBonus(tenantId: tenant.id, userId: userId) }) { return }
        let now = clock.now()
        try await store.write { tx in try tx.grantSignupBonusIfDue(tenant: tenant, userId: userId, emitsEvents: emits, now: now) }
    }

    /// Every credit type of the tenant with the user's balance, held and available credits.
    public func balances(_ runtime: TenantRuntime, userId: String) async throws -> [CreditSummary] {
        let settings = try Self.settings(runtime)
        try await ensureBonus(runtime, userId: userId)
        let tenantId = runtime.id, now = clock.now()
        let stored = try await store.read { try $0.credits.summaries(tenantId: tenantId, userId: userId, now: now) }
        return settings.types.map { type in stored.first { $0.creditType == type } ?? CreditSummary(creditType: type, balance: 0, held: 0, debt: 0) }
    }

    /// The user's ledger entries, newest first.
    public func history(_ runtime: TenantRuntime, userId: String, filter: LedgerFilter, page: Page) async throws -> (items: [LedgerEntry], total: Int) {
        _ = try Self.settings(runtime)
        try await ensureBonus(runtime, userId: userId)
        var filter = filter
        filter.userId = userId
        let tenantId = runtime.id, userFilter = filter
        return try await store.read { try $0.credits.entries(tenantId: tenantId, filter: userFilter, page: page) }
    }

    /// The user's lots, oldest first, with what used them and for which profile.
    public func lots(_ runtime: TenantRuntime, userId: String, creditType: String?, page: Page) async throws -> (items: [(lot: CreditLot, uses: [CreditLotUse])], total: Int) {
        let settings = try Self.settings(runtime)
        let type = try creditType.map { try Self.creditType($0, settings: settings) }
        try await ensureBonus(runtime, userId: userId)
        let tenantId = runtime.id
        return try await store.read { try $0.credits.lots(tenantId: tenantId, userId: userId, creditType: type, page: page) }
    }

    /// Whether the user may buy `productId` now: report apps refuse while an unused credit of its type
    /// exists (held ones included: they are not spent yet).
    public func eligibility(_ runtime: TenantRuntime, userId: String, productId: String) async throws -> (eligible: Bool, reason: String, product: CreditProduct) {
        let settings = try Self.settings(runtime)
        try await ensureBonus(runtime, userId: userId)
        let tenantId = runtime.id, now = clock.now()
        let found = try await store.read { tx -> (CreditProduct, CreditAccount)? in
            guard let product = try tx.credits.product(tenantId: tenantId, productId: productId) else { return nil }
            return (product, try tx.credits.account(tenantId: tenantId, userId: userId, creditType: product.creditType, now: now, forUpdate: false))
        }
        guard let (product, account) = found else {
            throw DomainError(.notFound, .unknownProduct, "\(productId) is not a credit product of this app", field: "productId")
        }
        if !product.active { return (false, "product_inactive", product) }
        if settings.refusePurchaseWhileUnused == true, account.balance.balance > 0 { return (false, "unused_credit", product) }
        return (true, "eligible", product)
    }

    /// Holds `amount` credits for work in progress, or refuses with `insufficient_credits` and the
    /// balance. A retry with the same reference finds the live reservation instead of holding twice.
    public func reserve(_ runtime: TenantRuntime, userId: String, amount: Int64, creditType: String?, reference: String?,
                        profileId: String?) async throws -> ReservationResult {
        let settings = try Self.settings(runtime)
        let type = try Self.creditType(creditType, settings: settings)
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
                        throw DomainError(.conflict, .referenceInUse, "reference \(reference) already holds \(earlier.amount) \(earlier.creditType) credit(s) for another request", field: "reference")
                    }
                    let account = try tx.credits.account(tenantId: tenant.id, userId: userId, creditType: type, now: now, forUpdate: false)
                    return ReservationResult(reservation: earlier, credits: account.summary, repeated: true)
                case .expired where earlier.status == .held:
                    earlier.status = .expired
                    earlier.settledAt = earlier.expiresAt
                    try tx.credits.update(earlier)
                case .released, .expired:
                    break
                }
            }
            let account = try tx.credits.account(tenantId: tenant.id, userId: userId, creditType: type, now: now, forUpdate: true)
            let change = try CreditRules.reserve(account, amount: amount, reference: reference, profileId: profileId, duration: settings.reservationDuration, now: now)
            guard let reservation = change.newReservation else {
                throw DomainError(.unavailable, .internalError, "the reservation was not made; nothing was applied")
            }
            try tx.save(change, now: now)
            return ReservationResult(reservation: reservation, credits: change.account.summary, repeated: false)
        }
    }

    /// Spends a held reservation (the app's work succeeded). Committing twice answers the same.
    public func commit(_ runtime: TenantRuntime, userId: String, reservationId: Int64, actor: Actor) async throws -> ReservationResult {
        try await settle(runtime, userId: userId, reservationId: reservationId) { reservation, account, now, settings throws(DomainError) in
            try CreditRules.commit(reservation, account: account, actor: actor, negativeAllowed: settings.negativeAllowed, now: now)
        }
    }

    /// Gives a held reservation's credits back (the app's work failed). Releasing twice answers the same.
    public func release(_ runtime: TenantRuntime, userId: String, reservationId: Int64) async throws -> ReservationResult {
        try await settle(runtime, userId: userId, reservationId: reservationId) { reservation, account, now, _ throws(DomainError) in
            try CreditRules.release(reservation, account: account, now: now)
        }
    }

    private func settle(_ runtime: TenantRuntime, userId: String, reservationId: Int64,
                        decide: @escaping @Sendable (CreditReservation, CreditAccount, Date, CreditSettings) throws(DomainError) -> CreditChange?) async throws -> ReservationResult {
        let settings = try Self.settings(runtime)
        let tenantId = runtime.id, emits = runtime.webhook != nil, clock = self.clock
        return try await store.write { tx in
            let now = clock.now()
            guard let reservation = try tx.credits.reservation(id: reservationId, tenantId: tenantId, forUpdate: true), reservation.userId == userId else {
                throw DomainError(.notFound, .reservationNotFound, "no reservation \(reservationId) for this user", field: "id")
            }
            let account = try tx.credits.account(tenantId: tenantId, userId: userId, creditType: reservation.creditType, now: now, forUpdate: true)
            guard let change = try decide(reservation, account, now, settings) else {
                return ReservationResult(reservation: reservation, credits: account.summary, repeated: true)
            }
            try tx.save(change, now: now)
            if emits, let event = change.event(reason: .usage) { try tx.outbox.enqueue([event], tenantId: tenantId, now: now) }
            return ReservationResult(reservation: change.updatedReservation ?? reservation, credits: change.account.summary, repeated: false)
        }
    }
}

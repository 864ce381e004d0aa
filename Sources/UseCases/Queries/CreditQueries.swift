import Domain
import Foundation

/// A user's credits as the app reads them: balances, history, lots, purchase eligibility. Each read
/// grants the signup bonus first when it is due (a write only the first time), so users who existed
/// before the app enabled it get it on their next call.
public struct CreditQueries: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// Every credit type of the tenant with the user's balance, held and available credits.
    /// One read on the common path: the bonus check, the summaries and (with `purchases`) the
    /// transactions waiting for the user, which are claimed first (their credits are in the answer).
    public func balances(
        _ runtime: TenantRuntime,
        userId: String,
        claimingWaitingWith purchases: Claims? = nil
    ) async throws -> [CreditSummary] {
        let settings = try CreditRequests.settings(runtime)
        let tenantId = runtime.id, now = clock.now(), offersBonus = runtime.tenant.credits?.signupBonus != nil
        // One statement: on PostgreSQL one round trip for the whole answer.
        let read: @Sendable (any StoreSession, [String]) throws -> CreditSources = { session, tokens in
            try session.userState.creditSources(tenantId: tenantId, userId: userId, now: now, waitingTokens: tokens)
        }
        let sources =
            if let purchases {
                try await purchases.readClaimingWaiting(runtime: runtime, userId: userId) { session, tokens in
                    let sources = try read(session, tokens)
                    return (!sources.waiting.isEmpty, sources)
                }
            } else {
                try await store.readStatement { session in try read(session, []) }
            }
        let bonusSettled = !offersBonus || sources.bonusGranted
        var stored = sources.summaries
        if !bonusSettled {
            try await CreditRequests.ensureBonus(runtime, userId: userId, store: store, clock: clock)
            stored = try await store.read { try $0.credits.summaries(tenantId: tenantId, userId: userId, now: now) }
        }
        return settings.types.map { type in stored.first { $0.creditType == type } ?? CreditSummary(creditType: type, balance: 0, held: 0, debt: 0) }
    }

    /// The user's ledger entries, newest first.
    public func history(_ runtime: TenantRuntime, userId: String, filter: LedgerFilter, page: Page) async throws -> (items: [LedgerEntry], total: Int)
    {
        _ = try CreditRequests.settings(runtime)
        try await CreditRequests.ensureBonus(runtime, userId: userId, store: store, clock: clock)
        var filter = filter
        filter.userId = userId
        let tenantId = runtime.id, userFilter = filter
        return try await store.read { try $0.credits.entries(tenantId: tenantId, filter: userFilter, page: page) }
    }

    /// The user's lots, oldest first, with what used them and for which profile.
    public func lots(
        _ runtime: TenantRuntime,
        userId: String,
        creditType: String?,
        page: Page
    ) async throws -> (items: [(lot: CreditLot, uses: [CreditLotUse])], total: Int) {
        let settings = try CreditRequests.settings(runtime)
        let type = try creditType.map { try CreditRequests.creditType($0, settings: settings) }
        try await CreditRequests.ensureBonus(runtime, userId: userId, store: store, clock: clock)
        let tenantId = runtime.id
        return try await store.read { try $0.credits.lots(tenantId: tenantId, userId: userId, creditType: type, page: page) }
    }

    /// Whether the user may buy `productId` now: report apps refuse while an unused credit of its type
    /// exists (held ones included: they are not spent yet).
    public func eligibility(
        _ runtime: TenantRuntime,
        userId: String,
        productId: String
    ) async throws -> (eligible: Bool, reason: String, product: CreditProduct) {
        let settings = try CreditRequests.settings(runtime)
        try await CreditRequests.ensureBonus(runtime, userId: userId, store: store, clock: clock)
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

    /// The credit packs the operator sells (stored, edited at run time), active ones only, as the
    /// store orders them (display order, then product id).
    public func activeProducts(tenantId: String) async throws -> [CreditProduct] {
        try await store.read { try $0.credits.products(tenantId: tenantId) }.filter(\.active)
    }
}

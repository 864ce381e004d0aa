import Domain
import Logging
import UseCases

/// What the HTTP layer is built from: the tenants, the store's ports, the clock and the use cases
/// over them (each route gets the use case it calls).
public struct BerthServices: Sendable {
    public var tenants: TenantRegistry
    public var store: any Store
    public var clock: any BerthClock
    public var logger: Logger
    let rateLimiter: RateLimiter
    /// This instance's metrics (`GET /metrics`).
    public let metrics: BerthMetrics
    /// When set, `GET /metrics` asks for `Authorization: Bearer <token>`.
    public var metricsToken: String?
    /// The migrations the code expects: `/readyz` fails while one of them is not applied.
    public var expectedMigrations: Set<String> = []

    public init(tenants: TenantRegistry, store: any Store, clock: any BerthClock = SystemClock(), logger: Logger) {
        let metrics = BerthMetrics()
        self.tenants = tenants
        self.store = MeasuredStore(store: store, metrics: metrics)
        self.clock = clock
        self.logger = logger
        self.rateLimiter = RateLimiter(clock: clock)
        self.metrics = metrics
    }

    var verifyPurchase: VerifyPurchase { VerifyPurchase(store: store, prover: PurchaseProver(logger: logger), clock: clock, logger: logger) }
    var createBooking: CreateBooking { CreateBooking(store: store, clock: clock) }
    var adminTransition: AdminBookingTransition { AdminBookingTransition(store: store, clock: clock) }
    var receiveNotification: ReceiveNotification { ReceiveNotification(store: store, clock: clock, logger: logger) }
    var verifyReceipt: VerifyReceipt { VerifyReceipt(store: store, clock: clock, logger: logger) }
    var creditAccounts: CreditAccounts { CreditAccounts(store: store, clock: clock) }
    var creditOperations: CreditOperations { CreditOperations(store: store, clock: clock) }
}

extension BerthRequestContext {
    /// The calling user (JWT, or server key with X-User-Id).
    func requireUser() throws -> (tenant: TenantRuntime, userId: String, actor: Actor) {
        switch identity {
        case .user(let tenant, let userId, let via): return (tenant, userId, Actor(rawValue: via))
        case .server: throw APIError(.badRequest, .missingUser, "a server key must name the user in X-User-Id", field: "X-User-Id")
        case .admin: throw APIError.forbidden("this endpoint acts for a user; use the user's token or a server key with X-User-Id")
        case nil: throw APIError.unauthenticated("send Authorization: Bearer <user token or API key>")
        }
    }

    /// An admin key's tenant.
    func requireAdmin() throws -> (tenant: TenantRuntime, keyId: Int64) {
        switch identity {
        case .admin(let tenant, let keyId): return (tenant, keyId)
        case .user, .server: throw APIError.forbidden("this endpoint needs an admin API key")
        case nil: throw APIError.unauthenticated("send Authorization: Bearer <admin API key>")
        }
    }

    /// Any authenticated caller's tenant.
    func requireTenant() throws -> TenantRuntime {
        guard let identity else { throw APIError.unauthenticated("send Authorization: Bearer <user token or API key>") }
        return identity.tenant
    }
}

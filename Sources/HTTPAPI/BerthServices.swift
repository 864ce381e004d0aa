import Domain
import Logging

/// Everything the HTTP layer needs, injected at its seams (tests pass their own).
public struct BerthServices: Sendable {
    public var tenants: TenantRegistry
    public var bookings: any BookingStore
    public var keys: any APIKeyStore
    public var receiptChecks: any ReceiptCheckStore
    public var notifications: any NotificationStore
    public var webhooks: any WebhookStore
    public var clock: any BerthClock
    public var logger: Logger
    let rateLimiter: RateLimiter

    public init(
        tenants: TenantRegistry, bookings: any BookingStore, keys: any APIKeyStore, receiptChecks: any ReceiptCheckStore,
        notifications: any NotificationStore, webhooks: any WebhookStore, clock: any BerthClock = SystemClock(), logger: Logger
    ) {
        self.notifications = notifications
        self.webhooks = webhooks
        self.tenants = tenants
        self.bookings = bookings
        self.keys = keys
        self.receiptChecks = receiptChecks
        self.clock = clock
        self.logger = logger
        self.rateLimiter = RateLimiter(clock: clock)
    }
}

extension BerthRequestContext {
    /// The calling user (JWT, or server key with X-User-Id).
    func requireUser() throws -> (tenant: TenantRuntime, userId: String, actor: String) {
        switch identity {
        case .user(let tenant, let userId, let via): return (tenant, userId, via)
        case .server: throw APIError(.badRequest, "missing_user", "a server key must name the user in X-User-Id", field: "X-User-Id")
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

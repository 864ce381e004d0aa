import Hummingbird
import UseCases

/// Who is calling, once authenticated.
public enum Identity: Sendable {
    /// A tenant's user: by their JWT, or by the tenant's server key naming them in `X-User-Id`.
    case user(tenant: TenantRuntime, userId: String, via: String)
    /// The tenant's booking administration (admin API key).
    case admin(tenant: TenantRuntime, keyId: Int64)
    /// The tenant's server key without `X-User-Id`.
    case server(tenant: TenantRuntime, keyId: Int64)

    public var tenant: TenantRuntime {
        switch self {
        case .user(let tenant, _, _), .admin(let tenant, _), .server(let tenant, _): tenant
        }
    }
}

/// The request context of every Berth route.
public struct BerthRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: Identity?
    /// The peer's IP address (the proxy's, behind a reverse proxy), for limits on unauthenticated routes.
    public var clientAddress: String?

    public init(source: Source) {
        coreContext = .init(source: source)
        identity = nil
        clientAddress = source.channel.remoteAddress?.ipAddress
    }

    /// Largest request body Berth reads (64 KiB).
    public var maxUploadSize: Int { 64 * 1024 }
}

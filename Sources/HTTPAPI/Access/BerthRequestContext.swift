import Domain
import Hummingbird
import NIOCore
import UseCases

/// What kind of credential a caller presented: the roles of ``APIKeyRole`` and a tenant user's token.
public enum PrincipalKind: String, Sendable, Hashable, CaseIterable, Comparable {
    /// No credential (public routes, Apple's notifications).
    case anonymous
    /// A `client` key: shipped in the app, acts for the user it names.
    case clientKey = "client"
    /// A tenant user's JWT: acts for its subject.
    case userToken = "user"
    /// A `server` key: the app's backend, acts for any user it names.
    case serverKey = "server"
    /// An `admin` key: operators.
    case adminKey = "admin"

    public static func < (a: Self, b: Self) -> Bool { (allCases.firstIndex(of: a) ?? 0) < (allCases.firstIndex(of: b) ?? 0) }
}

/// An authenticated caller: the tenant, how they proved it, and the end user they act for.
public struct Caller: Sendable {
    public var tenant: TenantRuntime
    public var kind: PrincipalKind
    /// The API key, when one authenticated the request.
    public var key: APIKey?
    /// The end user: a token's subject, or the user a key names in `X-User-Id`.
    public var userId: String?

    /// Whether the caller proved who the user is: the user's own token, or the app's backend (a
    /// server key). A client key ships in every copy of the app: it only names a user.
    public var provesUser: Bool { kind == .userToken || kind == .serverKey }

    /// What the caller may do: a key's scopes; a user token may do what a user may.
    public var scopes: Set<KeyScope> {
        key?.scopes ?? [.purchases, .read, .bookings, .credits]
    }

    /// Who the audit log names.
    public var actor: Actor {
        switch (kind, key) {
        case (.clientKey, let key?): .client(keyId: key.id)
        case (.serverKey, let key?): .server(keyId: key.id)
        case (.adminKey, let key?): .admin(keyId: key.id)
        default: .user(userId ?? "")
        }
    }
}

/// What authentication made of the request's credentials. The global authenticator never
/// refuses: a route's guarded context does, with the route group's error shape.
public enum Authentication: Sendable {
    case anonymous
    case authenticated(Caller)
    /// Credentials were presented and refused (unknown, revoked or expired key, bad token).
    case refused(APIError)
}

/// The request context of every Berth route before its group's guard (``GuardedContext``) admits
/// the caller.
public struct BerthRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var authentication: Authentication
    /// The connection, asked for its addresses only by the few routes that need them (reading a
    /// channel's address takes its lock and formats the address: every request paid it when it was
    /// read here up front).
    private let channel: any Channel

    /// The peer's IP address (the proxy's, behind a reverse proxy), for limits on unauthenticated routes.
    public var clientAddress: String? { channel.remoteAddress?.ipAddress }
    /// Whether the connection arrived on a loopback address (or on no network address at all, as in
    /// tests): `/metrics` serves without a token only there.
    public var arrivedOnLoopback: Bool { channel.localAddress?.ipAddress.map(Self.isLoopback) ?? true }

    public init(source: Source) {
        coreContext = .init(source: source)
        authentication = .anonymous
        channel = source.channel
    }

    /// 127.0.0.0/8, ::1 and IPv4-mapped loopback.
    static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.hasPrefix("127.") || address.hasPrefix("::ffff:127.")
    }

    /// Largest request body Berth reads (64 KiB).
    public var maxUploadSize: Int { JSONCoding.bodyLimit }
}

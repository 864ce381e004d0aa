import Domain
import Hummingbird
import UseCases

/// Who a route group admits. Each group's request context is built from the authenticated
/// request by ``GuardedContext/init(context:)``, which refuses everyone else (401 without
/// credentials or with refused ones, 403 for a kind of caller the group does not serve, 400 when a
/// key must name a user and does not): a handler is never reached by the wrong kind of caller.
public protocol AccessPolicy: Sendable {
    /// The kinds of caller admitted.
    static var admits: Set<PrincipalKind> { get }
    /// Whether client and server keys must name the user they act for (`X-User-Id`).
    static var namesUser: Bool { get }
    /// Tenant settings that admit more (client keys creating bookings); the default admits `admits`.
    static func admits(_ kind: PrincipalKind, tenant: Tenant) -> Bool
    /// A short description for the access table ("client (when the app allows)").
    static var note: String? { get }
}

extension AccessPolicy {
    public static func admits(_ kind: PrincipalKind, tenant: Tenant) -> Bool { admits.contains(kind) }
    public static var note: String? { nil }

    /// The caller this policy admits from `context`, or the refusal.
    static func admit(_ context: BerthRequestContext) throws -> Caller {
        let caller: Caller
        switch context.authentication {
        case .anonymous:
            throw APIError.unauthenticated("send Authorization: Bearer <\(admits.sorted().map(Self.credentialName).joined(separator: " or "))>")
        case .refused(let error):
            throw error
        case .authenticated(let found):
            caller = found
        }
        guard admits(caller.kind, tenant: caller.tenant.tenant) else {
            throw APIError.forbidden(
                "this endpoint does not take \(Self.credentialName(caller.kind)); it takes \(admits.sorted().map(Self.credentialName).joined(separator: " or "))"
            )
        }
        if namesUser, caller.kind == .clientKey || caller.kind == .serverKey, caller.userId == nil {
            throw APIError(.badRequest, .missingUser, "an API key acting for a user must name the user in X-User-Id", field: "X-User-Id")
        }
        return caller
    }

    static func credentialName(_ kind: PrincipalKind) -> String {
        switch kind {
        case .anonymous: "no credentials"
        case .clientKey: "a client key"
        case .userToken: "a user's token"
        case .serverKey: "a server key"
        case .adminKey: "an admin key"
        }
    }
}

/// A request context that carries the admitted caller.
public protocol GuardedContext: ChildRequestContext where ParentContext == BerthRequestContext {
    associatedtype Policy: AccessPolicy
    var caller: Caller { get }
}

/// A route acting for one end user: `userId` is always there.
public struct UserRequestContext<Policy: AccessPolicy>: GuardedContext {
    public var coreContext: CoreRequestContextStorage
    public let caller: Caller
    public let userId: String

    public init(context: BerthRequestContext) throws {
        caller = try Policy.admit(context)
        guard let userId = caller.userId else {
            throw APIError(.badRequest, .missingUser, "an API key acting for a user must name the user in X-User-Id", field: "X-User-Id")
        }
        self.userId = userId
        coreContext = context.coreContext
    }

    public var tenant: TenantRuntime { caller.tenant }
    public var maxUploadSize: Int { JSONCoding.bodyLimit }
}

/// A route for any admitted caller of a tenant; `caller.userId` is the user when one is named.
public struct AppRequestContext<Policy: AccessPolicy>: GuardedContext {
    public var coreContext: CoreRequestContextStorage
    public let caller: Caller

    public init(context: BerthRequestContext) throws {
        caller = try Policy.admit(context)
        coreContext = context.coreContext
    }

    public var tenant: TenantRuntime { caller.tenant }
    public var maxUploadSize: Int { JSONCoding.bodyLimit }
}

/// An operator's route: an admin key of the tenant.
public struct AdminRequestContext: GuardedContext {
    public typealias Policy = AdminAccess
    public var coreContext: CoreRequestContextStorage
    public let caller: Caller
    public let keyId: Int64

    public init(context: BerthRequestContext) throws {
        caller = try AdminAccess.admit(context)
        keyId = caller.key?.id ?? 0
        coreContext = context.coreContext
    }

    public var tenant: TenantRuntime { caller.tenant }
    public var actor: Actor { .admin(keyId: keyId) }
    public var maxUploadSize: Int { JSONCoding.bodyLimit }
}

// MARK: - The policies

/// Reading a user's own state and submitting proofs for them: client keys, user tokens, server keys.
public enum UserAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = [.clientKey, .userToken, .serverKey]
    public static let namesUser = true
}

/// Moving value without a store's proof (spending credits): the user's own token or the backend.
public enum AccountAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = [.userToken, .serverKey]
    public static let namesUser = true
}

/// Creating bookings (holds on inventory): user tokens and server keys; client keys only when the
/// tenant sets `clientKeys.createBookings`.
public enum BookingAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = [.userToken, .serverKey]
    public static let namesUser = true
    public static func admits(_ kind: PrincipalKind, tenant: Tenant) -> Bool {
        admits.contains(kind) || (kind == .clientKey && tenant.clientKeysCreateBookings)
    }
    public static var note: String? { "client keys too when the app sets clientKeys.createBookings" }
}

/// Submitting a receipt whose user is optional (verify-receipt, the cordova validator).
public enum ProofAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = [.clientKey, .userToken, .serverKey]
    public static let namesUser = false
}

/// The catalog: any caller of the tenant.
public enum CatalogAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = [.clientKey, .userToken, .serverKey, .adminKey]
    public static let namesUser = false
}

/// One subscription by id: its user (client or server key naming them, or their token), or an operator.
public enum SubscriptionViewAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = [.clientKey, .userToken, .serverKey, .adminKey]
    public static let namesUser = true
}

/// The app's backend or operators (memberships, FT Chinese's routes by subscription id).
public enum BackendAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = [.serverKey, .adminKey]
    public static let namesUser = false
}

/// FT Chinese's receipt routes, per-user list and links: the app's access token (a client key) or the backend.
public enum AppKeyAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = [.clientKey, .serverKey]
    public static let namesUser = false
}

/// Operators.
public enum AdminAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = [.adminKey]
    public static let namesUser = false
}

/// Routes anyone may call (health, pages, Apple's signed notifications).
public enum PublicAccess: AccessPolicy {
    public static let admits: Set<PrincipalKind> = Set(PrincipalKind.allCases)
    public static let namesUser = false
}

public typealias UserContext = UserRequestContext<UserAccess>
public typealias AccountContext = UserRequestContext<AccountAccess>
public typealias BookingContext = UserRequestContext<BookingAccess>
public typealias ProofContext = AppRequestContext<ProofAccess>
public typealias CatalogContext = AppRequestContext<CatalogAccess>
public typealias SubscriptionViewContext = AppRequestContext<SubscriptionViewAccess>
public typealias BackendContext = AppRequestContext<BackendAccess>
public typealias AppKeyContext = AppRequestContext<AppKeyAccess>

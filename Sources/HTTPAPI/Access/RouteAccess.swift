import Domain
import Foundation
import Hummingbird
import Logging
import Synchronization

/// Who may call each route, recorded as the routes are registered (``GuardedRoutes``), so that the
/// access matrix is generated from the route table itself: a route registered any other way has no
/// entry, and the access test fails.
public final class RouteAccessTable: Sendable {
    public struct Entry: Sendable, Hashable {
        public var method: String
        public var path: String
        /// The kinds of caller admitted.
        public var admits: Set<PrincipalKind>
        /// Whether keys must name a user (`X-User-Id`).
        public var namesUser: Bool
        /// The key scope the route needs (nil: none beyond being admitted).
        public var scope: KeyScope?
        public var note: String?
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    func record(_ entry: Entry) {
        entries.withLock { entries in
            // A router built twice from the same services records each route once.
            if !entries.contains(where: { $0.method == entry.method && $0.path == entry.path }) { entries.append(entry) }
        }
    }

    public var all: [Entry] { entries.withLock { $0 } }

    /// The entry of one route (method and path pattern as registered).
    public func entry(method: String, path: String) -> Entry? {
        entries.withLock { $0.first { $0.method == method && $0.path == path } }
    }
}

/// Registers routes on a group and records who may call each one in the access table.
struct RecordedRoutes<Context: RequestContext>: RouterMethods {
    let group: RouterGroup<Context>
    let table: RouteAccessTable
    /// What every route of the group records (its method and path are filled in per route).
    let access: RouteAccessTable.Entry

    @discardableResult func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        group.add(middleware: middleware)
        return self
    }

    @discardableResult func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == Context {
        var entry = access
        entry.method = method.rawValue
        entry.path = path.description
        table.record(entry)
        group.on(path, method: method, responder: responder)
        return self
    }
}

/// Routes of one guarded context, with the group's middlewares: the error shape (outside the
/// guard, so that its refusals take the shape too), the key scope and the rate limit.
typealias GuardedRoutes<Context: GuardedContext> = RecordedRoutes<Context>

/// Routes anyone may call (no credentials needed), on the base context.
typealias PublicRoutes = RecordedRoutes<BerthRequestContext>

extension RecordedRoutes where Context: GuardedContext {
    /// - Parameters:
    ///   - shape: renders refusals of this group in an existing client's shape (nil: Berth's).
    ///   - scope: the key scope every route of the group needs.
    ///   - limit: the rate-limit scope every route of the group draws from.
    ///   - authenticate: authentication of the group's own (the validator's `?key=`), before the guard.
    ///   - note: what the access table says beside the policy's own note (a rule of the handlers').
    ///   - signedBy: signs the group's answers, refusals included, for tenants with `answerSigning`
    ///     (the clock gives the signing time); nil: the group's answers are never signed.
    init(
        _ router: Router<BerthRequestContext>,
        _ context: Context.Type,
        table: RouteAccessTable,
        shape: ErrorShape? = nil,
        scope: KeyScope?,
        limit: RateLimiter.Scope?,
        rateLimiter: RateLimiter,
        authenticate: (any MiddlewareProtocol<Request, Response, BerthRequestContext>)? = nil,
        note: String? = nil,
        signedBy clock: (any BerthClock)? = nil
    ) {
        let outer = router.group()
        if let shape { outer.add(middleware: ShapedErrors(shape: shape)) }
        if let authenticate { outer.add(middleware: authenticate) }
        // Inside the authentication (it needs the tenant), outside the guard (its refusals are signed too).
        if let clock { outer.add(middleware: SignAnswers(shape: shape, clock: clock)) }
        let group = outer.group(context: Context.self)
        if scope != nil || limit != nil { group.add(middleware: ScopeAndLimit<Context>(scope: scope, limit: limit, limiter: rateLimiter)) }
        self.init(
            group: group,
            table: table,
            access: .init(
                method: "",
                path: "",
                admits: Context.Policy.admits,
                namesUser: Context.Policy.namesUser,
                scope: scope,
                note: note ?? Context.Policy.note
            )
        )
    }
}

extension RecordedRoutes where Context == BerthRequestContext {
    init(_ router: Router<BerthRequestContext>, table: RouteAccessTable, shape: ErrorShape? = nil) {
        let group = router.group()
        if let shape { group.add(middleware: ShapedErrors(shape: shape)) }
        self.init(
            group: group,
            table: table,
            access: .init(method: "", path: "", admits: PublicAccess.admits, namesUser: false, scope: nil, note: nil)
        )
    }
}

/// The group's guard after authentication, as one middleware (each level of the chain is an async
/// call with a copy of the context): refuses a key that lacks the group's scope (user tokens hold
/// every user scope), then takes a token from the caller's bucket of the group's rate-limit scope
/// before the handler runs (429 + Retry-After).
struct ScopeAndLimit<Context: GuardedContext>: RouterMiddleware {
    let scope: KeyScope?
    let limit: RateLimiter.Scope?
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let scope, !context.caller.scopes.contains(scope) {
            throw APIError(.forbidden, .insufficientScope, "this key lacks the \(scope.rawValue) scope")
        }
        if let limit { try limiter.check(context.caller, scope: limit) }
        return try await next(request, context)
    }
}

/// How an existing client's route group renders a refusal (its own JSON, its own status rules).
struct ErrorShape: Sendable {
    let render: @Sendable (any Error, Logger) throws -> Response

    /// A shape that renders Berth's refusals (every error as ``APIError/from(_:logger:)`` makes it).
    init(api render: @escaping @Sendable (APIError) throws -> Response) {
        self.render = { error, logger in try render(APIError.from(error, logger: logger)) }
    }

    /// A shape that reads the raw error (its own refusal types too).
    init(raw render: @escaping @Sendable (any Error, Logger) throws -> Response) {
        self.render = render
    }
}

/// Renders every refusal of a group in its shape: guards' 401/403, handlers' errors, storage trouble.
struct ShapedErrors<Context: RequestContext>: RouterMiddleware {
    let shape: ErrorShape

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return try shape.render(error, context.logger)
        }
    }
}

extension APIError {
    /// Any error as the API's refusal: Berth's own, the domain's, storage trouble (503, retry), the
    /// framework's, and anything else as a 500 that applied nothing.
    static func from(_ error: any Error, logger: Logger) -> APIError {
        plain(error, logger: logger).localized()
    }

    private static func plain(_ error: any Error, logger: Logger) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as AnsweringFor:
            return plain(error.underlying, logger: logger)
        case let error as DomainError:
            return APIError(error)
        case let error as StoreUnavailable:
            logger.warning("store unavailable: \(error.description)")
            return APIError(
                .serviceUnavailable,
                .temporarilyUnavailable,
                "the service is temporarily unavailable; nothing was applied, try again",
                headers: [.retryAfter: String(error.retryAfter)]
            )
        case is StoreClosed:
            // A request that arrived while the service stops: another instance (or this one, restarted) answers it.
            logger.notice("answered while stopping: the store is closed")
            return APIError(
                .serviceUnavailable,
                .temporarilyUnavailable,
                "the service is stopping; nothing was applied, try again",
                headers: [.retryAfter: "1"]
            )
        case let error as HTTPError:
            let code: ErrorCode =
                switch error.status {
                case .notFound: .notFound
                case .contentTooLarge: .bodyTooLarge
                case .methodNotAllowed: .methodNotAllowed
                default: .badRequest
                }
            let message = error.status == .contentTooLarge ? "request bodies are limited to 64 KiB" : (error.body ?? error.status.reasonPhrase)
            return APIError(error.status, code, message)
        default:
            logger.error("unexpected error: \(String(reflecting: error))")
            return APIError(.internalServerError, .internalError, "an unexpected error occurred; nothing was applied")
        }
    }
}

import Domain
import HTTPTypes
import Hummingbird
import Synchronization
import UseCases

/// CORS, per tenant: apps call Berth from WebViews on other origins (`capacitor://localhost`,
/// `https://localhost`…), and the browser enforces CORS. A tenant lists its origins in the catalog
/// (`allowedOrigins`).
///
/// - A preflight (`OPTIONS` with `Access-Control-Request-Method`) carries no key: it is answered 204
///   with the route's methods and the headers apps send, for an origin some tenant allows.
/// - An answer carries `Access-Control-Allow-Origin` (the origin itself, never `*`) only when the
///   caller's tenant allows the origin (for a request without credentials: some tenant), and
///   exposes the signature, request-id, retry and language headers.
/// - Operators' routes (`/api/admin/…`, `/metrics`) and answers to admin keys never answer
///   cross-origin: the admin page is served by Berth itself.
///
/// Placed outside the error middleware, so refusals carry the headers too (an app must read a 401).
struct CrossOrigin: RouterMiddleware {
    typealias Context = BerthRequestContext

    /// What authentication learnt of the caller, for the answer's headers (set by ``Authenticator``).
    final class Note: Sendable {
        @TaskLocal static var current: Note?
        let caller = Mutex<(tenantId: String, admin: Bool)?>(nil)
    }

    static let allowedRequestHeaders = [
        "Authorization", "Content-Type", "Accept", "Accept-Language", "X-User-Id", "X-Berth-Nonce", "X-Request-Id",
        "X-Ftc-Id", "Stripe-Signature", "Idempotency-Key",
    ]
    static let exposedHeaders =
        "X-Berth-Signature, X-Berth-Signed-At, X-Berth-Key-Id, X-Berth-Nonce, X-Request-Id, Retry-After, Content-Language, Idempotent-Replayed"
    static let maxAgeSeconds = 600

    let origins: [String: [AllowedOrigin]]
    let routes: RouteTable

    init(tenants: TenantRegistry, routes: RouteTable) {
        var origins: [String: [AllowedOrigin]] = [:]
        for runtime in tenants.ordered where !runtime.tenant.origins.isEmpty { origins[runtime.id] = runtime.tenant.origins }
        self.origins = origins
        self.routes = routes
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin] else { return try await next(request, context) }
        let operators = Self.isOperatorPath(request.uri.path)
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            return preflight(request, origin: origin, operators: operators)
        }
        let note = Note()
        var response = try await Note.$current.withValue(note) { try await next(request, context) }
        Self.vary(&response.headers, "Origin")
        guard !operators else { return response }
        let allowed: Bool
        switch note.caller.withLock({ $0 }) {
        case .some(let caller): allowed = !caller.admin && allows(origin, tenantId: caller.tenantId)
        case nil: allowed = allowsAny(origin)
        }
        if allowed {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.accessControlExposeHeaders] = Self.exposedHeaders
        }
        return response
    }

    private func preflight(_ request: Request, origin: String, operators: Bool) -> Response {
        var headers = HTTPFields()
        Self.vary(&headers, "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
        guard !operators, allowsAny(origin) else {
            // No Access-Control-Allow-Origin: the browser refuses the request it asked about.
            return Response(status: .noContent, headers: headers)
        }
        var methods = routes.methods(at: request.uri.path)
        if methods.isEmpty { methods = ["DELETE", "GET", "PATCH", "POST", "PUT"] }
        if methods.contains("GET"), !methods.contains("HEAD") { methods.append("HEAD") }
        headers[.accessControlAllowOrigin] = origin
        headers[.accessControlAllowMethods] = methods.joined(separator: ", ")
        headers[.accessControlAllowHeaders] = Self.allowedRequestHeaders.joined(separator: ", ")
        headers[.accessControlMaxAge] = String(Self.maxAgeSeconds)
        return Response(status: .noContent, headers: headers)
    }

    func allows(_ origin: String, tenantId: String) -> Bool {
        origins[tenantId]?.contains { $0.matches(origin) } ?? false
    }

    func allowsAny(_ origin: String) -> Bool {
        origins.values.contains { list in list.contains { $0.matches(origin) } }
    }

    /// Operators' routes: never cross-origin. Judged by the path's components as the router splits
    /// them (empty ones dropped), so that `//metrics`, `/metrics/` and `//api//admin/keys`, which the
    /// router answers as `/metrics` and `/api/admin/keys`, are operators' routes too (V7).
    static func isOperatorPath(_ path: String) -> Bool {
        var components = path.split(separator: "/", omittingEmptySubsequences: true).makeIterator()
        switch components.next() {
        case "metrics": return components.next() == nil
        case "api": return components.next() == "admin"
        default: return false
        }
    }

    static func vary(_ headers: inout HTTPFields, _ value: String) {
        if let existing = headers[.vary], !existing.isEmpty {
            headers[.vary] = existing + ", " + value
        } else {
            headers[.vary] = value
        }
    }
}

/// `HEAD` on every `GET` route (load balancers and uptime checkers use it): the GET's status and
/// headers, without the body. Wraps the router's responder, because the router picks the route
/// before its middlewares run.
public struct HeadAsGet<Inner: HTTPResponder>: HTTPResponder where Inner.Context == BerthRequestContext {
    public typealias Context = BerthRequestContext
    let inner: Inner

    public func respond(to request: Request, context: Context) async throws -> Response {
        guard request.method == .head else { return try await inner.respond(to: request, context: context) }
        var head = request.head
        head.method = .get
        let response = try await inner.respond(to: Request(head: head, body: request.body), context: context)
        var headers = response.headers
        if headers[.contentLength] == nil, let length = response.body.contentLength { headers[.contentLength] = String(length) }
        return Response(status: response.status, headers: headers, body: ResponseBody())
    }
}

/// The router's responder with `HEAD` served from `GET` routes: what the application runs.
public struct BerthResponders: HTTPResponderBuilder {
    let router: Router<BerthRequestContext>

    public init(router: Router<BerthRequestContext>) { self.router = router }

    // A concrete return type: with `some HTTPResponder<BerthRequestContext>` here the release
    // compiler (Swift 6.3.1, -O) crashed emitting `buildApplication` (signal 11 in IRGen).
    public func buildResponder() -> HeadAsGet<RouterResponder<BerthRequestContext>> {
        HeadAsGet(inner: router.buildResponder())
    }
}

extension HTTPField.Name {
    static let origin = Self("Origin")!
    static let accessControlRequestMethod = Self("Access-Control-Request-Method")!
    static let accessControlAllowOrigin = Self("Access-Control-Allow-Origin")!
    static let accessControlAllowMethods = Self("Access-Control-Allow-Methods")!
    static let accessControlAllowHeaders = Self("Access-Control-Allow-Headers")!
    static let accessControlExposeHeaders = Self("Access-Control-Expose-Headers")!
    static let accessControlMaxAge = Self("Access-Control-Max-Age")!
}

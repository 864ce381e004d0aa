import AppleSignedData
import Crypto
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import Synchronization
import UseCases

/// The claims Berth reads from a tenant user's token (public for the fuzz target).
public struct UserClaims: JWTPayload {
    public var sub: SubjectClaim
    public var iss: IssuerClaim
    public var aud: AudienceClaim?
    public var exp: ExpirationClaim
    public var nbf: NotBeforeClaim?

    public init(sub: SubjectClaim, iss: IssuerClaim, aud: AudienceClaim? = nil, exp: ExpirationClaim, nbf: NotBeforeClaim? = nil) {
        self.sub = sub
        self.iss = iss
        self.aud = aud
        self.exp = exp
        self.nbf = nbf
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        try nbf?.verifyNotBefore()
    }
}

/// Just the issuer, read before verification to pick the tenant whose key verifies the token.
private struct IssuerOnly: Decodable {
    var iss: String
}

/// A token's header: its algorithm (which must be the app's) and key id (JWKS tenants pick the key by it).
private struct TokenHeader: Decodable {
    var alg: String?
    var kid: String?
}

/// Resolves `Authorization: Bearer …` into ``Authentication``: an API key (`berth_…`, whose role
/// says what kind of caller it is) or a tenant user's JWT (the tenant is chosen by the token's
/// issuer). It never refuses a request itself: each route group's guarded context admits the kinds
/// of caller it serves, and its refusals take that group's error shape.
///
/// The router does not hold it as a level of its own: ``ErrorMiddleware`` calls it directly, inside
/// its error handling (a separate level cost about 2 µs of a `GET /healthz`'s 39–43, measured).
struct Authenticator: RouterMiddleware {
    typealias Context = BerthRequestContext

    let tenants: TenantRegistry
    let keys: APIKeyResolver

    /// Longest user id Berth accepts, in UTF-8 bytes (an id is a key into limits and storage).
    static let maximumUserIdBytes = 200

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        // /metrics checks its own token (BERTH_METRICS_TOKEN), which is not a Berth credential.
        if let header = request.headers[.authorization], request.uri.path != "/metrics" {
            context.authentication = await authenticate(header: header, request: request)
            if case .authenticated(let caller) = context.authentication { Self.speak(caller) }
        }
        return try await next(request, context)
    }

    /// Refusals from here on may answer in the caller's tenant's default language.
    /// The answer's CORS headers follow the caller's tenant (``CrossOrigin``).
    static func speak(_ caller: Caller) {
        RequestLanguage.current?.tenantDefault.withLock { $0 = caller.tenant.tenant.defaultLanguage }
        CrossOrigin.Note.current?.caller.withLock { $0 = (caller.tenant.id, caller.kind == .adminKey) }
    }

    func authenticate(header: String, request: Request) async -> Authentication {
        guard header.lowercased().hasPrefix("bearer ") else {
            return .refused(APIError.unauthenticated("Authorization must be 'Bearer <token>'"))
        }
        let token = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
        do {
            return .authenticated(try await identify(token: token, request: request))
        } catch let error as APIError {
            return .refused(error)
        } catch {
            // The key store could not answer: the request is neither admitted nor refused for good.
            return .refused(
                APIError(
                    .serviceUnavailable,
                    .temporarilyUnavailable,
                    "the service is temporarily unavailable; try again",
                    headers: [.retryAfter: "1"]
                )
            )
        }
    }

    /// The caller an API key makes, with the user it names in `X-User-Id` (server and client keys).
    func caller(key secret: String, request: Request) async throws -> Caller {
        guard let key = try await keys.resolve(secret), let tenant = tenants.tenant(id: key.tenantId) else {
            throw APIError.unauthenticated("unknown, revoked or expired API key")
        }
        switch key.role {
        case .admin:
            return Caller(tenant: tenant, kind: .adminKey, key: key, userId: nil)
        case .server, .client:
            var userId: String?
            if let user = request.headers[.xUserId]?.trimmingCharacters(in: .whitespaces), !user.isEmpty {
                userId = try Self.userId(user, field: "X-User-Id", tenant: tenant.tenant)
            }
            return Caller(tenant: tenant, kind: key.role == .server ? .serverKey : .clientKey, key: key, userId: userId)
        }
    }

    /// A user id from outside: at most 200 UTF-8 bytes, in Unicode's composed form (NFC). Swift
    /// compares strings by canonical equivalence and SQL by bytes; one normal form at every entry
    /// makes `jos\u{e9}` and `jose\u{301}` the same user everywhere (L8), not the same in one
    /// comparison and two users in another.
    ///
    /// For an app whose user ids are UUIDs (`userIdFormat: uuid`), the id must be one in its
    /// canonical lowercase spelling: there each id is its user's appAccountToken, and a second
    /// spelling of the same UUID would be a second user holding the first one's token (T1).
    static func userId(_ text: String, field: String, tenant: Tenant) throws -> String {
        let normal = Self.composed(text)
        guard normal.utf8.count <= maximumUserIdBytes, text.utf8.count <= 4 * maximumUserIdBytes else {
            throw APIError(.badRequest, .invalidUserId, "\(field) is limited to \(maximumUserIdBytes) bytes", field: field)
        }
        if tenant.userIdsAreUUIDs, !CanonicalUUID.isCanonical(normal) {
            throw APIError(
                .badRequest,
                .invalidUserId,
                "\(field) must be a UUID in lowercase (8-4-4-4-12 hex digits): this app's user ids are UUIDs",
                field: field
            )
        }
        return normal
    }

    /// NFC; ASCII text (most ids) is already composed and is returned as is, without the lookup.
    static func composed(_ text: String) -> String {
        text.utf8.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCanonicalMapping
    }

    private func identify(token: String, request: Request) async throws -> Caller {
        if token.hasPrefix(APIKeys.prefix) { return try await caller(key: token, request: request) }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        // A token whose JSON names a member twice (read one way here, another way by jwt-kit) is refused.
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]), (try? StrictJSON.check(payload)) != nil,
            let headerBytes = Base64URL.decode(parts[0]), (try? StrictJSON.check(headerBytes)) != nil,
            let issuer = try? JSONDecoder().decode(IssuerOnly.self, from: payload).iss
        else {
            throw APIError.unauthenticated("the bearer token is neither a Berth API key nor a JWT with an issuer")
        }
        guard let tenant = tenants.tenant(issuer: issuer) else {
            throw APIError.unauthenticated("no app accepts tokens from this issuer")
        }
        // The app's configured algorithm, whatever the header says: a token naming another one is
        // refused before any key is looked up.
        let header = Base64URL.decode(parts[0]).flatMap { try? JSONDecoder().decode(TokenHeader.self, from: $0) }
        guard let header, header.alg == tenant.tenant.auth.algorithm else {
            throw APIError.unauthenticated("the token is not signed with this app's algorithm")
        }
        let keys: JWTKeyCollection?
        if let jwks = tenant.jwks {
            do {
                // A key id the set does not publish is refused here: jwt-kit would try its default key.
                guard let published = try await jwks.keys(for: header.kid) else {
                    throw APIError.unauthenticated("the token names a key this app's issuer does not publish")
                }
                keys = published
            } catch is JWKSUnavailable {
                // Temporary: the token may be good, so clients are told to retry, not to sign in again.
                throw APIError(
                    .serviceUnavailable,
                    .temporarilyUnavailable,
                    "the app's token keys cannot be fetched right now; try again",
                    headers: [.retryAfter: "5"]
                )
            }
        } else {
            keys = tenant.userKeys
        }
        guard let userKeys = keys else {
            throw APIError.unauthenticated("user tokens are not configured for this app; use an API key")
        }
        let claims: UserClaims
        do {
            claims = try await userKeys.verify(token, as: UserClaims.self)
        } catch {
            throw APIError.unauthenticated("the token is invalid or expired")
        }
        if let audience = tenant.tenant.auth.audience {
            guard let aud = claims.aud, aud.value.contains(audience) else {
                throw APIError.unauthenticated("the token is not meant for \(audience)")
            }
        }
        let user = Self.composed(claims.sub.value)
        guard !user.isEmpty, user.utf8.count <= Self.maximumUserIdBytes else {
            throw APIError.unauthenticated("the token's subject is empty or too long")
        }
        if tenant.tenant.userIdsAreUUIDs, !CanonicalUUID.isCanonical(user) {
            throw APIError.unauthenticated("the token's subject must be a UUID in lowercase: this app's user ids are UUIDs")
        }
        return Caller(tenant: tenant, kind: .userToken, key: nil, userId: user)
    }
}

extension HTTPField.Name {
    static let xUserId = Self("X-User-Id")!
}

import AppleSignedData
import Crypto
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import Synchronization
import UseCases

/// The claims Berth reads from a tenant user's token.
struct UserClaims: JWTPayload {
    var sub: SubjectClaim
    var iss: IssuerClaim
    var aud: AudienceClaim?
    var exp: ExpirationClaim
    var nbf: NotBeforeClaim?

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        try nbf?.verifyNotBefore()
    }
}

/// Just the issuer, read before verification to pick the tenant whose key verifies the token.
private struct IssuerOnly: Decodable {
    var iss: String
}

/// The key id of a token's header (JWKS tenants pick the key by it).
private struct KeyIdOnly: Decodable {
    var kid: String?
}

/// Resolves `Authorization: Bearer …` into an ``Identity``: an API key (`berth_…`) or a tenant
/// user's JWT (the tenant is chosen by the token's issuer). Routes then demand what they need.
struct Authenticator: RouterMiddleware {
    typealias Context = BerthRequestContext

    let tenants: TenantRegistry
    let store: any Store
    let keyCache: APIKeyCache

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        // /metrics checks its own token (BERTH_METRICS_TOKEN), which is not a Berth credential.
        // A validator URL of cordova-plugin-purchase can carry no header: it names the key in ?key=.
        let header = request.headers[.authorization]
            ?? (request.uri.path.hasPrefix(CordovaValidatorRoutes.pathPrefix) ? request.uri.queryParameters["key"].map { "Bearer \($0)" } : nil)
        if let header, request.uri.path != "/metrics" {
            do {
                guard header.lowercased().hasPrefix("bearer ") else {
                    throw APIError.unauthenticated("Authorization must be 'Bearer <token>'")
                }
                let token = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
                context.identity = try await identify(token: token, request: request)
            } catch let error as APIError {
                // Existing clients read their own error shapes, 401s included.
                if let response = try CompatibilityShapes.refusal(error, path: request.uri.path, tenants: tenants) { return response }
                throw error
            }
        }
        return try await next(request, context)
    }

    private func identify(token: String, request: Request) async throws -> Identity {
        if token.hasPrefix(APIKeys.prefix) {
            let hash = APIKeys.hash(token)
            let found: APIKey?
            if let cached = keyCache.lookup(hash) {
                found = cached
            } else {
                found = try await store.read { try $0.keys.key(hash: hash) }
                if let found { keyCache.store(found, for: hash) }
            }
            guard let key = found, let tenant = tenants.tenant(id: key.tenantId) else {
                throw APIError.unauthenticated("unknown or revoked API key")
            }
            switch key.role {
            case .admin:
                return .admin(tenant: tenant, keyId: key.id)
            case .server:
                if let user = request.headers[.xUserId]?.trimmingCharacters(in: .whitespaces), !user.isEmpty {
                    guard user.count <= 200 else { throw APIError(.badRequest, .invalidUserId, "X-User-Id is limited to 200 characters") }
                    return .user(tenant: tenant, userId: user, via: "server:\(key.id)")
                }
                return .server(tenant: tenant, keyId: key.id)
            }
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
              let issuer = try? JSONDecoder().decode(IssuerOnly.self, from: payload).iss
        else {
            throw APIError.unauthenticated("the bearer token is neither a Berth API key nor a JWT with an issuer")
        }
        guard let tenant = tenants.tenant(issuer: issuer) else {
            throw APIError.unauthenticated("no tenant accepts tokens from issuer \(issuer)")
        }
        let keys: JWTKeyCollection?
        if let jwks = tenant.jwks {
            let kid = Base64URL.decode(parts[0]).flatMap { try? JSONDecoder().decode(KeyIdOnly.self, from: $0) }?.kid
            keys = await jwks.keys(for: kid)
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
        let user = claims.sub.value
        guard !user.isEmpty, user.count <= 200 else { throw APIError.unauthenticated("the token's subject is empty or too long") }
        return .user(tenant: tenant, userId: user, via: "user:\(user)")
    }
}

extension HTTPField.Name {
    static let xUserId = Self("X-User-Id")!
}

/// API key format and hashing: keys are shown once; only their SHA-256 is stored.
public enum APIKeys {
    public static let prefix = "berth_"

    /// A new random key, `berth_<tenant>_<43 base64url characters>`.
    public static func generate(tenantId: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "\(prefix)\(tenantId)_\(Base64URL.encode(bytes))"
    }

    public static func hash(_ key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).hexString
    }
}

/// Remembers resolved API keys for a short while so that each request does not read the database.
final class APIKeyCache: Sendable {
    private let entries = Mutex<[String: (key: APIKey, until: ContinuousClock.Instant)]>([:])
    private let lifetime: Duration

    init(lifetime: Duration = .seconds(30)) {
        self.lifetime = lifetime
    }

    func lookup(_ hash: String) -> APIKey? {
        entries.withLock { entries in
            guard let entry = entries[hash] else { return nil }
            guard entry.until > .now else {
                entries[hash] = nil
                return nil
            }
            return entry.key
        }
    }

    func store(_ key: APIKey, for hash: String) {
        entries.withLock { entries in
            if entries.count > 10_000 { entries.removeAll() }
            entries[hash] = (key, .now + lifetime)
        }
    }
}

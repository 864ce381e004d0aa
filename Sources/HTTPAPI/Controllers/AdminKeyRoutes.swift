import Domain
import Foundation
import Hummingbird
import UseCases

/// `/api/admin/keys…`: the app's API keys, for its operators (admin key): list, create (the secret
/// is shown once), revoke (stops working on every instance within seconds) and rotate (a new key;
/// the old one keeps working until the overlap ends).
struct AdminKeyRoutes {
    let records: OperatorRecords
    let createKey: CreateAPIKey
    let revokeKey: RevokeAPIKey
    let rotateKey: RotateAPIKey
    let clock: any BerthClock

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<AdminRequestContext> {
        let routes = RouteCollection(context: AdminRequestContext.self)
        routes.get("/api/admin/keys", use: getAdminKeys)
        routes.post("/api/admin/keys", use: postAdminKeys)
        routes.post("/api/admin/keys/{id}/revoke", use: postAdminKeysRevoke)
        routes.post("/api/admin/keys/{id}/rotate", use: postAdminKeysRotate)
        return routes
    }

    /// `GET /api/admin/keys`
    func getAdminKeys(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let tenantId = context.tenant.id, now = clock.now()
        let keys = try await records.keys(tenantId: tenantId)
        return try JSONCoding.response(KeyListResponse(keys: keys.map { KeyDTO($0, now: now) }))
    }

    /// `POST /api/admin/keys`
    func postAdminKeys(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(CreateKeyRequest.self, from: request)
        guard let role = APIKeyRole(rawValue: body.role) else {
            throw APIError(.badRequest, .invalidField, "role must be client, server or admin", field: "role")
        }
        let scopes = try body.scopes.map(Self.scopes)
        let now = clock.now()
        let issued = try await createKey(
            tenantId: context.tenant.id,
            role: role,
            scopes: scopes,
            name: body.name,
            actor: context.actor,
            now: now
        )
        return try JSONCoding.response(IssuedKeyResponse(key: KeyDTO(issued.key, now: now), secret: issued.secret), status: .created)
    }

    /// `POST /api/admin/keys/{id}/revoke`
    func postAdminKeysRevoke(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let now = clock.now()
        let key = try await revokeKey(id: try Self.id(context), tenantId: context.tenant.id, actor: context.actor, now: now)
        return try JSONCoding.response(KeyResponse(key: KeyDTO(key, now: now)))
    }

    /// `POST /api/admin/keys/{id}/rotate`
    func postAdminKeysRotate(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(RotateKeyRequest.self, from: request, emptyAs: RotateKeyRequest())
        let now = clock.now()
        let result = try await rotateKey(
            id: try Self.id(context),
            tenantId: context.tenant.id,
            overlap: body.overlapSeconds.map(TimeInterval.init),
            actor: context.actor,
            now: now
        )
        return try JSONCoding.response(
            IssuedKeyResponse(
                key: KeyDTO(result.issued.key, now: now),
                secret: result.issued.secret,
                previous: KeyDTO(result.old, now: now)
            ),
            status: .created
        )
    }

    static func id(_ context: some RequestContext) throws -> Int64 {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            throw APIError(.notFound, .keyNotFound, "key ids are positive integers", field: "id")
        }
        return id
    }

    static func scopes(_ names: [String]) throws -> Set<KeyScope> {
        switch KeyScope.parse(names: names) {
        case .success(let scopes): return scopes
        case .failure(let unknown):
            throw APIError(
                .badRequest,
                .invalidField,
                "unknown scope \(unknown.name); scopes are \(KeyScope.allCases.map(\.rawValue).joined(separator: ", "))",
                field: "scopes"
            )
        }
    }
}

/// An API key as operators see it: never the secret, only its first characters.
struct KeyDTO: Codable {
    var id: Int64
    var role: String
    var scopes: [String]
    var name: String
    var hint: String
    /// `active`, `expiring` (rotated out, still valid until `expiresAt`), `expired`, `revoked`.
    var status: String
    var createdAt: APITime
    var expiresAt: APITime?
    var revokedAt: APITime?
    var lastUsedAt: APITime?
    var rotatedFrom: Int64?

    init(_ key: APIKey, now: Date) {
        id = key.id
        role = key.role.rawValue
        scopes = key.scopes.sorted().map(\.rawValue)
        name = key.name
        hint = key.hint
        status = key.status(at: now).rawValue
        createdAt = APITime(key.createdAt)
        expiresAt = key.expiresAt.map(APITime.init)
        revokedAt = key.revokedAt.map(APITime.init)
        lastUsedAt = key.lastUsedAt.map(APITime.init)
        rotatedFrom = key.rotatedFrom
    }
}

struct KeyListResponse: Codable { var keys: [KeyDTO] }
struct KeyResponse: Codable { var key: KeyDTO }

/// A new key: the record and the secret, which Berth shows this once.
struct IssuedKeyResponse: Codable {
    var key: KeyDTO
    var secret: String
    /// The key it replaced (rotation), with its new `expiresAt`.
    var previous: KeyDTO?
}

struct CreateKeyRequest: Codable, RefusesNull {
    var role: String
    var scopes: [String]?
    var name: String?
}

struct RotateKeyRequest: Codable, RefusesNull {
    /// How long the old key keeps working, in seconds (default 86,400; at most 90 days).
    var overlapSeconds: Int64?
}

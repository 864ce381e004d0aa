import Domain
import Foundation
import Hummingbird
import UseCases

/// The inventory as data (admin key): `GET/POST /api/admin/resources`, `PATCH
/// /api/admin/resources/{id}` (a JSON merge patch of the resource), `POST
/// /api/admin/resources/{id}/retire`. A body is a resource exactly as products.json writes one.
struct InventoryRoutes {
    let inventory: ManageInventory

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<AdminRequestContext> {
        let router = RouteCollection(context: AdminRequestContext.self)
        router.get("/api/admin/resources", use: getAdminResources)
        router.post("/api/admin/resources", use: postAdminResources)
        router.patch("/api/admin/resources/{id}", use: patchAdminResources)
        router.post("/api/admin/resources/{id}/retire", use: postAdminResourcesRetire)
        return router
    }

    /// `GET /api/admin/resources`
    func getAdminResources(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let items = try await inventory.list(runtime: context.tenant)
        return try JSONCoding.response(InventoryListResponse(resources: items.map(InventoryItemDTO.init)))
    }

    /// `POST /api/admin/resources`
    func postAdminResources(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let resource = try await JSONCoding.decode(Resource.self, from: request)
        let saved = try await inventory.create(runtime: context.tenant, resource: resource, actor: context.actor)
        return try JSONCoding.response(InventoryItemResponse(resource: InventoryItemDTO(saved)), status: .created)
    }

    /// `PATCH /api/admin/resources/{id}`
    func patchAdminResources(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let id = try Self.id(context)
        let patch = try await Self.mergePatch(request)
        let saved = try await inventory.update(runtime: context.tenant, id: id, actor: context.actor) { stored in
            try Self.apply(patch, to: stored)
        }
        return try JSONCoding.response(InventoryItemResponse(resource: InventoryItemDTO(saved)))
    }

    /// `POST /api/admin/resources/{id}/retire`
    func postAdminResourcesRetire(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let saved = try await inventory.retire(runtime: context.tenant, id: try Self.id(context), actor: context.actor)
        return try JSONCoding.response(InventoryItemResponse(resource: InventoryItemDTO(saved)))
    }

    static func id(_ context: AdminRequestContext) throws -> String {
        guard let raw = context.parameters.get("id"), let id = raw.removingPercentEncoding, !id.isEmpty, id.count <= 100 else {
            throw APIError(.badRequest, .invalidField, "name a resource id", field: "id")
        }
        return id
    }

    /// The body as a JSON object (RFC 7386): members replace the resource's, `null` removes an
    /// optional one (a required one then makes the resource incomplete: 400 naming it).
    static func mergePatch(_ request: Request) async throws -> Data {
        let data = Data(try await JSONCoding.body(request).readableBytesView)
        guard (try? JSONSerialization.jsonObject(with: data, options: [])) is [String: Any] else {
            throw APIError(.badRequest, .invalidJson, "the body is a JSON object: the resource's members to change (null removes an optional one)")
        }
        return data
    }

    static func apply(_ patch: Data, to resource: Resource) throws -> Resource {
        guard var members = try JSONSerialization.jsonObject(with: JSONEncoder().encode(resource)) as? [String: Any],
            let changes = try JSONSerialization.jsonObject(with: patch) as? [String: Any]
        else { throw APIError(.badRequest, .invalidJson, "the body is a JSON object") }
        for (key, value) in changes {
            if value is NSNull { members[key] = nil } else { members[key] = value }
        }
        let merged = try JSONSerialization.data(withJSONObject: members)
        do {
            return try JSONDecoder().decode(Resource.self, from: merged)
        } catch let error as DecodingError {
            throw JSONCoding.describe(error)
        }
    }
}

struct InventoryItemDTO: Codable {
    /// The resource exactly as products.json writes one (`retired: true` once retired).
    var resource: Resource
    /// The tenant's inventory version that last changed it.
    var version: Int64
    var createdAt: APITime
    var updatedAt: APITime

    init(_ stored: StoredResource) {
        resource = stored.resource
        version = stored.version
        createdAt = APITime(stored.createdAt)
        updatedAt = APITime(stored.updatedAt)
    }
}

struct InventoryListResponse: Codable {
    var resources: [InventoryItemDTO]
}

struct InventoryItemResponse: Codable {
    var resource: InventoryItemDTO
}

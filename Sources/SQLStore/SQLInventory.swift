import Domain
import Foundation

/// Resources as data, per tenant, with a version that moves on at every change (SQLite and PostgreSQL).
struct SQLInventory: InventoryRepository {
    let db: any SQLExecutor

    static let columns = "resource_id, body, version, created_at, updated_at"

    static func decode(_ row: SQLRow) throws -> StoredResource {
        let body: String = row["body"]
        return StoredResource(
            resource: try JSONDecoder().decode(Resource.self, from: Data(body.utf8)),
            version: row["version"],
            createdAt: row.date("created_at"),
            updatedAt: row.date("updated_at")
        )
    }

    static func encode(_ resource: Resource) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(resource), as: UTF8.self)
    }

    func resources(tenantId: String) throws -> [StoredResource] {
        try db.rows(
            "SELECT \(Self.columns) FROM inventory_resources WHERE tenant_id = ? ORDER BY position, resource_id",
            [tenantId]
        ).map(Self.decode)
    }

    func resource(tenantId: String, id: String, forUpdate: Bool) throws -> StoredResource? {
        // Changes of one tenant's inventory take turns (a version is taken once, positions stay unique).
        if forUpdate { try db.lock("inventory:\(tenantId)") }
        return try db.row(
            "SELECT \(Self.columns) FROM inventory_resources WHERE tenant_id = ? AND resource_id = ?",
            [tenantId, id]
        ).map(Self.decode)
    }

    func versions() throws -> [String: Int64] {
        var versions: [String: Int64] = [:]
        for row in try db.rows("SELECT tenant_id, version FROM inventory_versions", []) { versions[row["tenant_id"]] = row["version"] }
        return versions
    }

    func seed(tenantId: String, resources: [Resource], now: Date) throws -> Int {
        try db.lock("inventory:\(tenantId)")
        let known = Set(
            try db.rows("SELECT resource_id FROM inventory_resources WHERE tenant_id = ?", [tenantId]).map { $0["resource_id"] as String }
        )
        let missing = resources.filter { !known.contains($0.id) }
        guard !missing.isEmpty else { return 0 }
        let version = try nextVersion(tenantId)
        var position = try nextPosition(tenantId)
        for resource in missing {
            try insert(tenantId: tenantId, resource: resource, position: position, version: version, now: now)
            position += 1
        }
        return missing.count
    }

    func save(tenantId: String, resource: Resource, now: Date) throws -> Int64 {
        try db.lock("inventory:\(tenantId)")
        let version = try nextVersion(tenantId)
        let changed = try db.run(
            "UPDATE inventory_resources SET body = ?, version = ?, updated_at = ? WHERE tenant_id = ? AND resource_id = ?",
            [try Self.encode(resource), version, now.epochMilliseconds, tenantId, resource.id]
        )
        if changed == 0 { try insert(tenantId: tenantId, resource: resource, position: try nextPosition(tenantId), version: version, now: now) }
        return version
    }

    private func insert(tenantId: String, resource: Resource, position: Int64, version: Int64, now: Date) throws {
        try db.run(
            """
            INSERT INTO inventory_resources (tenant_id, resource_id, position, body, version, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [tenantId, resource.id, position, try Self.encode(resource), version, now.epochMilliseconds, now.epochMilliseconds]
        )
    }

    private func nextPosition(_ tenantId: String) throws -> Int64 {
        (try db.row("SELECT MAX(position) AS p FROM inventory_resources WHERE tenant_id = ?", [tenantId]).flatMap { $0["p"] as Int64? } ?? -1) + 1
    }

    private func nextVersion(_ tenantId: String) throws -> Int64 {
        try db.run(
            """
            INSERT INTO inventory_versions (tenant_id, version) VALUES (?, 1)
            ON CONFLICT (tenant_id) DO UPDATE SET version = inventory_versions.version + 1
            """,
            [tenantId]
        )
        return try db.row("SELECT version FROM inventory_versions WHERE tenant_id = ?", [tenantId]).map { $0["version"] as Int64 } ?? 1
    }
}

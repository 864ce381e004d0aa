import ArgumentParser
import Domain
import Foundation
import UseCases

/// `berth inventory export` and `berth inventory import FILE [--dry-run]`: the inventory (what each
/// tenant rents and sells) kept as code beside the admin API. The file has products.json's shape,
/// `{"tenants": [{"id", "resources": [...]}]}`, so products.json itself can be imported.
struct InventoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inventory",
        abstract: "Keep the inventory (resources) as code: export it, import a file.",
        subcommands: [Export.self, Import.self]
    )

    struct File: Codable {
        struct TenantInventory: Codable {
            var id: String
            var resources: [Resource]
        }
        var tenants: [TenantInventory]
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Print the stored inventory as JSON (products.json's shape), retired resources included."
        )
        @Option(help: "Only this tenant.") var tenant: String?
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            let only = tenant
            let file = try await withPreparedStore(try storage.setup(), logger: makeLogger("berth.inventory")) { catalog, store in
                let ids = catalog.tenants.map(\.id).filter { only == nil || $0 == only }
                guard !ids.isEmpty else { throw ValidationError("no tenant \(only ?? "") in the catalog") }
                return File(
                    tenants: try await store.read { tx in
                        try ids.map { File.TenantInventory(id: $0, resources: try tx.inventory.resources(tenantId: $0).map(\.resource)) }
                    }
                )
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(file), as: UTF8.self))
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Make the stored inventory what FILE says: resources added or changed (each checked as the catalog checks it, audited).",
            discussion: """
                Resources the file does not name are left as they are (retire one with "retired": true). \
                --dry-run prints what would change and changes nothing. Running instances see the change within \
                BERTH_INVENTORY_REFRESH_MS.
                """
        )
        @Argument(help: "A file as `berth inventory export` writes it (products.json works too).") var file: String
        @Flag(name: .customLong("dry-run"), help: "Print the changes; write nothing.") var dryRun = false
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            let wanted: File
            do {
                wanted = try JSONDecoder().decode(File.self, from: data)
            } catch {
                throw ValidationError("\(file) is not an inventory ({\"tenants\": [{\"id\", \"resources\": [...]}]}): \(error)")
            }
            let dryRun = self.dryRun
            let lines = try await withPreparedStore(try storage.setup(), logger: makeLogger("berth.inventory")) { catalog, store in
                var lines: [String] = []
                let inventory = ManageInventory(
                    store: store,
                    tenants: TenantRegistry([]),
                    clock: SystemClock(),
                    logger: makeLogger("berth.inventory")
                )
                for entry in wanted.tenants {
                    guard var tenant = catalog.tenant(id: entry.id) else { throw ValidationError("no tenant \(entry.id) in the catalog") }
                    let stored = try await store.read { tx in try tx.inventory.resources(tenantId: entry.id) }.map(\.resource)
                    tenant.resources = stored
                    for resource in entry.resources {
                        let before = stored.first { $0.id == resource.id }
                        guard before != resource else { continue }
                        // Checked before anything is written: a dry run refuses what the import would refuse.
                        do {
                            tenant = try tenant.with(resource: resource)
                        } catch {
                            throw ValidationError("\(entry.id) \(resource.id): \(String(describing: error))")
                        }
                        lines.append(
                            before.map { "~ \(entry.id) \(resource.id): \(Self.difference($0, resource))" }
                                ?? "+ \(entry.id) \(resource.id) (\(resource.kind.rawValue), \(resource.name))"
                        )
                    }
                    guard !dryRun else { continue }
                    for resource in entry.resources where stored.first(where: { $0.id == resource.id }) != resource {
                        _ = try await inventory.put(tenant: tenant, resource: resource, actor: Actor(rawValue: "cli"))
                    }
                }
                return lines
            }
            for line in lines { print(line) }
            print(
                lines.isEmpty
                    ? "nothing to change" : dryRun ? "\(lines.count) change(s), not written (--dry-run)" : "\(lines.count) change(s) written"
            )
        }

        /// The members that differ: `pricePerDayMinor 8000 → 9000, retired – → true`.
        static func difference(_ old: Resource, _ new: Resource) -> String {
            func members(_ resource: Resource) -> [String: String] {
                guard let data = try? JSONEncoder().encode(resource), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
                else { return [:] }
                return object.mapValues { "\($0)" }
            }
            let before = members(old), after = members(new)
            return Set(before.keys).union(after.keys).sorted().compactMap { key in
                before[key] == after[key] ? nil : "\(key) \(before[key] ?? "–") → \(after[key] ?? "–")"
            }.joined(separator: ", ")
        }
    }
}

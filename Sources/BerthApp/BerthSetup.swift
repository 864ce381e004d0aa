import AsyncHTTPClient
import Domain
import Foundation
import HTTPAPI
import Logging
import SQLStore
import UseCases

/// The composition root: reads the catalog file, opens the store, applies migrations, syncs the
/// catalog's tenants, seeds new credit products and builds the services. The one start-up sequence shared by `berth serve`,
/// `berth migrate`, `berth keys` and the tests; configuration errors surface here, at start.
public struct BerthSetup: Sendable {
    public var catalogURL: URL
    /// The SQLite file (the embedded default), unless `postgres` is set.
    public var databasePath: String
    /// PostgreSQL, when the database URL is `postgres://…`.
    public var postgres: PostgresSettings?
    /// A directory of migrations to apply instead of the ones compiled into the binary (nil: those).
    public var migrationsURL: URL?
    public var environment: [String: String]

    public init(catalogURL: URL, databasePath: String, postgres: PostgresSettings? = nil, migrationsURL: URL? = nil, environment: [String: String]) {
        self.catalogURL = catalogURL
        self.databasePath = databasePath
        self.postgres = postgres
        self.migrationsURL = migrationsURL
        self.environment = environment
    }

    /// Reads and validates the catalog file.
    public func loadCatalog() throws -> Catalog {
        let data: Data
        do { data = try Data(contentsOf: catalogURL) } catch {
            throw CatalogError("cannot read catalog \(catalogURL.path): \(error.localizedDescription)")
        }
        return try Catalog.decode(data, name: catalogURL.lastPathComponent)
    }

    /// The catalog and a migrated store whose tenants match it.
    public func prepareStore(logger: Logger, now: Date) async throws -> (Catalog, SQLiteStore) {
        let catalog = try loadCatalog()
        let existed = (try? FileManager.default.attributesOfItem(atPath: databasePath)[.size] as? Int).map { $0 > 0 } ?? false
        let store = try SQLiteStore.open(path: databasePath)
        do {
            // A file that is there but holds no Berth schema is not taken for a new database: it may be a
            // copy made without its -wal file, or another program's file.
            if existed, environment["BERTH_CREATE_DATABASE"] != "1", try !store.holdsBerthSchema() {
                throw StoreError(
                    """
                    \(databasePath) exists but holds no Berth schema: refusing to start a new database in it. If it is a copy of a \
                    database, the copy is incomplete (copy berth.sqlite with its -wal file, or use `berth backup`); to start \
                    anew in this file, set BERTH_CREATE_DATABASE=1
                    """
                )
            }
            try await prepare(store, catalog: catalog, logger: logger, now: now)
            return (catalog, store)
        } catch {
            try? store.close()
            throw error
        }
    }

    /// Brings an open store up to date with the code and the catalog: pending migrations (under the
    /// migration lock, so instances starting together take turns), the catalog's tenants, and the
    /// credit products the catalog adds. Safe to run on every start of every instance.
    public func prepare(_ store: some MigratableStore, catalog: Catalog, logger: Logger, now: Date) async throws {
        let migrator = try migrationsURL.map(Migrator.init(directory:)) ?? Migrator()
        let applied = try await migrator.apply(to: store, now: now)
        if !applied.isEmpty { logger.info("applied migrations: \(applied.joined(separator: ", "))") }
        let tenants = catalog.tenants.map { (id: $0.id, name: $0.name) }
        try await store.write { tx in try tx.keys.syncTenants(tenants, now: now) }
        // products.json seeds the credit products; once stored, operators' edits win.
        let seeds = catalog.tenants.flatMap { tenant in tenant.products.compactMap { CreditProduct($0, tenant: tenant, now: now) } }
        let added = try await store.write { tx in try tx.credits.seed(seeds) }
        if added > 0 { logger.info("added \(added) credit product(s) from the catalog") }
        // products.json's resources are the starting inventory: the ones a tenant lacks are added;
        // once stored, the inventory (the admin API, `berth inventory import`) wins.
        let resources = try await store.write { tx in
            try catalog.tenants.reduce(0) { $0 + (try tx.inventory.seed(tenantId: $1.id, resources: $1.resources, now: now)) }
        }
        if resources > 0 { logger.info("added \(resources) resource(s) from the catalog to the inventory") }
    }

    /// Where the data lives, as logs show it (never a password).
    public var databaseDescription: String {
        postgres?.redacted ?? "sqlite:\(databasePath)"
    }

    /// Everything `buildApplication` needs, over an open store. Throws when a tenant names a secret
    /// that is not set (webhooks), so that nothing is queued that could never be sent.
    /// - Parameter httpClient: what calls Apple, Google, Stripe and key sets; `berth serve` makes one
    ///   (``OutboundClient``) and shuts it down with the application; tests and tools pass their own.
    /// - Parameter readInventory: read the stored inventory now (the store must be running and
    ///   prepared); a PostgreSQL start, whose pool runs only with the application, reads it after
    ///   `prepare` instead (``BerthServices/manageInventory``'s `refresh()`).
    public func services(
        catalog: Catalog,
        store: any Store,
        clock: any BerthClock = SystemClock(),
        httpClient: HTTPClient,
        readInventory: Bool = true,
        logger: Logger
    ) async throws -> BerthServices {
        let tenants = try await TenantRegistry.load(
            catalog,
            baseDirectory: catalogURL.deletingLastPathComponent(),
            environment: environment,
            clock: clock,
            httpClient: httpClient,
            logger: logger
        )
        var services = BerthServices(tenants: tenants, store: store, clock: clock, logger: logger)
        // The stored inventory, not the catalog's resources, is what the tenants rent and sell.
        if readInventory { try await services.manageInventory.refresh() }
        services.expectedMigrations = Set(try (migrationsURL.map(Migrator.init(directory:)) ?? Migrator()).migrations.map(\.version))
        services.metricsToken = environment["BERTH_METRICS_TOKEN"].flatMap { $0.isEmpty ? nil : Secret($0) }
        services.trustedProxies = TrustedProxies(environment: environment["BERTH_TRUSTED_PROXIES"])
        if let text = environment["BERTH_INVENTORY_REFRESH_MS"] {
            guard let milliseconds = Int(text), (50...60_000).contains(milliseconds) else {
                throw ConfigurationError("BERTH_INVENTORY_REFRESH_MS must be 50 to 60000 (milliseconds between reads of the inventory)")
            }
            services.inventoryRefreshInterval = .milliseconds(milliseconds)
        }
        if let text = environment["BERTH_WEBHOOK_PARALLEL"] {
            guard let parallel = Int(text), (1...64).contains(parallel) else {
                throw ConfigurationError("BERTH_WEBHOOK_PARALLEL must be 1 to 64 (subjects of one tenant whose webhooks are sent at once)")
            }
            services.webhookParallel = parallel
        }
        return services
    }
}

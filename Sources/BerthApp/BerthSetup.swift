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
    }

    /// Where the data lives, as logs show it (never a password).
    public var databaseDescription: String {
        postgres?.redacted ?? "sqlite:\(databasePath)"
    }

    /// Everything `buildApplication` needs, over an open store. Throws when a tenant names a secret
    /// that is not set (webhooks), so that nothing is queued that could never be sent.
    /// - Parameter httpClient: what calls Apple, Google, Stripe and key sets; `berth serve` makes one
    ///   (``OutboundClient``) and shuts it down with the application (nil: each client's default).
    public func services(
        catalog: Catalog,
        store: any Store,
        clock: any BerthClock = SystemClock(),
        httpClient: HTTPClient? = nil,
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
        services.expectedMigrations = Set(try (migrationsURL.map(Migrator.init(directory:)) ?? Migrator()).migrations.map(\.version))
        services.metricsToken = environment["BERTH_METRICS_TOKEN"].flatMap { $0.isEmpty ? nil : Secret($0) }
        services.trustedProxies = TrustedProxies(environment: environment["BERTH_TRUSTED_PROXIES"])
        return services
    }
}

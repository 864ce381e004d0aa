import Domain
import Foundation
import Logging
import SQLStore

/// Opens the database, applies migrations, syncs the catalog's tenants and builds the services:
/// the one start-up sequence shared by `berth serve`, `berth migrate`, `berth keys` and the tests.
public struct BerthSetup: Sendable {
    public var catalogURL: URL
    public var databasePath: String
    public var migrationsURL: URL
    public var environment: [String: String]

    public init(catalogURL: URL, databasePath: String, migrationsURL: URL, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.catalogURL = catalogURL
        self.databasePath = databasePath
        self.migrationsURL = migrationsURL
        self.environment = environment
    }

    /// The catalog and a migrated database whose tenants match it.
    public func prepareDatabase(logger: Logger, now: Date = Date()) async throws -> (Catalog, SQLiteDatabase) {
        let catalog = try Catalog.load(contentsOf: catalogURL)
        let migrator = try Migrator(directory: migrationsURL)
        let database = try await SQLiteDatabase.open(path: databasePath, logger: logger)
        do {
            let applied = try await migrator.apply(to: database, now: now)
            if !applied.isEmpty { logger.info("applied migrations: \(applied.joined(separator: ", "))") }
            try await SQLBookingStore(database: database).syncTenants(catalog, now: now)
            return (catalog, database)
        } catch {
            try? await database.close()
            throw error
        }
    }

    /// Everything `buildApplication` needs, over an open database.
    public func services(catalog: Catalog, database: SQLiteDatabase, clock: any BerthClock = SystemClock(), logger: Logger) async throws -> BerthServices {
        let tenants = try await TenantRegistry.load(catalog, baseDirectory: catalogURL.deletingLastPathComponent(), environment: environment, logger: logger)
        let store = SQLBookingStore(database: database)
        return BerthServices(tenants: tenants, bookings: store, keys: store, receiptChecks: store, notifications: store, webhooks: store, clock: clock, logger: logger)
    }
}

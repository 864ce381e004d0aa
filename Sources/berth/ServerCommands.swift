import ArgumentParser
import Domain
import Foundation
import HTTPAPI
import Hummingbird
import Logging
import SQLStore
import UseCases
import BerthApp

/// Options shared by the commands that open the database.
struct StorageOptions: ParsableArguments {
    @Option(help: "Database URL: sqlite:PATH, or postgres://USER@HOST:PORT/DATABASE[?sslmode=…&pool_size=…] with the password in BERTH_DATABASE_PASSWORD (env BERTH_DATABASE; default sqlite:./berth.sqlite).")
    var database: String?

    @Option(help: "Catalog of tenants and products (env BERTH_CATALOG; default ./products.json).")
    var catalog: String?

    @Option(help: "Directory of numbered SQL migrations (env BERTH_MIGRATIONS; default ./migrations).")
    var migrations: String?

    func setup() throws -> BerthSetup {
        let environment = ProcessInfo.processInfo.environment
        let databaseURL = database ?? environment["BERTH_DATABASE"] ?? "sqlite:./berth.sqlite"
        let isPostgres = databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://")
        return BerthSetup(
            catalogURL: URL(fileURLWithPath: catalog ?? environment["BERTH_CATALOG"] ?? "./products.json").standardizedFileURL,
            databasePath: isPostgres ? "" : try SQLiteStore.path(fromURL: databaseURL),
            postgres: isPostgres ? try PostgresSettings(url: databaseURL, environment: environment) : nil,
            migrationsURL: URL(fileURLWithPath: migrations ?? environment["BERTH_MIGRATIONS"] ?? "./migrations", isDirectory: true),
            environment: environment
        )
    }
}

func makeLogger(_ label: String) -> Logger {
    _ = logFormatChosen
    var logger = Logger(label: label)
    let level = ProcessInfo.processInfo.environment["BERTH_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    logger.logLevel = level
    return logger
}

/// `berth serve`.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the HTTP service (migrates the database first).")

    @Option(help: "Address to listen on (env BERTH_HOST; default 127.0.0.1).") var host: String?
    @Option(help: "Port to listen on (env BERTH_PORT; default 8080; 0 lets the system choose).") var port: Int?
    @Option(help: "Write the port actually bound to this file once listening (useful with --port 0).") var portFile: String?
    @OptionGroup var storage: StorageOptions

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let logger = makeLogger("berth")
        let setup = try storage.setup()
        let server = ServerConfiguration(
            host: host ?? environment["BERTH_HOST"] ?? "127.0.0.1",
            port: port ?? environment["BERTH_PORT"].flatMap(Int.init) ?? 8080,
            portFile: portFile
        )
        if let postgres = setup.postgres {
            // The connection pool is a service of the application; migrations run once it runs, before the server listens.
            let catalog = try setup.loadCatalog()
            let store = try PostgresStore(settings: postgres, logger: logger)
            do {
                let services = try await setup.services(catalog: catalog, store: store, logger: logger)
                logger.info("serving \(catalog.tenants.count) tenant(s) from \(setup.catalogURL.path) on \(server.host):\(server.port), database \(setup.databaseDescription)")
                try await buildApplication(services: services, server: server, storeService: store, beforeServerStarts: {
                    try await setup.prepare(store, catalog: catalog, logger: logger, now: Date())
                }).runService()
            } catch {
                try? store.close()
                throw error
            }
            try store.close()
            return
        }
        let (catalog, store) = try await setup.prepareStore(logger: logger, now: Date())
        let services: BerthServices
        do {
            services = try await setup.services(catalog: catalog, store: store, logger: logger)
        } catch {
            try? store.close()
            throw error
        }
        logger.info("serving \(catalog.tenants.count) tenant(s) from \(setup.catalogURL.path) on \(server.host):\(server.port), database \(setup.databaseDescription)")
        do {
            try await buildApplication(services: services, server: server).runService()
        } catch {
            try? store.close()
            throw error
        }
        try store.close()
    }
}

/// Runs `body` on the prepared store of `setup` (migrated, tenants synced), whichever backend it
/// names, and closes the store afterwards.
func withPreparedStore<T: Sendable>(_ setup: BerthSetup, logger: Logger, _ body: (Catalog, any Store) async throws -> T) async throws -> T {
    if let postgres = setup.postgres {
        let catalog = try setup.loadCatalog()
        let store = try PostgresStore(settings: postgres, logger: logger)
        do {
            let result = try await store.withRunning {
                try await setup.prepare(store, catalog: catalog, logger: logger, now: Date())
                return try await body(catalog, store)
            }
            try store.close()
            return result
        } catch {
            try? store.close()
            throw error
        }
    }
    let (catalog, store) = try await setup.prepareStore(logger: logger, now: Date())
    do {
        let result = try await body(catalog, store)
        try store.close()
        return result
    } catch {
        try? store.close()
        throw error
    }
}

/// `berth migrate`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "migrate", abstract: "Apply pending migrations and sync the catalog's tenants, then exit.")

    @OptionGroup var storage: StorageOptions

    func run() async throws {
        try await withPreparedStore(try storage.setup(), logger: makeLogger("berth.migrate")) { _, _ in }
        print("database is up to date")
    }
}

/// `berth keys create`.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "keys", abstract: "Manage API keys.", subcommands: [Create.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Create an API key and print it once (only its SHA-256 is stored).")

        @Option(help: "Tenant id from the catalog.") var tenant: String
        @Option(help: "server (acts for users named in X-User-Id) or admin.") var role: String
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            guard let role = APIKeyRole(rawValue: role) else { throw ValidationError("--role must be server or admin") }
            let tenant = self.tenant
            let key = try await withPreparedStore(try storage.setup(), logger: makeLogger("berth.keys")) { catalog, store in
                guard catalog.tenant(id: tenant) != nil else {
                    throw ValidationError("no tenant \(tenant) in the catalog (tenants: \(catalog.tenants.map(\.id).joined(separator: ", ")))")
                }
                let key = APIKeys.generate(tenantId: tenant)
                _ = try await CreateAPIKey(store: store)(tenantId: tenant, role: role, hash: APIKeys.hash(key), now: Date())
                return key
            }
            print(key)
        }
    }
}

/// `berth copy-database`: moves a SQLite deployment to PostgreSQL.
struct CopyDatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy-database",
        abstract: "Copy every row of a SQLite database into a new PostgreSQL database (stop the service first).",
        discussion: "Both are migrated to the current version first. The target must hold no data yet; the row counts of every table are compared at the end."
    )

    @Option(help: "The SQLite database, sqlite:PATH.") var from: String
    @Option(help: "The PostgreSQL database, postgres://USER@HOST:PORT/DATABASE (password in BERTH_DATABASE_PASSWORD).") var to: String
    @Option(help: "Directory of numbered SQL migrations (env BERTH_MIGRATIONS; default ./migrations).") var migrations: String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let logger = makeLogger("berth.copy")
        let migrator = try Migrator(directory: URL(fileURLWithPath: migrations ?? environment["BERTH_MIGRATIONS"] ?? "./migrations", isDirectory: true))
        let sourcePath = try SQLiteStore.path(fromURL: from)
        guard FileManager.default.fileExists(atPath: sourcePath) else { throw ValidationError("no SQLite database at \(sourcePath)") }
        let source = try SQLiteStore.open(path: sourcePath)
        let target = try PostgresStore(settings: try PostgresSettings(url: to, environment: environment), logger: logger)
        do {
            try await target.withRunning {
                try await migrator.apply(to: source, now: Date())
                try await migrator.apply(to: target, now: Date())
                let counts = try await DatabaseCopy().copy(from: source, to: target) { count in
                    print("\(count.table): \(count.rows) row(s)")
                }
                print("copied \(counts.reduce(0) { $0 + $1.rows }) rows of \(counts.count) tables into \(target.settings.redacted); row counts match")
            }
        } catch {
            try? source.close()
            try? target.close()
            throw error
        }
        try source.close()
        try target.close()
    }
}

import ArgumentParser
import AsyncHTTPClient
import BerthApp
import Domain
import Foundation
import HTTPAPI
import Hummingbird
import Logging
import OutboundHTTP
import SQLStore
import ServiceLifecycle
import Synchronization
import UnixSignals
import UseCases

/// Options shared by the commands that open the database.
struct StorageOptions: ParsableArguments {
    @Option(
        help:
            "Database URL: sqlite:PATH, or postgres://USER@HOST:PORT/DATABASE[?sslmode=…&pool_size=…] with the password in BERTH_DATABASE_PASSWORD (env BERTH_DATABASE; default sqlite:./berth.sqlite)."
    )
    var database: String?

    @Option(help: "Catalog of tenants and products (env BERTH_CATALOG; default ./products.json).")
    var catalog: String?

    @Option(help: "Directory of numbered SQL migrations to apply instead of the ones built into berth (env BERTH_MIGRATIONS).")
    var migrations: String?

    func setup() throws -> BerthSetup {
        let environment = ProcessInfo.processInfo.environment
        let databaseURL = database ?? environment["BERTH_DATABASE"] ?? "sqlite:./berth.sqlite"
        let isPostgres = databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://")
        return BerthSetup(
            catalogURL: URL(fileURLWithPath: catalog ?? environment["BERTH_CATALOG"] ?? "./products.json").standardizedFileURL,
            databasePath: isPostgres ? "" : try SQLiteStore.path(fromURL: databaseURL),
            postgres: isPostgres ? try PostgresSettings(url: databaseURL, environment: environment) : nil,
            migrationsURL: (migrations ?? environment["BERTH_MIGRATIONS"]).map { URL(fileURLWithPath: $0, isDirectory: true) },
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
        // The soft descriptor limit is raised to the hard one (systemd's default soft limit is 1,024);
        // connections are capped below what is left for them (T2).
        let descriptors = DescriptorLimit.raiseToHard(logger: logger)
        let connections: ConnectionLimits
        do {
            connections = try ConnectionLimits.from(environment: environment, descriptors: descriptors)
        } catch let error as ConnectionLimitsError {
            throw ValidationError(error.description)
        }
        let shutdown = try Self.shutdownDeadline(environment)
        let server = ServerConfiguration(
            host: host ?? environment["BERTH_HOST"] ?? "127.0.0.1",
            port: port ?? environment["BERTH_PORT"].flatMap(Int.init) ?? 8080,
            portFile: portFile,
            connections: connections
        )
        logger.info(
            "\(connections.summary); descriptors \(descriptors); a stop waits at most \(shutdown.components.seconds) s for requests in flight"
        )
        // BerthApp builds everything (the outbound client, the store, the services, the workers) and
        // closes it when the application stops.
        try await setup.withApplication(server: server, logger: logger) { application in
            try await Self.serve(environment: environment, logger: logger) {
                try await Self.run(application, shutdown: shutdown, logger: logger)
            }
        }
    }

    /// `BERTH_SHUTDOWN_SECONDS` (default 10): how long a stop (SIGTERM, SIGINT) waits for the requests
    /// in flight before their connections are cancelled and closed (V8: a body trickling a byte at a
    /// time must not keep a stopping instance alive).
    static func shutdownDeadline(_ environment: [String: String]) throws -> Duration {
        guard let text = environment["BERTH_SHUTDOWN_SECONDS"], !text.isEmpty else { return .seconds(10) }
        guard let seconds = Int(text), (1...3600).contains(seconds) else {
            throw ValidationError("BERTH_SHUTDOWN_SECONDS is '\(text)'; give a whole number of seconds from 1 to 3600")
        }
        return .seconds(seconds)
    }
}

extension ServeCommand {
    /// Runs `application` until SIGTERM or SIGINT, then stops it within `shutdown`: the server stops
    /// accepting, requests in flight get until the deadline to finish, and whatever is left is then
    /// cancelled (its connections closed), so that the store behind it closes and checkpoints.
    static func run(_ application: any Service, shutdown: Duration, logger: Logger) async throws {
        let watch = StopWatch()
        var configuration = ServiceGroupConfiguration(
            services: [.init(service: application), .init(service: watch, successTerminationBehavior: .ignore)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        configuration.maximumGracefulShutdownDuration = shutdown
        try await ServiceGroup(configuration: configuration).run()
        if let took = watch.elapsed {
            let milliseconds = took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000
            logger.info("stopped in \(milliseconds) ms")
        }
    }

    /// Runs the application with its request handlers on the event loops that read the requests
    /// (``EventLoopExecutor``), unless `BERTH_HANDLERS=pool` keeps them on Swift's global pool.
    static func serve(environment: [String: String], logger: Logger, _ run: () async throws -> Void) async throws {
        switch environment["BERTH_HANDLERS"] ?? "event-loops" {
        case "event-loops":
            try await withEventLoopHandlers { try await run() }
        case "pool":
            logger.notice("request handlers run on Swift's global pool (BERTH_HANDLERS=pool)")
            try await run()
        case let other:
            throw ValidationError("BERTH_HANDLERS is '\(other)'; use event-loops (the default) or pool")
        }
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
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending migrations and sync the catalog's tenants, then exit."
    )

    @OptionGroup var storage: StorageOptions

    func run() async throws {
        try await withPreparedStore(try storage.setup(), logger: makeLogger("berth.migrate")) { _, _ in }
        print("database is up to date")
    }
}

/// `berth keys create|list|revoke|rotate`.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Manage API keys: create, list, revoke, rotate.",
        subcommands: [Create.self, List.self, Revoke.self, Rotate.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Create an API key and print it once (only its SHA-256 is stored).",
            discussion: """
                Roles: client (ship it in the app: submits store proofs for the user it names, reads that user's state), \
                server (the app's backend: acts for any user in X-User-Id), admin (operators, the admin page). \
                --scope narrows a key to part of its role: purchases, read, bookings, credits, subscriptions, memberships, admin.
                """
        )

        @Option(help: "Tenant id from the catalog.") var tenant: String
        @Option(help: "client, server or admin.") var role: String
        @Option(help: "Comma-separated scopes, fewer than the role's (default: all of the role's).") var scope: String?
        @Option(help: "A label shown in listings (\"iOS app\", \"booking backend\").") var name: String?
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            guard let role = APIKeyRole(rawValue: role) else { throw ValidationError("--role must be client, server or admin") }
            let scopes = try scope.map(parseScopes)
            let tenant = self.tenant, name = self.name
            let issued = try await withPreparedStore(try storage.setup(), logger: makeLogger("berth.keys")) { catalog, store in
                guard catalog.tenant(id: tenant) != nil else {
                    throw ValidationError("no tenant \(tenant) in the catalog (tenants: \(catalog.tenants.map(\.id).joined(separator: ", ")))")
                }
                return try await CreateAPIKey(store: store)(tenantId: tenant, role: role, scopes: scopes, name: name, now: Date())
            }
            FileHandle.standardError.write(
                Data("key \(issued.key.id) (\(role.rawValue): \(issued.key.scopes.sorted().map(\.rawValue).joined(separator: ", ")))\n".utf8)
            )
            print(issued.secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List API keys (never the keys themselves: their first characters)."
        )

        @Option(help: "Only this tenant's keys.") var tenant: String?
        @Flag(help: "One JSON object per key.") var json = false
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            let tenant = self.tenant
            let keys = try await withPreparedStore(try storage.setup(), logger: makeLogger("berth.keys")) { _, store in
                try await store.read { try $0.keys.keys(tenantId: tenant) }
            }
            let now = Date()
            let time = ISO8601DateFormatter()
            if json {
                for key in keys {
                    var object: [String: Any] = [
                        "id": key.id, "tenant": key.tenantId, "role": key.role.rawValue, "scopes": key.scopes.sorted().map(\.rawValue),
                        "name": key.name, "hint": key.hint, "status": key.status(at: now).rawValue,
                        "createdAt": time.string(from: key.createdAt),
                    ]
                    if let at = key.expiresAt { object["expiresAt"] = time.string(from: at) }
                    if let at = key.revokedAt { object["revokedAt"] = time.string(from: at) }
                    if let at = key.lastUsedAt { object["lastUsedAt"] = time.string(from: at) }
                    if let from = key.rotatedFrom { object["rotatedFrom"] = from }
                    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                    print(String(decoding: data, as: UTF8.self))
                }
                return
            }
            print(["ID", "TENANT", "ROLE", "STATUS", "NAME", "KEY", "CREATED", "EXPIRES", "LAST USED", "SCOPES"].joined(separator: "\t"))
            for key in keys {
                print(
                    [
                        String(key.id), key.tenantId, key.role.rawValue, key.status(at: now).rawValue, key.name.isEmpty ? "-" : key.name, key.hint,
                        time.string(from: key.createdAt), key.expiresAt.map(time.string) ?? "-", key.lastUsedAt.map(time.string) ?? "never",
                        key.scopes.sorted().map(\.rawValue).joined(separator: ","),
                    ].joined(separator: "\t")
                )
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Revoke an API key: running instances refuse it within a few seconds (at most 5)."
        )

        @Argument(help: "The key's id (berth keys list).") var id: Int64
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            let id = self.id
            let key = try await withPreparedStore(try storage.setup(), logger: makeLogger("berth.keys")) { _, store in
                try await RevokeAPIKey(store: store)(id: id, tenantId: nil, now: Date())
            }
            print("key \(key.id) (\(key.tenantId), \(key.role.rawValue)) revoked")
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Replace an API key: prints the new key; the old one keeps working until the overlap ends."
        )

        @Argument(help: "The key's id (berth keys list).") var id: Int64
        @Option(help: "How long the old key keeps working, e.g. 3600s, 90m, 24h, 7d (default 24h, at most 90d).") var overlap: String?
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            let id = self.id
            let overlap = try self.overlap.map(parseDuration)
            let result = try await withPreparedStore(try storage.setup(), logger: makeLogger("berth.keys")) { _, store in
                try await RotateAPIKey(store: store)(id: id, tenantId: nil, overlap: overlap, now: Date())
            }
            let until = result.old.expiresAt.map { ISO8601DateFormatter().string(from: $0) } ?? "-"
            FileHandle.standardError.write(Data("key \(result.issued.key.id) replaces key \(result.old.id), which works until \(until)\n".utf8))
            print(result.issued.secret)
        }
    }
}

func parseScopes(_ text: String) throws -> Set<KeyScope> {
    switch KeyScope.parse(text) {
    case .success(let scopes): return scopes
    case .failure(let unknown):
        throw ValidationError("unknown scope \(unknown.name); scopes are \(KeyScope.allCases.map(\.rawValue).joined(separator: ", "))")
    }
}

/// `90s`, `15m`, `24h`, `7d` (or plain seconds).
func parseDuration(_ text: String) throws -> TimeInterval {
    let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
    var number = Substring(text), unit = 1.0
    if let last = text.last, let factor = units[last] {
        number = text.dropLast()
        unit = factor
    }
    guard let value = Double(number), value.isFinite, value >= 0 else {
        throw ValidationError("--overlap must be a duration such as 3600s, 90m, 24h or 7d")
    }
    return value * unit
}

/// `berth backup --to FILE`: a consistent copy of a running SQLite deployment.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the SQLite database into a new file while the service runs (a consistent, self-contained copy).",
        discussion: """
            The copy is made in one read transaction (SQLite's VACUUM INTO): the service keeps answering and writing, and \
            the copy holds every transaction committed before it began. Restore by stopping the service and putting the \
            copy in the database's place (without the old -wal and -shm files). PostgreSQL: use pg_dump (docs/operating.md).
            """
    )

    @Option(help: "The new file to write (must not exist).") var to: String
    @Option(help: "The database, sqlite:PATH (env BERTH_DATABASE; default sqlite:./berth.sqlite).") var database: String?

    func run() async throws {
        let url = database ?? ProcessInfo.processInfo.environment["BERTH_DATABASE"] ?? "sqlite:./berth.sqlite"
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            throw ValidationError("berth backup copies SQLite databases; back up PostgreSQL with pg_dump (docs/operating.md)")
        }
        let path = try SQLiteStore.path(fromURL: url)
        guard FileManager.default.fileExists(atPath: path) else { throw ValidationError("no SQLite database at \(path)") }
        let store = try SQLiteStore.open(path: path)
        defer { try? store.close() }
        guard try store.holdsBerthSchema() else { throw ValidationError("\(path) holds no Berth database") }
        try store.backup(to: to)
        let copy = try SQLiteStore.open(path: to)
        defer { try? copy.close() }
        let counts = try copy.tableCounts()
        print("backed up \(path) into \(to): \(counts.reduce(0) { $0 + $1.rows }) rows in \(counts.count) tables")
    }
}

/// `berth copy-database`: moves a SQLite deployment to PostgreSQL.
struct CopyDatabaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy-database",
        abstract: "Copy every row of a SQLite database into a new PostgreSQL database (stop the service first).",
        discussion:
            "Both are migrated to the current version first. The target must hold no data yet; the row counts of every table are compared at the end."
    )

    @Option(help: "The SQLite database, sqlite:PATH.") var from: String
    @Option(help: "The PostgreSQL database, postgres://USER@HOST:PORT/DATABASE (password in BERTH_DATABASE_PASSWORD).") var to: String
    @Option(help: "Directory of numbered SQL migrations to apply instead of the ones built into berth (env BERTH_MIGRATIONS).") var migrations:
        String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let logger = makeLogger("berth.copy")
        let migrator =
            try (migrations ?? environment["BERTH_MIGRATIONS"]).map { try Migrator(directory: URL(fileURLWithPath: $0, isDirectory: true)) }
            ?? Migrator()
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

/// The time from the stop signal until the group has stopped: the last service of the group, so the
/// first told to stop (a group stops its services in reverse order).
final class StopWatch: Service {
    private let began = Mutex<ContinuousClock.Instant?>(nil)

    func run() async throws {
        try? await gracefulShutdown()
        began.withLock { $0 = .now }
    }

    /// Since the stop signal, when there was one.
    var elapsed: Duration? { began.withLock { $0 }.map { ContinuousClock.now - $0 } }
}

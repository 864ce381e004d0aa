import Domain
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Berth's store on PostgreSQL: several instances on one database act as one service.
///
/// The repositories are the same as on SQLite (``SQLExecutor``); a unit of work is still a
/// synchronous closure, so it runs on a thread of the store's own pool, holding one pooled
/// connection of postgres-nio's `PostgresClient` from `BEGIN` to `COMMIT` (READ COMMITTED). The
/// loads a decision depends on lock what they read (`SELECT … FOR UPDATE`, or a transaction-scoped
/// advisory lock named after the account, resource, subscription or transaction when the row may
/// not exist yet), so decisions of different instances take turns exactly where they must.
///
/// Transient failures (a lost connection, a serialization failure or deadlock, a unique index
/// losing a race) roll the unit of work back and run it again, up to `attempts` times; after that,
/// or when no connection frees up within `acquireTimeout`, it fails with ``StoreUnavailable``
/// (HTTP 503 with Retry-After): never a partial write.
///
/// The client is a `Service`: `berth serve` runs it in the application's service group;
/// commands and tests run it around their work with ``withRunning(_:)``.
public final class PostgresStore: Store, Service {
    public let settings: PostgresSettings
    let client: PostgresClient
    private let threads: NIOThreadPool
    private let placeholders = NumberedStatements()
    private let prepared = PreparedSelects()
    private let logger: Logger
    /// Set by the first ``close()``: units of work asked for after it are refused with
    /// ``StoreClosed`` (one atomic load each), as on SQLite, not handed to a stopped thread pool.
    private let closed = Atomic(false)

    public init(settings: PostgresSettings, logger: Logger) throws {
        let tlsConfiguration = settings.tlsConfiguration
        let tls: PostgresClient.Configuration.TLS =
            switch settings.tls {
            case .disable: .disable
            case .prefer: .prefer(tlsConfiguration)
            case .require: .require(tlsConfiguration)
            }
        var configuration = PostgresClient.Configuration(
            host: settings.host,
            port: settings.port,
            username: settings.username,
            password: settings.password,
            database: settings.database,
            tls: tls
        )
        configuration.options.maximumConnections = settings.poolSize
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = .milliseconds(Int64(settings.connectTimeout * 1000))
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", String(Int(settings.statementTimeout * 1000))),
            ("application_name", "berth"),
        ]
        var clientLogger = logger
        clientLogger.logLevel = max(logger.logLevel, .notice)
        self.settings = settings
        self.logger = logger
        self.client = PostgresClient(configuration: configuration, backgroundLogger: clientLogger)
        self.threads = NIOThreadPool(numberOfThreads: settings.poolSize)
        threads.start()
    }

    /// Runs the connection pool until the service group (or the task) is cancelled.
    public func run() async throws {
        await client.run()
    }

    /// Runs the connection pool around `body` (commands, migrations before serving, tests).
    public func withRunning<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await self.client.run() }
            do {
                let result = try await body()
                group.cancelAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }

    /// Stops the store's threads (after the client has stopped running). A second close does nothing.
    public func close() throws {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try threads.syncShutdownGracefully()
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await unitOfWork(.write) { db in try body(SQLSession(db: db)) }
    }

    /// Reads one consistent snapshot (REPEATABLE READ, READ ONLY): a listing's total and its page agree.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await unitOfWork(.read) { db in try body(SQLSession(db: db)) }
    }

    /// One statement on its own (PostgreSQL runs it in a transaction of its own, on one snapshot):
    /// no `START TRANSACTION` or `COMMIT` around it.
    public func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await unitOfWork(.statement) { db in try body(SQLSession(db: db)) }
    }

    /// The database's memory is the PostgreSQL server's, watched there.
    public func engineGauges() -> [(name: String, value: Double)] { [] }

    /// Runs `body` as one transaction on one connection, retried as a whole on transient failures.
    /// A unique index refusing a row is retried once: when another instance won a race to insert
    /// it, the second run sees the winner's row and decides accordingly; when it fails again, the
    /// violation is the unit of work's own and surfaces as it is.
    func unitOfWork<T: Sendable>(_ kind: UnitKind, _ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        guard !closed.load(ordering: .acquiring) else { throw StoreClosed() }
        var attempt = 1
        var retriedUnique = false
        while true {
            do {
                return try await once(kind, body)
            } catch let error as StoreUnavailable {
                throw error
            } catch {
                let failure = Self.classify(error)
                switch failure {
                case .permanent:
                    throw error
                case .uniqueViolation where retriedUnique:
                    throw error
                case .uniqueViolation, .transient:
                    guard attempt < settings.attempts else {
                        logger.warning("unit of work failed \(attempt) times on a transient error, giving up: \(Self.describe(error))")
                        throw StoreUnavailable("the database did not complete the request after \(attempt) attempts", retryAfter: 1)
                    }
                    if failure == .uniqueViolation { retriedUnique = true }
                    logger.notice("unit of work retried after a transient error (attempt \(attempt)): \(Self.describe(error))")
                    // Back off a little, with jitter, so that the transactions that collided do not collide again.
                    let base = 10 << min(attempt, 5)
                    try await Task.sleep(for: .milliseconds(Int.random(in: base / 2...base)))
                    attempt += 1
                }
            }
        }
    }

    /// One attempt: waits at most `acquireTimeout` for a connection, then runs the transaction on a store thread.
    private func once<T: Sendable>(_ kind: UnitKind, _ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        // 0 waiting for a connection, 1 running, 2 gave up waiting: exactly one of the two sides wins.
        let state = AcquireState()
        let timeout = settings.acquireTimeout
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await self.client.withConnection { connection in
                    guard state.value.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged else {
                        throw StoreUnavailable("no database connection within \(timeout) s", retryAfter: 1)
                    }
                    let executor = PostgresExecutor(connection: connection, placeholders: self.placeholders, prepared: self.prepared)
                    return try await self.threads.runIfActive { try executor.unit(kind, body) }
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                guard state.value.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged else { return nil }
                throw StoreUnavailable("no database connection within \(timeout) s", retryAfter: 1)
            }
            while let result = try await group.next() {
                if let result {
                    group.cancelAll()
                    return result
                }
            }
            throw StoreUnavailable("the unit of work ended without a result", retryAfter: 1)
        }
    }

    /// How a unit of work is bracketed: a write transaction, a read-only snapshot, or one statement alone.
    enum UnitKind {
        case write, read, statement
    }

    enum Failure: Equatable {
        case transient, uniqueViolation, permanent
    }

    /// Whether running the unit of work again may succeed: lost connections, serialization failures,
    /// deadlocks, lock and statement timeouts, the server shutting down or refusing connections; a
    /// unique index that another instance may have won a race on.
    static func classify(_ error: any Error) -> Failure {
        func server(_ state: String?) -> Failure {
            guard let state else { return .permanent }
            if state == "23505" { return .uniqueViolation }
            let transient = ["40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03", "53300"].contains(state) || state.hasPrefix("08")
            return transient ? .transient : .permanent
        }
        switch error {
        case let error as PostgresError:
            switch error {
            case .server(let message): return server(message.fields[.sqlState])
            case .connectionClosed: return .transient
            case .protocol(let message): return message.contains("connection close") ? .transient : .permanent
            }
        case let error as PSQLError:
            switch error.code {
            case .server: return server(error.serverInfo?[.sqlState])
            case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed: return .transient
            default: return .permanent
            }
        case is ChannelError, is IOError, is NIOConnectionError:
            return .transient
        default:
            return .permanent
        }
    }

    /// A log line for an error without the statement's arguments (they may hold receipts).
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            let state = error.serverInfo?[.sqlState] ?? "-"
            let message = error.serverInfo?[.message] ?? ""
            return "PSQLError \(error.code) \(state) \(message)"
        }
        if case .server(let message) = error as? PostgresError {
            return "PostgreSQL \(message.fields[.sqlState] ?? "-") \(message.fields[.message] ?? "")"
        }
        return String(describing: type(of: error))
    }
}

/// The PostgreSQL side of ``SQLExecutor``: one leased connection, used from one store thread at a
/// time; every statement blocks that thread (never an event loop) until PostgreSQL answers.
final class PostgresExecutor: SQLExecutor, Sendable {
    let connection: PostgresConnection
    let placeholders: NumberedStatements
    let prepared: PreparedSelects

    init(connection: PostgresConnection, placeholders: NumberedStatements, prepared: PreparedSelects) {
        self.connection = connection
        self.placeholders = placeholders
        self.prepared = prepared
    }

    var dialect: SQLDialect { .postgres }

    func unit<T>(_ kind: PostgresStore.UnitKind, _ body: (any SQLExecutor) throws -> T) throws -> T {
        switch kind {
        case .write: try writeTransaction(body)
        case .read: try readTransaction(body)
        case .statement: try body(SingleStatement(executor: self))
        }
    }

    private func writeTransaction<T>(_ body: (any SQLExecutor) throws -> T) throws -> T {
        try run("BEGIN", [])
        do {
            let result = try body(self)
            try run("COMMIT", [])
            return result
        } catch {
            // A lost connection rolls back by itself; the pool discards it.
            _ = try? run("ROLLBACK", [])
            throw error
        }
    }

    /// A read-only snapshot without waiting on its own brackets. postgres-nio sends a connection's
    /// statements one after another, each after the previous one's answer, so the first statement is
    /// sent as soon as `START TRANSACTION` is answered without this thread waking up in between; and
    /// nothing waits for `COMMIT`, which ends a transaction that wrote nothing: the next unit of work
    /// on this connection queues behind it. Two thread wake-ups and one round trip less per read. A
    /// failed `START TRANSACTION` (only a broken connection) fails the read after the fact: its
    /// statements may have run outside one snapshot, so their answer is not used.
    private func readTransaction<T>(_ body: (any SQLExecutor) throws -> T) throws -> T {
        let begin = connection.query("START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        do {
            let result = try body(self)
            _ = try begin.wait()
            connection.query("COMMIT").whenComplete { _ in }
            return result
        } catch {
            _ = try? begin.wait()
            _ = try? run("ROLLBACK", [])
            throw error
        }
    }

    @discardableResult
    func run(_ sql: String, _ arguments: SQLArguments) throws -> Int {
        try query(sql, arguments).metadata.rows ?? 0
    }

    func rows(_ sql: String, _ arguments: SQLArguments) throws -> [SQLRow] {
        let statement = placeholders.statement(sql)
        // postgres-nio asks for every result column in binary, but a prepared statement's cells keep
        // the text format of the statement's description (postgres-nio 1.33): they are read as binary.
        let (rows, binary) =
            if let select = try prepared.statement(statement, on: connection) {
                (try select.execute(arguments.map(Self.bind)).wait(), true)
            } else {
                (try connection.query(statement, arguments.map(Self.bind)).wait().rows, false)
            }
        guard let first = rows.first else { return [] }
        let columns = first.map(\.columnName)
        return try rows.map { row in
            SQLRow(
                columns: columns,
                values: try row.map { cell in
                    var cell = cell
                    if binary { cell.format = .binary }
                    return try Self.value(cell)
                }
            )
        }
    }

    /// A transaction-scoped advisory lock on the key's 64-bit hash (released at COMMIT or ROLLBACK).
    func lock(_ key: String) throws {
        try run("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [key])
    }

    private func query(_ sql: String, _ arguments: SQLArguments) throws -> PostgresQueryResult {
        try connection.query(placeholders.statement(sql), arguments.map(Self.bind)).wait()
    }

    static func bind(_ argument: (any SQLBindable)?) -> PostgresData {
        switch argument?.sqlValue ?? .null {
        case .null: return .null
        case .integer(let value): return PostgresData(int64: value)
        case .real(let value): return PostgresData(double: value)
        case .text(let value): return PostgresData(string: value)
        }
    }

    static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8, .oid:
            return .integer(try cell.decode(Int64.self))
        case .bool:
            return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .float4, .float8:
            return .real(try cell.decode(Double.self))
        case .numeric:
            // SUM over BIGINT is NUMERIC in PostgreSQL: whole numbers come back as integers.
            let text = PostgresData(type: .numeric, formatCode: cell.format, value: cell.bytes).numeric?.string ?? ""
            if let integer = Int64(text) { return .integer(integer) }
            return .real(Double(text) ?? 0)
        case .void:
            return .null
        default:
            return .text(try cell.decode(String.self))
        }
    }
}

extension PostgresStore: MigratableStore {
    public func migrationUnit<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await unitOfWork(.write, body)
    }
}

/// The executor of ``PostgresStore/readStatement(_:)``: one statement, read-only, and no more.
private final class SingleStatement: SQLExecutor {
    let executor: PostgresExecutor
    private var used = false

    init(executor: PostgresExecutor) {
        self.executor = executor
    }

    var dialect: SQLDialect { .postgres }

    func run(_ sql: String, _ arguments: SQLArguments) throws -> Int {
        throw StoreError("a single-statement read cannot write")
    }

    func rows(_ sql: String, _ arguments: SQLArguments) throws -> [SQLRow] {
        guard !used else { throw StoreError("a single-statement read issued a second statement (use Store.read)") }
        used = true
        return try executor.rows(sql, arguments)
    }

    func lock(_ key: String) throws {
        throw StoreError("a single-statement read cannot lock")
    }
}

/// The repositories' statements with PostgreSQL's numbered placeholders, rewritten once each.
final class NumberedStatements: Sendable {
    private let cache = Mutex<[String: String]>([:])

    func statement(_ sql: String) -> String {
        cache.withLock { cache in
            if let statement = cache[sql] { return statement }
            let statement = SQLDialect.numberedPlaceholders(sql)
            // Listings build their WHERE clauses from filters: the number of distinct statements is bounded, but stay safe.
            if cache.count < 10_000 { cache[sql] = statement }
            return statement
        }
    }
}

/// Each pooled connection's prepared `SELECT`s, by statement. PostgreSQL parses and plans an unnamed
/// statement on every call: for the one-statement entitlements read that was 2.2 ms of the server's
/// CPU (parse 0.66 ms, plan 1.57 ms) against 0.06 ms to execute it. A prepared statement is parsed
/// once per connection and its plan kept. Only `SELECT`s: PostgreSQL infers a prepared statement's
/// parameter types from the statement, and in a `SELECT` every `?` is compared with a column or is a
/// `LIMIT`, so the inferred type is the one bound (text, or a 64-bit integer); an `INSERT` of an
/// integer into a REAL column would not be. Prepared statements outlive a rolled-back transaction,
/// and go with their connection.
final class PreparedSelects: Sendable {
    /// Past this many statements on one connection (listings' filters combine), the rest run unprepared.
    static let perConnection = 300
    private let cache = Mutex<[PostgresConnection.ID: [String: PreparedQuery]]>([:])

    /// The prepared form of `statement` on `connection` (prepared now if needed), or nil when it is
    /// not a `SELECT` or the connection holds as many as it may.
    func statement(_ statement: String, on connection: PostgresConnection) throws -> PreparedQuery? {
        guard statement.hasPrefix("SELECT ") else { return nil }
        let id = connection.id
        enum Found { case prepared(PreparedQuery), prepare(firstOnConnection: Bool), full }
        let found: Found = cache.withLock { cache in
            guard let statements = cache[id] else { return .prepare(firstOnConnection: true) }
            if let query = statements[statement] { return .prepared(query) }
            return statements.count < Self.perConnection ? .prepare(firstOnConnection: false) : .full
        }
        switch found {
        case .prepared(let query):
            return query
        case .full:
            return nil
        case .prepare(let first):
            let query = try connection.prepare(query: statement).wait()
            cache.withLock { $0[id, default: [:]][statement] = query }
            if first { connection.closeFuture.whenComplete { _ in self.cache.withLock { $0[id] = nil } } }
            return query
        }
    }
}

/// Who won between a unit of work's connection and its acquire timeout.
private final class AcquireState: Sendable {
    let value = Atomic<Int>(0)
}

extension PostgresStore {
    /// Creates a database on the server of `settings` (connecting to its `database`, usually
    /// `postgres`). Names are limited to lowercase letters, digits and underscores.
    public static func createDatabase(_ name: String, settings: PostgresSettings, logger: Logger) async throws {
        try await administer("CREATE DATABASE \(try quoted(name))", settings: settings, logger: logger)
    }

    /// Drops a database, disconnecting whoever is still connected to it.
    public static func dropDatabase(_ name: String, settings: PostgresSettings, logger: Logger) async throws {
        try await administer("DROP DATABASE IF EXISTS \(try quoted(name)) WITH (FORCE)", settings: settings, logger: logger)
    }

    private static func quoted(_ name: String) throws -> String {
        guard !name.isEmpty, name.count <= 63, name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
            throw StoreError("database names are 1-63 lowercase letters, digits and underscores")
        }
        return "\"\(name)\""
    }

    /// Runs one statement outside any transaction (CREATE/DROP DATABASE cannot run inside one).
    private static func administer(_ sql: String, settings: PostgresSettings, logger: Logger) async throws {
        let configuration = PostgresConnection.Configuration(
            host: settings.host,
            port: settings.port,
            username: settings.username,
            password: settings.password,
            database: settings.database,
            tls: try settings.connectionTLS()
        )
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}

extension PostgresSettings {
    /// TLS 1.2 or later, the server's certificate verified against the system's roots.
    var tlsConfiguration: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    /// The same TLS mode for a single administrative connection.
    func connectionTLS() throws -> PostgresConnection.Configuration.TLS {
        switch tls {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: tlsConfiguration))
        case .require: .require(try NIOSSLContext(configuration: tlsConfiguration))
        }
    }
}

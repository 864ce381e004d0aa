import Foundation
import Logging
import SQLKit
import SQLiteKit
import Synchronization

/// Berth's SQLite database in WAL mode: one writing connection, every unit of work on it serialized
/// through a FIFO gate (SQLite allows one writer at a time anyway), and a small pool of read-only
/// connections for plain reads (listings, API-key lookups, the outbox scan), which WAL lets run
/// beside the writer: a slow listing never holds up a purchase.
///
/// `synchronous=NORMAL` under WAL keeps every committed transaction across a process crash
/// (kill -9); only an operating-system crash or power loss may drop the last commits.
public final class SQLiteDatabase: Sendable {
    let connection: SQLiteConnection
    let sql: any SQLDatabase
    private let gate = SerialGate()
    let readConnections: [SQLiteConnection]
    private let readers: [(sql: any SQLDatabase, gate: SerialGate)]
    private let nextReader = Atomic<UInt>(0)
    public let path: String

    /// Read-only connections opened beside the writer.
    public static let readerCount = 2

    private init(connection: SQLiteConnection, readConnections: [SQLiteConnection], path: String, logger: Logger) {
        self.connection = connection
        self.readConnections = readConnections
        self.path = path
        self.sql = connection.sql(queryLogLevel: nil)
        self.readers = readConnections.map { ($0.sql(queryLogLevel: nil), SerialGate()) }
    }

    /// Opens (creating if needed) the database file at `path`.
    public static func open(path: String, logger: Logger = Logger(label: "berth.sqlite")) async throws -> SQLiteDatabase {
        let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        let writer = connection.sql(queryLogLevel: nil)
        for pragma in ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA busy_timeout=5000", "PRAGMA foreign_keys=ON"] {
            try await writer.raw(SQLQueryString(pragma)).run()
        }
        var readers: [SQLiteConnection] = []
        for _ in 0..<readerCount {
            let reader = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
            for pragma in ["PRAGMA busy_timeout=5000", "PRAGMA query_only=ON"] {
                try await reader.sql(queryLogLevel: nil).raw(SQLQueryString(pragma)).run()
            }
            readers.append(reader)
        }
        return SQLiteDatabase(connection: connection, readConnections: readers, path: path, logger: logger)
    }

    /// Parses `sqlite:PATH` (or a bare path).
    public static func path(fromURL url: String) throws -> String {
        if url.hasPrefix("sqlite://") { return String(url.dropFirst("sqlite://".count)) }
        if url.hasPrefix("sqlite:") { return String(url.dropFirst("sqlite:".count)) }
        if url.contains("://") { throw StoreError("unsupported database URL \(url); use sqlite:PATH") }
        return url
    }

    public func close() async throws {
        for reader in readConnections { try? await reader.close() }
        try await connection.close()
    }

    /// Runs a read beside the writer on one of the read-only connections, taken in turn (they see
    /// committed data only).
    public func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        let reader = readers[Int(nextReader.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(readers.count))]
        await reader.gate.acquire()
        do {
            let result = try await body(reader.sql)
            reader.gate.release()
            return result
        } catch {
            reader.gate.release()
            throw error
        }
    }

    /// Runs `body` alone, inside `BEGIN IMMEDIATE … COMMIT` (rolled back if it throws).
    public func transaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await exclusively { database in
            try await database.raw("BEGIN IMMEDIATE").run()
            do {
                let result = try await body(database)
                try await database.raw("COMMIT").run()
                return result
            } catch {
                try? await database.raw("ROLLBACK").run()
                throw error
            }
        }
    }

    /// Runs `body` alone, outside an explicit transaction (reads, pragmas).
    public func exclusively<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        await gate.acquire()
        do {
            let result = try await body(sql)
            gate.release()
            return result
        } catch {
            gate.release()
            throw error
        }
    }
}

/// A storage failure that is not a business-rule refusal.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

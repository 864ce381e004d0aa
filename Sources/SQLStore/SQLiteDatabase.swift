import Foundation
import Logging
import SQLKit
import SQLiteKit

/// Berth's SQLite database in WAL mode: one writing connection, every unit of work on it serialized
/// through a FIFO gate (SQLite allows one writer at a time anyway), and one read-only connection
/// for plain reads, which WAL lets run beside the writer.
///
/// `synchronous=NORMAL` under WAL keeps every committed transaction across a process crash
/// (kill -9); only an operating-system crash or power loss may drop the last commits.
public final class SQLiteDatabase: Sendable {
    let connection: SQLiteConnection
    let sql: any SQLDatabase
    private let gate = SerialGate()
    let readConnection: SQLiteConnection
    let readSQL: any SQLDatabase
    private let readGate = SerialGate()
    public let path: String

    private init(connection: SQLiteConnection, readConnection: SQLiteConnection, path: String, logger: Logger) {
        self.connection = connection
        self.readConnection = readConnection
        self.path = path
        self.sql = connection.sql(queryLogLevel: nil)
        self.readSQL = readConnection.sql(queryLogLevel: nil)
    }

    /// Opens (creating if needed) the database file at `path`.
    public static func open(path: String, logger: Logger = Logger(label: "berth.sqlite")) async throws -> SQLiteDatabase {
        let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        let writer = connection.sql(queryLogLevel: nil)
        for pragma in ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA busy_timeout=5000", "PRAGMA foreign_keys=ON"] {
            try await writer.raw(SQLQueryString(pragma)).run()
        }
        let reader = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        for pragma in ["PRAGMA busy_timeout=5000", "PRAGMA query_only=ON"] {
            try await reader.sql(queryLogLevel: nil).raw(SQLQueryString(pragma)).run()
        }
        return SQLiteDatabase(connection: connection, readConnection: reader, path: path, logger: logger)
    }

    /// Parses `sqlite:PATH` (or a bare path).
    public static func path(fromURL url: String) throws -> String {
        if url.hasPrefix("sqlite://") { return String(url.dropFirst("sqlite://".count)) }
        if url.hasPrefix("sqlite:") { return String(url.dropFirst("sqlite:".count)) }
        if url.contains("://") { throw StoreError("unsupported database URL \(url); use sqlite:PATH") }
        return url
    }

    public func close() async throws {
        try? await readConnection.close()
        try await connection.close()
    }

    /// Runs a read beside the writer on the read-only connection (it sees committed data only).
    public func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        await readGate.acquire()
        do {
            let result = try await body(readSQL)
            readGate.release()
            return result
        } catch {
            readGate.release()
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

import Foundation
import Logging
import SQLKit
import SQLiteKit

/// Berth's SQLite database: one connection in WAL mode, every unit of work serialized through a
/// FIFO gate (SQLite allows one writer at a time anyway).
///
/// `synchronous=NORMAL` under WAL keeps every committed transaction across a process crash
/// (kill -9); only an operating-system crash or power loss may drop the last commits.
public final class SQLiteDatabase: Sendable {
    let connection: SQLiteConnection
    let sql: any SQLDatabase
    private let gate = SerialGate()
    public let path: String

    private init(connection: SQLiteConnection, path: String, logger: Logger) {
        self.connection = connection
        self.path = path
        self.sql = connection.sql(queryLogLevel: nil)
    }

    /// Opens (creating if needed) the database file at `path`.
    public static func open(path: String, logger: Logger = Logger(label: "berth.sqlite")) async throws -> SQLiteDatabase {
        let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        let database = SQLiteDatabase(connection: connection, path: path, logger: logger)
        for pragma in ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA busy_timeout=5000", "PRAGMA foreign_keys=ON"] {
            try await database.sql.raw(SQLQueryString(pragma)).run()
        }
        return database
    }

    /// Parses `sqlite:PATH` (or a bare path).
    public static func path(fromURL url: String) throws -> String {
        if url.hasPrefix("sqlite://") { return String(url.dropFirst("sqlite://".count)) }
        if url.hasPrefix("sqlite:") { return String(url.dropFirst("sqlite:".count)) }
        if url.contains("://") { throw StoreError("unsupported database URL \(url); use sqlite:PATH") }
        return url
    }

    public func close() async throws {
        try await connection.close()
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

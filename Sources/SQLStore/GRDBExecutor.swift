import Foundation
import GRDB

/// The SQLite side of ``SQLExecutor``: statements go through the connection's statement cache.
struct GRDBExecutor: SQLExecutor {
    let db: Database

    var dialect: SQLDialect { .sqlite }

    @discardableResult
    func run(_ sql: String, _ arguments: SQLArguments) throws -> Int {
        try db.cachedStatement(sql: sql).execute(arguments: Self.arguments(arguments))
        return db.changesCount
    }

    func rows(_ sql: String, _ arguments: SQLArguments) throws -> [SQLRow] {
        let statement = try db.cachedStatement(sql: sql)
        let columns = statement.columnNames
        return try Row.fetchAll(statement, arguments: Self.arguments(arguments)).map { row in
            SQLRow(columns: columns, values: row.databaseValues.map(Self.value))
        }
    }

    /// The unit of work runs inside `BEGIN IMMEDIATE`: it already holds SQLite's only write lock.
    func lock(_ key: String) throws {}

    /// The values as GRDB's arguments. Given as `(any DatabaseValueConvertible)?`: GRDB's initialiser
    /// for a sequence of one concrete type maps it by a key path that the runtime instantiates on
    /// every call (3 % of a first-time purchase's CPU, by perf); this one maps with a closure.
    static func arguments(_ arguments: SQLArguments) -> StatementArguments {
        StatementArguments(
            arguments.map { argument -> (any DatabaseValueConvertible)? in
                switch argument?.sqlValue ?? .null {
                case .null: return DatabaseValue.null
                case .integer(let value): return value.databaseValue
                case .real(let value): return value.databaseValue
                case .text(let value): return value.databaseValue
                }
            }
        )
    }

    static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: return .null
        case .int64(let value): return .integer(value)
        case .double(let value): return .real(value)
        case .string(let value): return .text(value)
        case .blob(let data): return .text(String(decoding: data, as: UTF8.self))
        }
    }
}

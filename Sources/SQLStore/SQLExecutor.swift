import Domain
import Foundation

/// A value bound to a `?` of a statement, or read from a column: both backends store integers,
/// text and (rarely) reals; booleans are integers 0/1 and times epoch milliseconds on both.
public enum SQLValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
}

/// What can be bound to a statement's `?`.
public protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

extension String: SQLBindable { public var sqlValue: SQLValue { .text(self) } }
extension Int64: SQLBindable { public var sqlValue: SQLValue { .integer(self) } }
extension Int: SQLBindable { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Bool: SQLBindable { public var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension Double: SQLBindable { public var sqlValue: SQLValue { .real(self) } }

/// The arguments of one statement, in the order of its `?` placeholders.
public typealias SQLArguments = [(any SQLBindable)?]

/// The SQL dialect of a backend. The repositories' statements are written once, in the SQL both
/// SQLite and PostgreSQL accept (`?` placeholders, `ON CONFLICT`, `COALESCE`, epoch-millisecond
/// integers); what differs is named here and in ``SQLDialect/migration(_:)``.
public enum SQLDialect: String, Sendable {
    case sqlite
    case postgres

    /// The clause that locks the rows a `SELECT` returns until the unit of work ends. Empty on
    /// SQLite, whose unit of work already holds the database's only write lock (`BEGIN IMMEDIATE`).
    public var forUpdate: String { self == .postgres ? " FOR UPDATE" : "" }

    /// A migration file's SQL in this dialect. The files are written for SQLite's type names; on
    /// PostgreSQL every integer is a BIGINT (ids, counts and epoch milliseconds are 64-bit on both)
    /// and the one SQLite clock function a data migration uses becomes PostgreSQL's.
    public func migration(_ sql: String) -> String {
        guard self == .postgres else { return sql }
        var sql = sql.replacingOccurrences(of: "CAST(strftime('%s', 'now') AS INTEGER)", with: "CAST(EXTRACT(EPOCH FROM now()) AS BIGINT)")
        sql = sql.replacingOccurrences(of: #"\bINTEGER\b"#, with: "BIGINT", options: .regularExpression)
        sql = sql.replacingOccurrences(of: #"\bREAL\b"#, with: "DOUBLE PRECISION", options: .regularExpression)
        return sql
    }

    /// A statement with `?` placeholders rewritten to PostgreSQL's `$1, $2, …` (placeholders inside
    /// quoted literals are left alone).
    static func numberedPlaceholders(_ sql: String) -> String {
        var result = ""
        result.reserveCapacity(sql.utf8.count + 16)
        var number = 0
        var quoted = false
        for character in sql {
            if character == "'" { quoted.toggle() }
            if character == "?", !quoted {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }
}

/// One connection inside a unit of work: SQLite through GRDB, or PostgreSQL through postgres-nio on
/// a thread of the store's own. The repositories are written once against it.
public protocol SQLExecutor {
    var dialect: SQLDialect { get }
    /// Runs a statement; returns the number of rows it changed.
    @discardableResult
    func run(_ sql: String, _ arguments: SQLArguments) throws -> Int
    func rows(_ sql: String, _ arguments: SQLArguments) throws -> [SQLRow]
    /// Takes an exclusive lock named `key` until the unit of work ends. Where the unit of work already
    /// holds the database's only write lock (SQLite) this costs nothing.
    func lock(_ key: String) throws
}

extension SQLExecutor {
    func row(_ sql: String, _ arguments: SQLArguments = []) throws -> SQLRow? {
        try rows(sql, arguments).first
    }

    func count(_ sql: String, _ arguments: SQLArguments = []) throws -> Int {
        guard let row = try row(sql, arguments) else { return 0 }
        return row.first.flatMap(Int.init(sqlValue:)) ?? 0
    }

    /// The one paged listing: total of `whereClause`, then a newest-first page of it.
    func page<T>(
        table: String,
        columns: String,
        whereClause: String,
        arguments: SQLArguments,
        order: String,
        orderArguments: SQLArguments? = nil,
        page: Page,
        decode: (SQLRow) throws -> T
    ) throws -> (items: [T], total: Int) {
        let total = try count("SELECT COUNT(*) FROM \(table) WHERE \(whereClause)", arguments)
        // `orderArguments` given: `order` is the whole ORDER BY, with its own placeholders.
        let rows = try self.rows(
            "SELECT \(columns) FROM \(table) WHERE \(whereClause) ORDER BY \(orderArguments == nil ? "\(order) DESC, id DESC" : order) LIMIT ? OFFSET ?",
            arguments + (orderArguments ?? []) + [page.limit, page.offset]
        )
        return (try rows.map(decode), total)
    }
}

/// One `SELECT` of several read in one statement by ``SQLExecutor/select(_:)``: `SELECT selectList
/// rest ORDER BY order LIMIT limit`, whose select list yields `columns` in order.
struct SelectPart {
    var tag: String
    var columns: [String]
    var selectList: String
    var rest: String
    var order: String
    var limit: Int?
    var arguments: SQLArguments

    init(tag: String, columns: [String], selectList: String? = nil, rest: String, order: String, limit: Int? = nil, arguments: SQLArguments) {
        self.tag = tag
        self.columns = columns
        self.selectList = selectList ?? columns.joined(separator: ", ")
        self.rest = rest
        self.order = order
        self.limit = limit
        self.arguments = arguments
    }

    /// The part as a statement of its own (its columns under their own names).
    var statement: String {
        "SELECT \(selectList) \(rest) ORDER BY \(order)\(limit.map { " LIMIT \($0)" } ?? "")"
    }
}

extension SQLExecutor {
    /// Several `SELECT`s of different tables as one statement (one round trip, one snapshot): a
    /// `UNION ALL` whose rows carry their part's tag and their rank in the part's order, every value
    /// as text (both backends need one type per column of a union; ``SQLColumnValue`` reads numbers
    /// back from text). Answers each part's rows, in the part's order, under its own column names.
    ///
    /// On SQLite each part is a statement of its own, in the read's one transaction (the same
    /// snapshot): in process there is no round trip to save, and the union's casts, window
    /// functions and text round trip cost more than they save (12 % of a `GET /api/entitlements`'s
    /// CPU, by perf, most of it building and running the union).
    func select(_ parts: [SelectPart]) throws -> [String: [SQLRow]] {
        if dialect == .sqlite {
            var answer: [String: [SQLRow]] = [:]
            for part in parts { answer[part.tag] = try rows(part.statement, part.arguments) }
            return answer
        }
        guard let width = parts.map(\.columns.count).max() else { return [:] }
        let branches = parts.map { part in
            let values = (0..<width).map { index in
                index < part.columns.count ? "CAST(\(part.columns[index]) AS TEXT) AS v\(index)" : "NULL AS v\(index)"
            }
            return """
                SELECT '\(part.tag)' AS part, ordinal, \(values.joined(separator: ", ")) FROM (
                SELECT ROW_NUMBER() OVER (ORDER BY \(part.order)) AS ordinal, \(part.selectList) \(part.rest)
                ORDER BY \(part.order)\(part.limit.map { " LIMIT \($0)" } ?? "")) AS \(part.tag)
                """
        }
        let rows = try self.rows(branches.joined(separator: "\nUNION ALL\n"), parts.flatMap(\.arguments))
        var ranked: [String: [(Int64, SQLRow)]] = [:]
        let byTag = Dictionary(uniqueKeysWithValues: parts.map { ($0.tag, $0) })
        for row in rows {
            guard row.values.count == width + 2, case .text(let tag) = row.values[0], let part = byTag[tag],
                let ordinal = Int64(sqlValue: row.values[1])
            else { throw StoreError("a combined read returned a row it did not ask for") }
            let values = Array(row.values[2..<(2 + part.columns.count)])
            ranked[tag, default: []].append((ordinal, SQLRow(columns: part.columns, values: values)))
        }
        return ranked.mapValues { $0.sorted { $0.0 < $1.0 }.map(\.1) }
    }
}

/// What a column can be read as.
public protocol SQLColumnValue {
    init?(sqlValue: SQLValue)
}

extension String: SQLColumnValue {
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .text(let text): self = text
        case .integer(let value): self = String(value)
        case .real(let value): self = String(value)
        case .null: return nil
        }
    }
}

extension Int64: SQLColumnValue {
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .integer(let value): self = value
        case .real(let value): self.init(exactly: value)
        case .text(let text): self.init(text)
        case .null: return nil
        }
    }
}

extension Int: SQLColumnValue {
    public init?(sqlValue: SQLValue) {
        guard let value = Int64(sqlValue: sqlValue) else { return nil }
        self.init(value)
    }
}

extension Bool: SQLColumnValue {
    public init?(sqlValue: SQLValue) {
        guard let value = Int64(sqlValue: sqlValue) else { return nil }
        self = value != 0
    }
}

extension Double: SQLColumnValue {
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .integer(let value): self = Double(value)
        case .real(let value): self = value
        case .text(let text): self.init(text)
        case .null: return nil
        }
    }
}

/// One result row, read by column name. Like GRDB's `Row`, reading NULL or an unconvertible value
/// into a non-optional type is a programming error (the schema says the column is NOT NULL).
public struct SQLRow: Sendable {
    let columns: [String]
    let values: [SQLValue]

    init(columns: [String], values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    func value(_ column: String) -> SQLValue {
        guard let index = columns.firstIndex(of: column) else { preconditionFailure("no column \(column) in the result (\(columns))") }
        return values[index]
    }

    var first: SQLValue? { values.first }

    public subscript<T: SQLColumnValue>(_ column: String) -> T? {
        T(sqlValue: value(column))
    }

    public subscript<T: SQLColumnValue>(_ column: String) -> T {
        guard let value = T(sqlValue: value(column)) else { preconditionFailure("column \(column) is NULL or not a \(T.self)") }
        return value
    }

    func date(_ column: String) -> Date { Date(epochMilliseconds: self[column] as Int64) }
    func optionalDate(_ column: String) -> Date? { (self[column] as Int64?).map(Date.init(epochMilliseconds:)) }
    func value<T: RawRepresentable>(_ type: T.Type, _ column: String) throws -> T where T.RawValue == String {
        let raw: String = self[column]
        guard let value = T(rawValue: raw) else { throw StoreError("unexpected \(column) \(raw) in the database") }
        return value
    }
}

/// A store whose schema the ``Migrator`` manages.
public protocol MigratableStore: Store {
    /// Runs `body` as one transaction on one connection, outside the repositories.
    func migrationUnit<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
}

extension StoreEnvironment: SQLBindable, SQLColumnValue {
    public var sqlValue: SQLValue { .text(rawValue) }
    public init?(sqlValue: SQLValue) {
        guard let text = String(sqlValue: sqlValue) else { return nil }
        self.init(rawValue: text)
    }
}

extension StoreName: SQLBindable, SQLColumnValue {
    public var sqlValue: SQLValue { .text(rawValue) }
    public init?(sqlValue: SQLValue) {
        guard let text = String(sqlValue: sqlValue) else { return nil }
        self.init(rawValue: text)
    }
}

import Domain
import Foundation
import GRDB

/// Berth's store on SQLite (GRDB `DatabasePool`, WAL, `synchronous=NORMAL`): each unit of work is
/// one `BEGIN IMMEDIATE` transaction run in one hop on the writer's queue; reads run on the pool's
/// read-only connections beside it, on committed data.
///
/// `synchronous=NORMAL` under WAL keeps every committed transaction across a process crash
/// (kill -9); only an operating-system crash or power loss may drop the last commits.
public final class SQLiteStore: Store {
    let pool: DatabasePool
    private let group: GroupCommit
    public let path: String

    private init(pool: DatabasePool, path: String) {
        self.pool = pool
        self.group = GroupCommit(pool: pool)
        self.path = path
    }

    /// Opens (creating if needed) the database file at `path`.
    public static func open(path: String, readers: Int = 4) throws -> SQLiteStore {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.maximumReaderCount = readers
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous=NORMAL")
            // Page cache: the writer walks the purchase and booking indexes on every unit of work and
            // keeps their upper levels hot (24 MiB); readers serve listings and key lookups (4 MiB).
            try db.execute(sql: db.configuration.readonly ? "PRAGMA cache_size=-4096" : "PRAGMA cache_size=-24576")
        }
        do {
            return SQLiteStore(pool: try DatabasePool(path: path, configuration: configuration), path: path)
        } catch {
            throw StoreError("cannot open the SQLite database \(path): \(error)")
        }
    }

    /// Parses `sqlite:PATH` (or a bare path).
    public static func path(fromURL url: String) throws -> String {
        if url.hasPrefix("sqlite://") { return String(url.dropFirst("sqlite://".count)) }
        if url.hasPrefix("sqlite:") { return String(url.dropFirst("sqlite:".count)) }
        if url.contains("://") { throw StoreError("unsupported database URL \(url); use sqlite:PATH") }
        return url
    }

    public func close() throws {
        try pool.close()
    }

    /// Units of work queued together share one transaction (``GroupCommit``), each in its own
    /// savepoint: one that throws is rolled back alone; each caller is answered after the COMMIT.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await group.submit { db in try body(SQLiteSession(db: db)) }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await pool.read { db in try body(SQLiteSession(db: db)) }
    }

    /// Runs raw SQL outside the repositories (migrations, pragmas, tests).
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.writeWithoutTransaction { db in try body(db) }
    }
}

/// The repositories of one SQLite unit of work.
struct SQLiteSession: StoreSession {
    let db: Database

    var purchases: any PurchaseRepository { SQLitePurchases(db: db) }
    var bookings: any BookingRepository { SQLiteBookings(db: db) }
    var notifications: any NotificationRepository { SQLiteNotifications(db: db) }
    var outbox: any OutboxRepository { SQLiteOutbox(db: db) }
    var audit: any AuditRepository { SQLiteAudit(db: db) }
    var keys: any APIKeyRepository { SQLiteKeys(db: db) }
    var receiptChecks: any ReceiptCheckRepository { SQLiteReceiptChecks(db: db) }
    var credits: any CreditRepository { SQLiteCredits(db: db) }
    var subscriptions: any SubscriptionRepository { SQLiteSubscriptions(db: db) }
}

/// A storage failure that is not a business-rule refusal.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Database {
    /// Runs a statement through the connection's statement cache.
    func run(_ sql: String, _ arguments: StatementArguments = []) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }

    func row(_ sql: String, _ arguments: StatementArguments = []) throws -> Row? {
        try Row.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }

    func rows(_ sql: String, _ arguments: StatementArguments = []) throws -> [Row] {
        try Row.fetchAll(cachedStatement(sql: sql), arguments: arguments)
    }

    func count(_ sql: String, _ arguments: StatementArguments = []) throws -> Int {
        try Int.fetchOne(cachedStatement(sql: sql), arguments: arguments) ?? 0
    }

    /// The one paged listing: total of `whereClause`, then a newest-first page of it.
    func page<T>(
        table: String, columns: String, whereClause: String, arguments: StatementArguments, order: String, page: Page,
        decode: (Row) throws -> T
    ) throws -> (items: [T], total: Int) {
        let total = try count("SELECT COUNT(*) FROM \(table) WHERE \(whereClause)", arguments)
        let rows = try self.rows(
            "SELECT \(columns) FROM \(table) WHERE \(whereClause) ORDER BY \(order) DESC, id DESC LIMIT ? OFFSET ?",
            arguments + [page.limit, page.offset]
        )
        return (try rows.map(decode), total)
    }
}

extension Row {
    func date(_ column: String) -> Date { Date(epochMilliseconds: self[column] as Int64) }
    func optionalDate(_ column: String) -> Date? { (self[column] as Int64?).map(Date.init(epochMilliseconds:)) }
    func value<T: RawRepresentable>(_ type: T.Type, _ column: String) throws -> T where T.RawValue == String {
        let raw: String = self[column]
        guard let value = T(rawValue: raw) else { throw StoreError("unexpected \(column) \(raw) in the database") }
        return value
    }
}

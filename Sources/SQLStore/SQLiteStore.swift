import Domain
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Berth's store on SQLite (GRDB `DatabasePool`, WAL, `synchronous=NORMAL`): each unit of work is
/// one `BEGIN IMMEDIATE` transaction run in one hop on the writer's queue; reads run on the pool's
/// read-only connections beside it, on committed data.
///
/// `synchronous=NORMAL` under WAL keeps every committed transaction across a process crash
/// (kill -9); only an operating-system crash or power loss may drop the last commits.
public final class SQLiteStore: MigratableStore {
    let pool: DatabasePool
    private let group: GroupCommit

    /// Units of work waiting for the writer (queued behind the one that holds it).
    public var queuedWrites: Int { group.queued }
    public let path: String
    /// Set by the first ``close()``: a closed pool's connections must not be touched again (a
    /// checkpoint on one dereferences a freed handle). Reads and writes asked for after it are
    /// refused with ``StoreClosed`` (one atomic load each), not handed to a closed SQLite connection
    /// (SQLite's misuse code 21, which it words "out of memory").
    private let closed = Atomic(false)

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
            // The writer's statement journal in memory: a group commit runs each unit of work in its own
            // savepoint, and SQLite keeps the savepoints' page images in a journal that spilled to a
            // temporary file past 64 KiB (a group of purchases wrote about 8 KB there per purchase, more
            // than the WAL itself: 17 % of a first-time purchase's CPU was `pwrite`, by perf and strace).
            // In memory it lives for one transaction, at most a group's pages (64 units). Readers keep
            // the default: their sorts may be large and may use disk.
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA temp_store=MEMORY") }
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

    /// Closes the database after moving every committed page into the main file
    /// (`wal_checkpoint(TRUNCATE)`): a stopped service leaves one self-contained `berth.sqlite`, which
    /// an operator may copy alone.
    public func close() throws {
        guard closed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        do {
            _ = try pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        } catch {
            // A reader still busy (or the disk full): the WAL stays beside the file, complete; SQLite
            // replays it at the next open.
        }
        try pool.close()
    }

    /// SQLite's own heap (page caches, prepared statements, schema), process-wide: the page caches
    /// grow with the database up to their `cache_size` caps (24 MiB for the writer, 4 MiB per reader).
    public func engineGauges() -> [(name: String, value: Double)] {
        [("berth_sqlite_memory_bytes", Double(sqlite3_memory_used())), ("berth_sqlite_memory_highwater_bytes", Double(sqlite3_memory_highwater(0)))]
    }

    /// Every table of the database with its row count (backups and restores compare them).
    public func tableCounts() throws -> [(table: String, rows: Int)] {
        try pool.read { db in
            let tables = try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
            return try tables.map { table in
                (table, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \"\(table.replacingOccurrences(of: "\"", with: "\"\""))\"") ?? 0)
            }
        }
    }

    /// Whether the database holds Berth's schema (its migrations table).
    public func holdsBerthSchema() throws -> Bool {
        try pool.read { db in try db.tableExists("schema_migrations") }
    }

    /// A consistent copy of the database as it is now, while the service keeps writing (SQLite's
    /// `VACUUM INTO`, in one read transaction): a new, self-contained, compacted file at `path`,
    /// which must not exist yet (nor be a symbolic link, dangling or not).
    ///
    /// The copy holds key hashes, user ids and purchases, so it is readable by its owner only (0600,
    /// whatever the umask): it is written into a file created beside `path` with `O_CREAT|O_EXCL|
    /// O_NOFOLLOW` and mode 0600, then linked to `path` (which fails rather than replace anything
    /// that appeared meanwhile) and the temporary name removed. A failed copy leaves nothing behind.
    public func backup(to path: String) throws {
        var status = stat()
        guard lstat(path, &status) != 0 else { throw StoreError("\(path) exists already; back up into a new file") }
        let target = URL(fileURLWithPath: path)
        let partial = target.deletingLastPathComponent().appendingPathComponent(
            ".\(target.lastPathComponent).partial-\(UInt32.random(in: 0...UInt32.max))"
        ).path
        let descriptor = Glibc.open(partial, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError("cannot create a file beside \(path): \(String(cString: strerror(errno)))")
        }
        Glibc.close(descriptor)
        do {
            // Outside a transaction (VACUUM opens its own read transaction), on a reader: writers carry on.
            // VACUUM INTO writes into an existing empty file, keeping its mode.
            try pool.unsafeRead { db in try db.execute(sql: "VACUUM INTO ?", arguments: [partial]) }
        } catch {
            unlink(partial)
            throw StoreError("the backup into \(path) failed: \(error)")
        }
        defer { unlink(partial) }
        guard link(partial, path) == 0 else {
            let reason = errno == EEXIST ? "it appeared while the copy was made" : String(cString: strerror(errno))
            throw StoreError("the backup could not be put at \(path): \(reason)")
        }
    }

    /// Units of work queued together share one transaction (``GroupCommit``), each in its own
    /// savepoint: one that throws is rolled back alone; each caller is answered after the COMMIT.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        guard !closed.load(ordering: .acquiring) else { throw StoreClosed() }
        return try await group.submit { db in try body(SQLSession(db: GRDBExecutor(db: db))) }
    }

    /// Runs on the calling thread (GRDB's synchronous read on one of the pool's reader connections):
    /// a read is a few index lookups in the page cache, cheaper than the two thread hops of an
    /// asynchronous read. The body is synchronous, so a reader is always given back without
    /// waiting for anything; a caller waits only while every reader is busy.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try readHere(body)
    }

    /// The synchronous read (a synchronous function, so that GRDB's blocking overload is the one called).
    private func readHere<T: Sendable>(_ body: @Sendable (any StoreSession) throws -> T) throws -> T {
        guard !closed.load(ordering: .acquiring) else { throw StoreClosed() }
        return try pool.read { db in try body(SQLSession(db: GRDBExecutor(db: db))) }
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction (migrations).
    public func migrationUnit<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await pool.writeWithoutTransaction { db in
            var result: T?
            try db.inTransaction(.immediate) {
                result = try body(GRDBExecutor(db: db))
                return .commit
            }
            guard let result else { throw StoreError("the migration returned nothing") }
            return result
        }
    }

    /// Runs raw SQL outside the repositories (migrations, pragmas, tests).
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.writeWithoutTransaction { db in try body(db) }
    }
}

/// The repositories of one unit of work, over either backend's connection.
struct SQLSession: StoreSession {
    let db: any SQLExecutor

    var purchases: any PurchaseRepository { SQLPurchases(db: db) }
    var bookings: any BookingRepository { SQLBookings(db: db) }
    var notifications: any NotificationRepository { SQLNotifications(db: db) }
    var outbox: any OutboxRepository { SQLOutbox(db: db) }
    var audit: any AuditRepository { SQLAudit(db: db) }
    var keys: any APIKeyRepository { SQLKeys(db: db) }
    var receiptChecks: any ReceiptCheckRepository { SQLReceiptChecks(db: db) }
    var credits: any CreditRepository { SQLCredits(db: db) }
    var subscriptions: any SubscriptionRepository { SQLSubscriptions(db: db) }
    var grants: any GrantRepository { SQLGrants(db: db) }
    var cardPayments: any CardPaymentRepository { SQLCardPayments(db: db) }
    var play: any PlayRepository { SQLPlay(db: db) }
    var consents: any ConsentRepository { SQLConsents(db: db) }
    var consumptionAnswers: any ConsumptionAnswerRepository { SQLConsumptionAnswers(db: db) }
    var appleHistory: any AppleHistoryRepository { SQLAppleHistory(db: db) }
    var schema: any SchemaRepository { SQLSchema(db: db) }
    var userState: any UserStateRepository { SQLUserState(db: db) }
    var operatorViews: any OperatorViewRepository { SQLOperatorViews(db: db) }
    var inventory: any InventoryRepository { SQLInventory(db: db) }
    var closures: any ClosureRepository { SQLClosures(db: db) }
}

/// Which migrations are applied (none when the bookkeeping table does not exist yet).
struct SQLSchema: SchemaRepository {
    let db: any SQLExecutor

    func appliedMigrations() throws -> Set<String> {
        do {
            return Set(try db.rows("SELECT version FROM schema_migrations", []).map { $0["version"] as String })
        } catch {
            // A database that was never migrated has no bookkeeping table: nothing is applied.
            if "\(error)".contains("schema_migrations") { return [] }
            throw error
        }
    }
}

/// A storage failure that is not a business-rule refusal.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

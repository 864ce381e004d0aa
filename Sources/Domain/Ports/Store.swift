/// Berth's persistence: units of work over repositories, on SQLite or (later) PostgreSQL.
///
/// A unit of work is a synchronous closure. `write` runs it as one transaction on one connection,
/// all or nothing: on SQLite the whole closure is one hop to the writer; a backend without a
/// synchronous driver runs it on a thread of its own. Loads that a decision depends on name their
/// lock (`forUpdate:`), so that correctness never rests on a single writer.
public protocol Store: Sendable {
    /// Runs `body` in one write transaction (rolled back if it throws).
    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T
    /// Runs `body` on committed data, beside the writer. Writes in it fail.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T
    /// A read whose `body` issues exactly one statement (a repository method documented as one
    /// statement). One statement sees one snapshot by itself, so a backend may run it without a
    /// transaction around it: on PostgreSQL that is one round trip instead of three. A second
    /// statement in `body` fails the read.
    func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T
    /// The storage engine's own figures for `/metrics` (gauges), read without a query.
    func engineGauges() -> [(name: String, value: Double)]
}

/// What a read or write asked for after the store was closed throws: the service is stopping, and
/// background work that meets it stops too (it is not a failure to report).
public struct StoreClosed: Error, CustomStringConvertible, Sendable {
    public init() {}
    public var description: String { "the store is closed (the service is stopping)" }
}

extension Store {
    public func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await read(body)
    }
}

/// The repositories of one unit of work, one per table group.
public protocol StoreSession {
    var purchases: any PurchaseRepository { get }
    var bookings: any BookingRepository { get }
    var notifications: any NotificationRepository { get }
    var outbox: any OutboxRepository { get }
    var audit: any AuditRepository { get }
    var keys: any APIKeyRepository { get }
    var receiptChecks: any ReceiptCheckRepository { get }
    var credits: any CreditRepository { get }
    var subscriptions: any SubscriptionRepository { get }
    var grants: any GrantRepository { get }
    var cardPayments: any CardPaymentRepository { get }
    var play: any PlayRepository { get }
    var consents: any ConsentRepository { get }
    var consumptionAnswers: any ConsumptionAnswerRepository { get }
    var appleHistory: any AppleHistoryRepository { get }
    var schema: any SchemaRepository { get }
    var userState: any UserStateRepository { get }
    var operatorViews: any OperatorViewRepository { get }
    var inventory: any InventoryRepository { get }
    var closures: any ClosureRepository { get }
}

/// The schema's own bookkeeping (readiness checks that the code's migrations are applied).
public protocol SchemaRepository {
    /// The versions of the migrations applied to this database.
    func appliedMigrations() throws -> Set<String>
}

/// The database cannot take a unit of work now (unreachable, out of connections, or it kept failing
/// transiently): nothing was written, and the client may try again after `retryAfter` seconds.
public struct StoreUnavailable: Error, CustomStringConvertible, Sendable {
    public var description: String
    public var retryAfter: Int

    public init(_ description: String, retryAfter: Int) {
        self.description = description
        self.retryAfter = retryAfter
    }
}

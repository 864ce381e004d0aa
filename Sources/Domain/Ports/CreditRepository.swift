import Foundation

/// Filters of ledger listings (the user's history, the operators' ledger and its CSV export).
public struct LedgerFilter: Hashable, Sendable {
    public var userId: String?
    public var productId: String?
    public var creditType: String?
    public var type: LedgerEntryType?
    public var status: LedgerEntryStatus?
    public var from: Date?
    public var to: Date?

    public init(
        userId: String? = nil,
        productId: String? = nil,
        creditType: String? = nil,
        type: LedgerEntryType? = nil,
        status: LedgerEntryStatus? = nil,
        from: Date? = nil,
        to: Date? = nil
    ) {
        self.userId = userId
        self.productId = productId
        self.creditType = creditType
        self.type = type
        self.status = status
        self.from = from
        self.to = to
    }
}

/// Sales of one credit product over a period.
public struct CreditProductStats: Hashable, Sendable {
    public var productId: String
    public var purchases: Int
    public var creditsGranted: Int64
    public var refunds: Int
    public var creditsRefunded: Int64

    public init(productId: String, purchases: Int, creditsGranted: Int64, refunds: Int, creditsRefunded: Int64) {
        self.productId = productId
        self.purchases = purchases
        self.creditsGranted = creditsGranted
        self.refunds = refunds
        self.creditsRefunded = creditsRefunded
    }
}

/// One account as the ledger check sees it: the stored balance and debt beside what the ledger, the
/// lots and the lot uses add up to.
public struct LedgerTotals: Hashable, Sendable {
    public var userId: String
    public var creditType: String
    public var balance: Int64
    public var debt: Int64
    public var ledgerAmount: Int64
    public var ledgerDebt: Int64
    public var lotsRemaining: Int64
    /// Lots whose remaining credits differ from their amount minus their uses.
    public var inconsistentLots: Int

    public init(
        userId: String,
        creditType: String,
        balance: Int64,
        debt: Int64,
        ledgerAmount: Int64,
        ledgerDebt: Int64,
        lotsRemaining: Int64,
        inconsistentLots: Int
    ) {
        self.userId = userId
        self.creditType = creditType
        self.balance = balance
        self.debt = debt
        self.ledgerAmount = ledgerAmount
        self.ledgerDebt = ledgerDebt
        self.lotsRemaining = lotsRemaining
        self.inconsistentLots = inconsistentLots
    }

    /// What disagrees (empty when the account is consistent).
    public func problems(negativeAllowed: Bool) -> [String] {
        var problems: [String] = []
        if balance != ledgerAmount { problems.append("balance \(balance) but the ledger adds up to \(ledgerAmount)") }
        if debt != ledgerDebt { problems.append("debt \(debt) but the ledger's debt changes add up to \(ledgerDebt)") }
        if lotsRemaining != max(0, balance) { problems.append("lots hold \(lotsRemaining) credits for a balance of \(balance)") }
        if inconsistentLots > 0 { problems.append("\(inconsistentLots) lot(s) whose remaining credits differ from their amount minus their uses") }
        if debt < 0 { problems.append("negative debt \(debt)") }
        if balance < 0, !negativeAllowed { problems.append("negative balance \(balance) where the tenant does not allow one") }
        return problems
    }
}

/// Credit products, balances, the ledger, lots and reservations. Changes are written from a
/// ``CreditChange`` (see `StoreSession.save(_:now:)`); the store decides nothing.
public protocol CreditRepository {
    // Products (the operators' catalog).
    func products(tenantId: String) throws -> [CreditProduct]
    func product(tenantId: String, productId: String) throws -> CreditProduct?
    /// A new product; an existing (tenant, product id) violates a unique index.
    func insert(_ product: CreditProduct) throws
    func update(_ product: CreditProduct) throws
    /// Adds the catalog's products that are not stored yet (stored ones are left as operators edited them).
    func seed(_ products: [CreditProduct]) throws -> Int

    /// One account, for a decision: its balance (zero if it has none yet), what reservations hold at
    /// `now` and its lots with credits left. `forUpdate` locks its balance row for the unit of work.
    func account(tenantId: String, userId: String, creditType: String, now: Date, forUpdate: Bool) throws -> CreditAccount
    /// Every account of a user (types it has a balance row for), without lots.
    func summaries(tenantId: String, userId: String, now: Date) throws -> [CreditSummary]
    func saveBalance(_ balance: CreditBalance, now: Date) throws

    func insert(_ entry: LedgerEntry) throws
    func setStatus(_ status: LedgerEntryStatus, entryId: Int64) throws
    /// The entry that granted a purchase's credits (and its lot).
    func grant(purchaseId: Int64, tenantId: String) throws -> (entry: LedgerEntry, lot: CreditLot?)?
    /// The newest refund entry of a purchase (what its last refund took), if it was refunded.
    func lastRefund(purchaseId: Int64, tenantId: String) throws -> LedgerEntry?
    func insert(_ lot: CreditLot) throws
    func update(_ lot: CreditLot) throws
    func insert(_ use: CreditLotUse) throws
    /// A user's lots of a type, oldest first, with the uses of each.
    /// A page of the user's lots, oldest first, each with its uses.
    func lots(
        tenantId: String,
        userId: String,
        creditType: String?,
        page: Page
    ) throws -> (items: [(lot: CreditLot, uses: [CreditLotUse])], total: Int)

    /// Records the signup bonus for a user as granted (saving the bonus's change does it); false if
    /// it was recorded before (a unique key decides: a second grant fails instead of crediting twice).
    func recordBonus(tenantId: String, userId: String, now: Date) throws -> Bool
    func hasBonus(tenantId: String, userId: String) throws -> Bool

    func reservation(id: Int64, tenantId: String, forUpdate: Bool) throws -> CreditReservation?
    func reservation(reference: String, tenantId: String, userId: String) throws -> CreditReservation?
    func insert(_ reservation: CreditReservation) throws
    func update(_ reservation: CreditReservation) throws

    func entries(tenantId: String, filter: LedgerFilter, page: Page) throws -> (items: [LedgerEntry], total: Int)
    /// Every entry of a filter, oldest first, up to `limit` (the CSV export).
    func export(tenantId: String, filter: LedgerFilter, limit: Int) throws -> [LedgerEntry]
    func stats(tenantId: String, from: Date?, to: Date?) throws -> [CreditProductStats]
    /// The ledger check of every account of a tenant.
    /// The totals of up to `limit` accounts after `after` (user id, credit type), in that order: the
    /// check walks a tenant's accounts in batches, never in one query over all of them.
    func totals(tenantId: String, after: (userId: String, creditType: String)?, limit: Int) throws -> [LedgerTotals]
}

/// A signup bonus saved for a user whose bonus is recorded already: the unit of work that tried it
/// fails whole (``SignupBonusRules/Due`` is read under the account's lock, so only a caller that
/// skipped that read can meet it).
public struct SignupBonusRecordedTwice: Error, CustomStringConvertible, Sendable {
    public let tenantId: String
    public let userId: String

    public var description: String {
        "the signup bonus of \(userId) (tenant \(tenantId)) is recorded already: nothing of this unit of work is written"
    }
}

import Foundation

/// What a ledger entry records.
public enum LedgerEntryType: String, Codable, Hashable, Sendable, CaseIterable {
    /// Credits of a verified App Store purchase.
    case purchase
    /// Free credits (the signup bonus).
    case bonus
    /// Credits spent: a committed reservation.
    case usage
    /// Credits taken back because Apple refunded or revoked the purchase.
    case refund
    /// Credits given back because Apple reversed a refund.
    case refundReversal = "refund_reversal"
    /// An operator's correction (positive or negative).
    case adjustment
    /// Credits that paid off a debt left by an earlier refund.
    case debtSettlement = "debt_settlement"
}

/// A ledger entry's state.
public enum LedgerEntryStatus: String, Codable, Hashable, Sendable, CaseIterable {
    case completed
    /// A purchase entry whose transaction Apple refunded (its refund entry follows it).
    case refunded
}

/// One row of the credits ledger. Every change of a balance is one entry; the balance is the sum of
/// the entries' `amount`, the debt the sum of their `debtChange`.
public struct LedgerEntry: Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var userId: String
    public var creditType: String
    /// Position within its account (1, 2, …).
    public var sequence: Int64
    public var type: LedgerEntryType
    /// Signed change of the balance.
    public var amount: Int64
    /// Signed change of the debt (a refund that found too few credits; a settlement).
    public var debtChange: Int64
    /// The balance right after this entry.
    public var balanceAfter: Int64
    public var status: LedgerEntryStatus
    /// `user:<id>`, `admin:<key id>`, `server:<key id>`, `apple`, `system`.
    public var actor: String
    public var reason: String?
    public var productId: String?
    public var transactionId: String?
    public var purchaseId: Int64?
    public var reservationId: Int64?
    /// The profile (person) a usage was for, kept for ever.
    public var profileId: String?
    /// The app's own reference of a usage (a generation id).
    public var reference: String?
    public var createdAt: Date

    public init(
        id: Int64,
        tenantId: String,
        userId: String,
        creditType: String,
        sequence: Int64,
        type: LedgerEntryType,
        amount: Int64,
        debtChange: Int64 = 0,
        balanceAfter: Int64,
        status: LedgerEntryStatus = .completed,
        actor: String,
        reason: String? = nil,
        productId: String? = nil,
        transactionId: String? = nil,
        purchaseId: Int64? = nil,
        reservationId: Int64? = nil,
        profileId: String? = nil,
        reference: String? = nil,
        createdAt: Date
    ) {
        self.id = id
        self.tenantId = tenantId
        self.userId = userId
        self.creditType = creditType
        self.sequence = sequence
        self.type = type
        self.amount = amount
        self.debtChange = debtChange
        self.balanceAfter = balanceAfter
        self.status = status
        self.actor = actor
        self.reason = reason
        self.productId = productId
        self.transactionId = transactionId
        self.purchaseId = purchaseId
        self.reservationId = reservationId
        self.profileId = profileId
        self.reference = reference
        self.createdAt = createdAt
    }
}

/// The credits one grant brought (a purchase, a bonus…), spent oldest first. The unspent credits of
/// all lots of an account add up to its balance (zero while it is negative).
public struct CreditLot: Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var userId: String
    public var creditType: String
    /// The ledger entry that granted it.
    public var entryId: Int64
    public var purchaseId: Int64?
    public var amount: Int64
    public var remaining: Int64
    public var grantedAt: Date
    /// When its last credit was spent.
    public var consumedAt: Date?
    /// When Apple refunded the purchase that granted it.
    public var refundedAt: Date?

    public init(
        id: Int64,
        tenantId: String,
        userId: String,
        creditType: String,
        entryId: Int64,
        purchaseId: Int64?,
        amount: Int64,
        remaining: Int64,
        grantedAt: Date,
        consumedAt: Date? = nil,
        refundedAt: Date? = nil
    ) {
        self.id = id
        self.tenantId = tenantId
        self.userId = userId
        self.creditType = creditType
        self.entryId = entryId
        self.purchaseId = purchaseId
        self.amount = amount
        self.remaining = remaining
        self.grantedAt = grantedAt
        self.consumedAt = consumedAt
        self.refundedAt = refundedAt
    }

    /// `unused`, `partly_used`, `consumed` or `refunded`.
    public var state: String {
        if refundedAt != nil { return "refunded" }
        if remaining == 0 { return "consumed" }
        return remaining == amount ? "unused" : "partly_used"
    }
}

/// Credits of one lot taken by one ledger entry (a usage records its profile): kept for ever.
public struct CreditLotUse: Hashable, Sendable {
    public var entryId: Int64
    public var lotId: Int64
    public var amount: Int64
    public var profileId: String?
    public var at: Date

    public init(entryId: Int64, lotId: Int64, amount: Int64, profileId: String?, at: Date) {
        self.entryId = entryId
        self.lotId = lotId
        self.amount = amount
        self.profileId = profileId
        self.at = at
    }
}

/// The stored balance of one user and credit type (held credits are still in it).
public struct CreditBalance: Hashable, Sendable {
    public var tenantId: String
    public var userId: String
    public var creditType: String
    public var balance: Int64
    /// Credits a refund could not take back (never negative).
    public var debt: Int64
    /// Ledger entries the account has had (the next one is number `entries + 1`).
    public var entries: Int64

    public init(tenantId: String, userId: String, creditType: String, balance: Int64 = 0, debt: Int64 = 0, entries: Int64 = 0) {
        self.tenantId = tenantId
        self.userId = userId
        self.creditType = creditType
        self.balance = balance
        self.debt = debt
        self.entries = entries
    }
}

/// What the rules need of one account to decide: its balance, what active reservations hold, and
/// its lots with credits left (oldest first).
public struct CreditAccount: Hashable, Sendable {
    public var balance: CreditBalance
    public var held: Int64
    public var openLots: [CreditLot]

    public init(balance: CreditBalance, held: Int64, openLots: [CreditLot]) {
        self.balance = balance
        self.held = held
        self.openLots = openLots
    }

    /// Credits a new reservation may take.
    public var available: Int64 { max(0, balance.balance - held) }
    public var summary: CreditSummary {
        CreditSummary(creditType: balance.creditType, balance: balance.balance, held: held, debt: balance.debt)
    }
}

/// A balance as the app sees it.
public struct CreditSummary: Hashable, Sendable {
    public var creditType: String
    public var balance: Int64
    public var held: Int64
    public var debt: Int64

    public init(creditType: String, balance: Int64, held: Int64, debt: Int64) {
        self.creditType = creditType
        self.balance = balance
        self.held = held
        self.debt = debt
    }

    public var available: Int64 { max(0, balance - held) }
}

/// A reservation's state.
public enum ReservationStatus: String, Codable, Hashable, Sendable, CaseIterable {
    case held, committed, released, expired
}

/// Credits held for work in progress: committed (spent) after it succeeded, released after it failed,
/// or expired by itself.
public struct CreditReservation: Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var userId: String
    public var creditType: String
    public var amount: Int64
    public var status: ReservationStatus
    public var reference: String?
    public var profileId: String?
    public var createdAt: Date
    public var expiresAt: Date
    public var settledAt: Date?
    /// The usage entry of a committed reservation.
    public var entryId: Int64?

    public init(
        id: Int64,
        tenantId: String,
        userId: String,
        creditType: String,
        amount: Int64,
        status: ReservationStatus,
        reference: String?,
        profileId: String?,
        createdAt: Date,
        expiresAt: Date,
        settledAt: Date? = nil,
        entryId: Int64? = nil
    ) {
        self.id = id
        self.tenantId = tenantId
        self.userId = userId
        self.creditType = creditType
        self.amount = amount
        self.status = status
        self.reference = reference
        self.profileId = profileId
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.settledAt = settledAt
        self.entryId = entryId
    }

    /// The status as of `now` (a held reservation past its expiry is expired, written or not).
    public func status(at now: Date) -> ReservationStatus {
        status == .held && expiresAt <= now ? .expired : status
    }
}

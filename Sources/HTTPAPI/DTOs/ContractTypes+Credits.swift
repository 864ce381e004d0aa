import Domain
import Foundation

// The credits part of the JSON contract (contract/berth.ts, contract/openapi.yaml).

struct CreditBalanceDTO: Codable {
    var creditType: String
    /// Credits owned, held ones included.
    var balance: Int64
    /// Credits reservations hold.
    var held: Int64
    /// Credits a new reservation may take.
    var available: Int64
    /// Credits a refund could not take back; settled from the next credits granted.
    var debt: Int64
    /// Report apps: whether a credit of this type is there to use (available > 0).
    var unlocked: Bool

    init(_ summary: CreditSummary) {
        creditType = summary.creditType
        balance = summary.balance
        held = summary.held
        available = summary.available
        debt = summary.debt
        unlocked = summary.available > 0
    }
}

struct LedgerEntryDTO: Codable {
    var id: Int64
    var userId: String
    var creditType: String
    /// `purchase`, `bonus`, `usage`, `refund`, `refund_reversal`, `adjustment`, `debt_settlement`.
    var type: String
    var amount: Int64
    var debtChange: Int64
    var balanceAfter: Int64
    /// `completed`, or `refunded` for a purchase Apple refunded.
    var status: String
    var actor: String
    var reason: String?
    var productId: String?
    var transactionId: String?
    var purchaseId: Int64?
    var reservationId: Int64?
    var profileId: String?
    var reference: String?
    var createdAt: APITime

    init(_ e: LedgerEntry) {
        id = e.id
        userId = e.userId
        creditType = e.creditType
        type = e.type.rawValue
        amount = e.amount
        debtChange = e.debtChange
        balanceAfter = e.balanceAfter
        status = e.status.rawValue
        actor = e.actor
        reason = e.reason
        productId = e.productId
        transactionId = e.transactionId
        purchaseId = e.purchaseId
        reservationId = e.reservationId
        profileId = e.profileId
        reference = e.reference
        createdAt = APITime(e.createdAt)
    }
}

struct LedgerPageMeta: Codable {
    var total: Int
    var limit: Int
    var offset: Int
}

struct CreditLotDTO: Codable {
    struct Use: Codable {
        var entryId: Int64
        var amount: Int64
        var profileId: String?
        var at: APITime
    }

    var id: Int64
    var creditType: String
    var entryId: Int64
    var purchaseId: Int64?
    var amount: Int64
    var remaining: Int64
    /// `unused`, `partly_used`, `consumed`, `refunded`.
    var state: String
    var grantedAt: APITime
    var consumedAt: APITime?
    var refundedAt: APITime?
    var uses: [Use]

    init(_ lot: CreditLot, uses: [CreditLotUse]) {
        id = lot.id
        creditType = lot.creditType
        entryId = lot.entryId
        purchaseId = lot.purchaseId
        amount = lot.amount
        remaining = lot.remaining
        state = lot.state
        grantedAt = APITime(lot.grantedAt)
        consumedAt = lot.consumedAt.map(APITime.init)
        refundedAt = lot.refundedAt.map(APITime.init)
        self.uses = uses.map { Use(entryId: $0.entryId, amount: $0.amount, profileId: $0.profileId, at: APITime($0.at)) }
    }
}

struct ReservationDTO: Codable {
    var id: Int64
    var creditType: String
    var amount: Int64
    /// `held`, `committed`, `released`, `expired`.
    var status: String
    var reference: String?
    var profileId: String?
    var createdAt: APITime
    var expiresAt: APITime
    var settledAt: APITime?
    /// The usage entry of a committed reservation.
    var entryId: Int64?

    init(_ r: CreditReservation, now: Date) {
        id = r.id
        creditType = r.creditType
        amount = r.amount
        status = r.status(at: now).rawValue
        reference = r.reference
        profileId = r.profileId
        createdAt = APITime(r.createdAt)
        expiresAt = APITime(r.expiresAt)
        settledAt = r.settledAt.map(APITime.init)
        entryId = r.entryId
    }
}

struct CreditStatsDTO: Codable {
    var productId: String
    var purchases: Int
    var creditsGranted: Int64
    var refunds: Int
    var creditsRefunded: Int64
}

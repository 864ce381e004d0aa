import Foundation

/// Everything one change of a credit account writes, decided by ``CreditRules`` and saved as it is.
public struct CreditChange: Hashable, Sendable {
    /// The account after the change (its balance row is written).
    public var account: CreditAccount
    public var entries: [LedgerEntry] = []
    public var newLots: [CreditLot] = []
    /// Lots whose `remaining`, `consumedAt` or `refundedAt` changed.
    public var updatedLots: [CreditLot] = []
    public var lotUses: [CreditLotUse] = []
    /// Entries whose status changes (a purchase refunded, or reinstated).
    public var statusChanges: [EntryStatusChange] = []
    public var newReservation: CreditReservation?
    public var updatedReservation: CreditReservation?
    /// This change is the user's signup bonus: saving it records the bonus as granted, and a unit of
    /// work that finds it recorded already fails whole (the bonus is never granted twice).
    public var grantsSignupBonus = false

    public init(account: CreditAccount) { self.account = account }

    public struct EntryStatusChange: Hashable, Sendable {
        public var entryId: Int64
        public var status: LedgerEntryStatus
    }

    /// Net change of the balance.
    public var amount: Int64 { entries.reduce(0) { $0 + $1.amount } }

    /// The `credits.changed` event of this change (nil when the balance did not move).
    public func event(reason: LedgerEntryType) -> WebhookEvent? {
        guard !entries.isEmpty else { return nil }
        let balance = account.balance
        var data = [
            "userId": balance.userId, "creditType": balance.creditType, "balance": String(balance.balance), "available": String(account.available),
            "debt": String(balance.debt), "change": String(amount), "reason": reason.rawValue, "entryId": String(entries[0].id),
        ]
        if let transactionId = entries[0].transactionId { data["transactionId"] = transactionId }
        return WebhookEvent(type: .creditsChanged, data: data, subject: "credits:\(balance.creditType):\(balance.userId)")
    }
}

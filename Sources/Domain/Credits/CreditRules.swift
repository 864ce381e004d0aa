import Foundation

/// How credits move: grants, usage, refunds and reservations, as pure decisions over a loaded
/// ``CreditAccount``. Invariants kept by every change: the balance is the sum of the ledger's
/// amounts, the debt the sum of its debt changes, and the unspent credits of the lots add up to
/// the balance (zero while it is negative); spending takes the oldest lot first.
public enum CreditRules {
    /// Gives `amount` credits: a new lot, and (when the balance may not go negative) the user's debt
    /// is settled from it first, as a second entry.
    public static func grant(
        _ account: CreditAccount,
        amount: Int64,
        type: LedgerEntryType,
        actor: Actor,
        reason: String? = nil,
        productId: String? = nil,
        transactionId: String? = nil,
        purchaseId: Int64? = nil,
        negativeAllowed: Bool,
        now: Date
    ) -> CreditChange {
        var builder = Builder(account: account, now: now)
        let old = builder.balance.balance
        let entry = builder.entry(
            type,
            amount: amount,
            actor: actor,
            reason: reason,
            productId: productId,
            transactionId: transactionId,
            purchaseId: purchaseId
        )
        var lot = CreditLot(
            id: RecordID.next(),
            tenantId: account.balance.tenantId,
            userId: account.balance.userId,
            creditType: account.balance.creditType,
            entryId: entry.id,
            purchaseId: purchaseId,
            amount: amount,
            remaining: amount,
            grantedAt: now
        )
        let settle = negativeAllowed ? 0 : min(builder.balance.debt, amount)
        if settle > 0 {
            let settlement = builder.entry(
                .debtSettlement,
                amount: -settle,
                debtChange: -settle,
                actor: .system,
                reason: "debt of an earlier refund",
                productId: productId,
                transactionId: transactionId,
                purchaseId: purchaseId
            )
            builder.change.lotUses.append(CreditLotUse(entryId: settlement.id, lotId: lot.id, amount: settle, profileId: nil, at: now))
        }
        // A negative balance is paid first: only what lifts it above zero stays in the lot.
        let lotCredits = max(0, builder.balance.balance) - max(0, old)
        if lotCredits < amount - settle {
            builder.change.lotUses.append(
                CreditLotUse(entryId: entry.id, lotId: lot.id, amount: amount - settle - lotCredits, profileId: nil, at: now)
            )
        }
        lot.remaining = lotCredits
        if lot.remaining == 0 { lot.consumedAt = now }
        builder.change.newLots.append(lot)
        if lot.remaining > 0 { builder.openLots.append(lot) }
        return builder.finish()
    }

    /// Reserves `amount` for work in progress, or refuses with `insufficient_credits` and the balance.
    public static func reserve(
        _ account: CreditAccount,
        amount: Int64,
        reference: String?,
        profileId: String?,
        duration: TimeInterval,
        now: Date
    ) throws(DomainError) -> CreditChange {
        guard account.available >= amount else {
            var error = DomainError(
                .forbidden,
                .insufficientCredits,
                "\(amount) credit(s) needed, \(account.available) available (\(account.balance.creditType)); buy more to continue",
                field: "amount"
            )
            error.credits = account.summary
            throw error
        }
        var change = CreditChange(account: account)
        change.account.held += amount
        let balance = account.balance
        change.newReservation = CreditReservation(
            id: RecordID.next(),
            tenantId: balance.tenantId,
            userId: balance.userId,
            creditType: balance.creditType,
            amount: amount,
            status: .held,
            reference: reference,
            profileId: profileId,
            createdAt: now,
            expiresAt: now.addingTimeInterval(duration)
        )
        return change
    }

    /// Spends a held reservation: a usage entry taking its credits from the oldest lots, recording
    /// its profile. Refused when it is no longer held (released, expired); a committed one is answered as it is.
    public static func commit(
        _ reservation: CreditReservation,
        account: CreditAccount,
        actor: Actor,
        negativeAllowed: Bool = false,
        now: Date
    ) throws(DomainError) -> CreditChange? {
        switch reservation.status(at: now) {
        case .committed: return nil
        case .released, .expired:
            throw DomainError(
                .conflict,
                .reservationNotHeld,
                "reservation \(reservation.id) is \(reservation.status(at: now).rawValue); reserve again",
                field: "id"
            )
        case .held: break
        }
        // However the reservation and others interleaved, spending never takes the balance below
        // zero where the app does not allow debt.
        guard negativeAllowed || account.balance.balance >= reservation.amount else {
            throw DomainError(
                .conflict,
                .insufficientCredits,
                "the balance (\(account.balance.balance)) no longer covers reservation \(reservation.id); reserve again",
                field: "id"
            )
        }
        var builder = Builder(account: account, now: now)
        builder.held -= reservation.amount
        let entry = builder.entry(
            .usage,
            amount: -reservation.amount,
            actor: actor,
            reservationId: reservation.id,
            profileId: reservation.profileId,
            reference: reservation.reference
        )
        builder.takeFromLots(
            oldBalance: builder.balance.balance + reservation.amount,
            entry: entry,
            preferring: nil,
            profileId: reservation.profileId
        )
        var settled = reservation
        settled.status = .committed
        settled.settledAt = now
        settled.entryId = entry.id
        var change = builder.finish()
        change.updatedReservation = settled
        return change
    }

    /// Gives a held reservation's credits back (work failed). Releasing a released or expired one is a no-op.
    public static func release(_ reservation: CreditReservation, account: CreditAccount, now: Date) throws(DomainError) -> CreditChange? {
        switch reservation.status(at: now) {
        case .released, .expired: return nil
        case .committed:
            throw DomainError(.conflict, .reservationNotHeld, "reservation \(reservation.id) was committed; its credits are spent", field: "id")
        case .held: break
        }
        var change = CreditChange(account: account)
        change.account.held -= reservation.amount
        var released = reservation
        released.status = .released
        released.settledAt = now
        change.updatedReservation = released
        return change
    }

    /// The credits a refund of `milliunits` (Apple's revocationPercentage: 50000 = 50 %) of a grant
    /// of `credits` takes back: the share rounded up (a refund of any part takes at least that part);
    /// nil or out-of-range shares take everything.
    public static func refundedShare(_ credits: Int64, milliunits: Int?) -> Int64 {
        guard let milliunits, (0..<100_000).contains(milliunits), credits > 0 else { return credits }
        let (product, overflow) = credits.multipliedReportingOverflow(by: Int64(milliunits))
        guard !overflow else { return credits }
        return (product + 99_999) / 100_000
    }

    /// Takes back what a refunded purchase granted: its own lot first, then the oldest others. When
    /// the balance may not go negative, only credits not held by reservations are taken and the rest
    /// becomes a debt. The purchase's entry is marked refunded.
    public static func refund(
        _ account: CreditAccount,
        amount: Int64,
        purchaseEntry: LedgerEntry?,
        purchaseLot: CreditLot?,
        reason: String,
        negativeAllowed: Bool,
        now: Date
    ) -> CreditChange {
        var builder = Builder(account: account, now: now)
        let old = builder.balance.balance
        let taken = negativeAllowed ? amount : min(amount, max(0, old - account.held))
        let entry = builder.entry(
            .refund,
            amount: -taken,
            debtChange: amount - taken,
            actor: .apple,
            reason: reason,
            productId: purchaseEntry?.productId,
            transactionId: purchaseEntry?.transactionId,
            purchaseId: purchaseEntry?.purchaseId
        )
        builder.takeFromLots(oldBalance: old, entry: entry, preferring: purchaseLot?.id, profileId: nil)
        if var lot = purchaseLot {
            if let open = builder.openLots.first(where: { $0.id == lot.id }) { lot = open }
            if let updated = builder.change.updatedLots.last(where: { $0.id == lot.id }) { lot = updated }
            lot.refundedAt = now
            builder.record(lot)
        }
        if let purchaseEntry { builder.change.statusChanges.append(.init(entryId: purchaseEntry.id, status: .refunded)) }
        return builder.finish()
    }

    /// Gives back what a refund took, when Apple reverses it: a grant (settling the debt the refund
    /// left first) and the purchase's entry completed again.
    public static func reverseRefund(
        _ account: CreditAccount,
        amount: Int64,
        purchaseEntry: LedgerEntry?,
        negativeAllowed: Bool,
        now: Date
    ) -> CreditChange {
        var change = grant(
            account,
            amount: amount,
            type: .refundReversal,
            actor: .apple,
            reason: "REFUND_REVERSED",
            productId: purchaseEntry?.productId,
            transactionId: purchaseEntry?.transactionId,
            purchaseId: purchaseEntry?.purchaseId,
            negativeAllowed: negativeAllowed,
            now: now
        )
        if let purchaseEntry { change.statusChanges.append(.init(entryId: purchaseEntry.id, status: .completed)) }
        return change
    }

    /// An operator's correction: positive grants a lot, negative spends the oldest credits (never more
    /// than are available, unless the tenant allows negative balances).
    public static func adjust(
        _ account: CreditAccount,
        amount: Int64,
        actor: Actor,
        reason: String,
        negativeAllowed: Bool,
        now: Date
    ) throws(DomainError) -> CreditChange {
        if amount > 0 {
            return grant(account, amount: amount, type: .adjustment, actor: actor, reason: reason, negativeAllowed: negativeAllowed, now: now)
        }
        guard negativeAllowed || account.available >= -amount else {
            var error = DomainError(.conflict, .insufficientCredits, "only \(account.available) credit(s) are available to remove", field: "amount")
            error.credits = account.summary
            throw error
        }
        var builder = Builder(account: account, now: now)
        let old = builder.balance.balance
        let entry = builder.entry(.adjustment, amount: amount, actor: actor, reason: reason)
        builder.takeFromLots(oldBalance: old, entry: entry, preferring: nil, profileId: nil)
        return builder.finish()
    }

    /// Accumulates one change: entries with running balances, lots taken oldest first.
    struct Builder {
        var change: CreditChange
        var balance: CreditBalance
        var held: Int64
        var openLots: [CreditLot]
        let now: Date

        init(account: CreditAccount, now: Date) {
            change = CreditChange(account: account)
            balance = account.balance
            held = account.held
            openLots = account.openLots.sorted { ($0.grantedAt, $0.id) < ($1.grantedAt, $1.id) }
            self.now = now
        }

        mutating func entry(
            _ type: LedgerEntryType,
            amount: Int64,
            debtChange: Int64 = 0,
            actor: Actor,
            reason: String? = nil,
            productId: String? = nil,
            transactionId: String? = nil,
            purchaseId: Int64? = nil,
            reservationId: Int64? = nil,
            profileId: String? = nil,
            reference: String? = nil
        ) -> LedgerEntry {
            balance.balance += amount
            balance.debt += debtChange
            balance.entries += 1
            let entry = LedgerEntry(
                id: RecordID.next(),
                tenantId: balance.tenantId,
                userId: balance.userId,
                creditType: balance.creditType,
                sequence: balance.entries,
                type: type,
                amount: amount,
                debtChange: debtChange,
                balanceAfter: balance.balance,
                actor: actor.rawValue,
                reason: reason,
                productId: productId,
                transactionId: transactionId,
                purchaseId: purchaseId,
                reservationId: reservationId,
                profileId: profileId,
                reference: reference,
                createdAt: now
            )
            change.entries.append(entry)
            return entry
        }

        /// Takes from the lots what the balance lost above zero since `oldBalance`: the preferred lot
        /// first, then oldest first.
        mutating func takeFromLots(oldBalance: Int64, entry: LedgerEntry, preferring lotId: Int64?, profileId: String?) {
            var owed = max(0, oldBalance) - max(0, balance.balance)
            var order = Array(openLots.indices)
            if let lotId, let index = openLots.firstIndex(where: { $0.id == lotId }) {
                order.removeAll { $0 == index }
                order.insert(index, at: 0)
            }
            for index in order where owed > 0 {
                let take = min(owed, openLots[index].remaining)
                guard take > 0 else { continue }
                openLots[index].remaining -= take
                if openLots[index].remaining == 0 { openLots[index].consumedAt = now }
                owed -= take
                change.lotUses.append(CreditLotUse(entryId: entry.id, lotId: openLots[index].id, amount: take, profileId: profileId, at: now))
                record(openLots[index])
            }
            openLots.removeAll { $0.remaining == 0 }
        }

        mutating func record(_ lot: CreditLot) {
            if let index = change.newLots.firstIndex(where: { $0.id == lot.id }) {
                change.newLots[index] = lot
            } else if let index = change.updatedLots.firstIndex(where: { $0.id == lot.id }) {
                change.updatedLots[index] = lot
            } else {
                change.updatedLots.append(lot)
            }
        }

        func finish() -> CreditChange {
            var change = self.change
            change.account = CreditAccount(balance: balance, held: held, openLots: openLots)
            return change
        }
    }
}

import Domain
import Foundation
import Testing

@Suite("Credit rules")
struct CreditRulesTests {
    static let now = Date(epochMilliseconds: 1_900_000_000_000)

    static func account(balance: Int64 = 0, debt: Int64 = 0, held: Int64 = 0, lots: [Int64] = []) -> CreditAccount {
        let open = lots.enumerated().map { index, remaining in
            CreditLot(
                id: Int64(index + 1),
                tenantId: "t",
                userId: "u",
                creditType: "c",
                entryId: Int64(100 + index),
                purchaseId: nil,
                amount: remaining,
                remaining: remaining,
                grantedAt: now.addingTimeInterval(Double(index))
            )
        }
        return CreditAccount(
            balance: CreditBalance(tenantId: "t", userId: "u", creditType: "c", balance: balance, debt: debt),
            held: held,
            openLots: open
        )
    }

    @Test("a tenant that allows negative balances takes the whole refund; the next grant first refills the balance")
    func negativeBalances() {
        let refunded = CreditRules.refund(
            Self.account(balance: 3, lots: [3]),
            amount: 10,
            purchaseEntry: nil,
            purchaseLot: nil,
            reason: "REFUND",
            negativeAllowed: true,
            now: Self.now
        )
        #expect(refunded.account.balance.balance == -7)
        #expect(refunded.account.balance.debt == 0)
        #expect(refunded.updatedLots.map(\.remaining) == [0])
        let granted = CreditRules.grant(refunded.account, amount: 10, type: .purchase, actor: .system, negativeAllowed: true, now: Self.now)
        #expect(granted.account.balance.balance == 3)
        #expect(granted.newLots.map(\.remaining) == [3], "only what lifts the balance above zero is spendable")
        #expect(granted.lotUses.map(\.amount) == [7])
    }

    @Test("clamped refunds leave held credits alone and record the rest as a debt, settled by the next grant in its own entry")
    func clampedRefunds() {
        let refunded = CreditRules.refund(
            Self.account(balance: 5, held: 2, lots: [5]),
            amount: 10,
            purchaseEntry: nil,
            purchaseLot: nil,
            reason: "REFUND",
            negativeAllowed: false,
            now: Self.now
        )
        #expect(refunded.entries.map(\.amount) == [-3])
        #expect(refunded.entries.map(\.debtChange) == [7])
        #expect(refunded.account.balance.balance == 2, "the 2 held credits can still be committed")
        let granted = CreditRules.grant(refunded.account, amount: 5, type: .purchase, actor: .system, negativeAllowed: false, now: Self.now)
        #expect(granted.entries.map(\.type) == [.purchase, .debtSettlement])
        #expect(granted.entries.map(\.amount) == [5, -5])
        #expect(granted.account.balance.debt == 2)
        #expect(granted.entries.map(\.sequence) == [2, 3], "positions continue after the refund entry")
    }

    @Test("usage spends the oldest lots first; a refund prefers its own lot")
    func fifo() throws {
        let reservation = try CreditRules.reserve(
            Self.account(balance: 6, lots: [2, 4]),
            amount: 3,
            reference: nil,
            profileId: "p",
            duration: 60,
            now: Self.now
        )
        let held = try #require(reservation.newReservation)
        let committed = try #require(try CreditRules.commit(held, account: reservation.account, actor: .user("u"), now: Self.now))
        #expect(committed.lotUses.map(\.lotId) == [1, 2])
        #expect(committed.lotUses.map(\.amount) == [2, 1])
        #expect(committed.lotUses.allSatisfy { $0.profileId == "p" })
        let lot = committed.account.openLots[0]
        let refund = CreditRules.refund(
            committed.account,
            amount: 1,
            purchaseEntry: nil,
            purchaseLot: lot,
            reason: "REFUND",
            negativeAllowed: false,
            now: Self.now
        )
        #expect(refund.updatedLots.first?.id == lot.id)
        #expect(refund.updatedLots.first?.refundedAt == Self.now)
        #expect(throws: DomainError.self) {
            try CreditRules.reserve(Self.account(balance: 1), amount: 2, reference: nil, profileId: nil, duration: 60, now: Self.now)
        }
    }

    @Test("the ledger check names every disagreement")
    func ledgerCheck() {
        let good = LedgerTotals(
            userId: "u",
            creditType: "c",
            balance: 4,
            debt: 1,
            ledgerAmount: 4,
            ledgerDebt: 1,
            lotsRemaining: 4,
            inconsistentLots: 0
        )
        #expect(good.problems(negativeAllowed: false).isEmpty)
        let bad = LedgerTotals(
            userId: "u",
            creditType: "c",
            balance: -1,
            debt: 1,
            ledgerAmount: 4,
            ledgerDebt: 0,
            lotsRemaining: 2,
            inconsistentLots: 1
        )
        #expect(bad.problems(negativeAllowed: false).count == 5)
        #expect(bad.problems(negativeAllowed: true).count == 4)
    }

    @Test("credits.changed events name the account as their subject, so that one account's events arrive in order")
    func events() {
        let change = CreditRules.grant(Self.account(), amount: 2, type: .bonus, actor: .system, negativeAllowed: false, now: Self.now)
        let event = change.event(reason: .bonus)
        #expect(event?.type == .creditsChanged)
        #expect(event?.data["balance"] == "2")
        #expect(event?.subject == "credits:c:u")
    }
}

@Suite("Text: how callers' free text is trimmed and measured")
struct TextTests {
    @Test("white space is Unicode's White_Space plus U+001C-U+001F; lengths are code points")
    func trimAndLength() {
        #expect(Text.trimmed("  a b\n") == "a b")
        #expect(Text.trimmed("\u{1C}\u{2003}\u{3000}x\u{1F}\u{85}") == "x")
        #expect(Text.trimmed(" \u{A0}\t\u{2028}") == "")
        #expect(Text.trimmed("\u{200B}") == "\u{200B}", "a zero-width space is not white space")
        #expect(Text.length("é") == 1 && Text.length("e\u{301}") == 2, "combining marks count as code points")
        #expect(Text.length("\r\n") == 2 && "\r\n".count == 1)
        #expect(Text.length("👍🏽") == 2)
    }

    @Test("a prorated refund's share of a pack: Apple's milliunits, rounded up; no share, 100 % or nonsense take the whole grant")
    func refundedShare() {
        #expect(CreditRules.refundedShare(50, milliunits: 50_000) == 25)
        #expect(CreditRules.refundedShare(50, milliunits: 33_333) == 17)
        #expect(CreditRules.refundedShare(50, milliunits: 1) == 1, "any refunded part takes at least one credit")
        #expect(CreditRules.refundedShare(50, milliunits: 0) == 0)
        #expect(CreditRules.refundedShare(50, milliunits: nil) == 50)
        #expect(CreditRules.refundedShare(50, milliunits: 100_000) == 50)
        #expect(CreditRules.refundedShare(50, milliunits: 250_000) == 50 && CreditRules.refundedShare(50, milliunits: -5) == 50)
        #expect(CreditRules.refundedShare(Int64.max, milliunits: 99_999) == Int64.max, "an overflow takes the whole grant, never traps")
    }
}

import Domain
import Foundation
import Testing

@Suite("Entitlements from grants")
struct GrantRulesTests {
    let now = Date(epochMilliseconds: 1_900_000_000_000)
    let day: TimeInterval = 86_400

    func grant(
        _ id: Int64,
        _ entitlement: String = "premium",
        source: GrantSource = .unlock,
        bought: TimeInterval = 0,
        until: TimeInterval? = nil,
        days: Int? = nil,
        state: GrantState = .active
    ) -> EntitlementGrant {
        EntitlementGrant(
            id: id,
            tenantId: "t",
            userId: "u",
            entitlement: entitlement,
            source: source,
            reference: "r\(id)",
            productId: "p",
            purchasedAt: now.addingTimeInterval(bought),
            from: now.addingTimeInterval(bought),
            until: until.map { now.addingTimeInterval($0) },
            durationDays: days,
            state: state
        )
    }

    @Test("one source ending takes only its grant: a lifetime unlock keeps premium after the subscription's grant expires")
    func sourcesAreIndependent() {
        let subscription = grant(1, source: .appStoreSubscription, bought: -10 * day, until: -day)
        let unlock = grant(2, bought: -5 * day)
        let held = GrantRules.entitlements([subscription, unlock], now: now)
        #expect(held.count == 1)
        #expect(held[0].active && held[0].expiresAt == nil)
        #expect(held[0].grants.map(\.id) == [2, 1], "live grants first")
        let withoutUnlock = GrantRules.entitlements([subscription], now: now)
        #expect(!withoutUnlock[0].active && withoutUnlock[0].expiresAt == now.addingTimeInterval(-day))
        var refunded = unlock
        refunded.state = .ended
        #expect(!GrantRules.entitlements([subscription, refunded], now: now)[0].active)
    }

    @Test("passes chain in purchase order; an ended pass leaves the chain and the later ones move up")
    func chain() {
        let passes = [
            grant(3, "club", bought: 10 * day, days: 30), grant(1, "club", bought: 0, days: 30), grant(2, "club", bought: 50 * day, days: 7),
        ]
        let chained = GrantRules.chain(passes)
        #expect(chained.map(\.id) == [1, 3, 2])
        #expect(chained.map(\.until) == [now.addingTimeInterval(30 * day), now.addingTimeInterval(60 * day), now.addingTimeInterval(67 * day)])
        var ended = chained[0]
        ended.state = .ended
        let rechained = GrantRules.chain([ended] + chained.dropFirst())
        #expect(rechained[0] == ended, "an ended grant is left as it was")
        #expect(rechained[1].from == now.addingTimeInterval(10 * day) && rechained[1].until == now.addingTimeInterval(40 * day))
        #expect(
            rechained[2].from == now.addingTimeInterval(50 * day) && rechained[2].until == now.addingTimeInterval(57 * day),
            "a gap after the refund is not filled"
        )
        let held = GrantRules.entitlements(rechained, now: now.addingTimeInterval(20 * day))
        #expect(held[0].active && held[0].expiresAt == now.addingTimeInterval(57 * day))
    }
}

import Domain
import Foundation
import Testing

/// The subscription planner on its own: what facts write, decided from a scene, with nothing saved.
@Suite("Subscription changes: attach, refuse someone else's, end the replaced one, keep memberships current")
struct SubscriptionChangesTests {
    typealias R = SubscriptionRulesTests

    static func plan(_ facts: SubscriptionFacts, _ scene: SubscriptionScene, user: String?, day: Double = 1) -> SubscriptionChanges.Plan {
        SubscriptionChanges.plan(
            facts,
            scene: scene,
            tenantId: "ftc",
            product: R.info,
            userId: user,
            source: "test",
            actor: user.map { .user($0) } ?? .apple,
            now: R.at(day)
        )
    }

    @Test("a user's first claim attaches the record, makes it the membership the account uses, audits and tells the backend")
    func firstClaim() throws {
        let plan = Self.plan(
            R.period(0, signed: 0, renewal: .init(autoRenew: true)),
            SubscriptionScene(current: nil, replaced: nil, memberships: []),
            user: "alice"
        )
        guard case .applied(let record, stale: false) = plan.outcome else {
            Issue.record("applied: \(plan.outcome)")
            return
        }
        #expect(record.userId == "alice" && record.originalTransactionId == "1000")
        #expect(plan.change.subscriptions == [record])
        #expect(plan.change.memberships.map(\.userId) == ["alice"] && plan.change.memberships.first?.originalTransactionId == "1000")
        #expect(plan.inUse(record, by: "alice") && !plan.inUse(record, by: "bob"))
        #expect(plan.audit.map(\.action) == [.subscriptionAttached])
        #expect(plan.events.count == 1 && plan.change.cheats.isEmpty)
    }

    @Test("a claim of someone else's subscription changes nothing but records the attempt")
    func someoneElses() throws {
        var owned = try R.apply(R.period(0, signed: 0), to: nil, at: 0).subscription
        owned.userId = "alice"
        let plan = Self.plan(R.period(1, signed: 30), SubscriptionScene(current: owned, replaced: nil, memberships: []), user: "mallory", day: 30)
        #expect(plan.outcome == .ownedByOther(owned))
        #expect(plan.change.subscriptions.isEmpty && plan.change.memberships.isEmpty && plan.events.isEmpty)
        #expect(plan.change.cheats.map(\.userId) == ["mallory"] && plan.change.cheats.first?.ownerUserId == "alice")
        #expect(plan.audit.map(\.action) == [.subscriptionCheat])
    }

    @Test("a notification about a subscription nobody claimed keeps the record ownerless; stale facts change nothing")
    func notifications() throws {
        let first = Self.plan(R.period(0, signed: 0), SubscriptionScene(current: nil, replaced: nil, memberships: []), user: nil)
        guard case .applied(let record, stale: false) = first.outcome else {
            Issue.record("applied")
            return
        }
        #expect(record.userId == nil && first.change.memberships.isEmpty && first.audit.isEmpty)
        let renewed = try R.apply(R.period(1, signed: 30), to: record, at: 30).subscription
        let stale = Self.plan(R.period(0, signed: 2), SubscriptionScene(current: renewed, replaced: nil, memberships: []), user: nil, day: 31)
        #expect(stale.outcome == .applied(renewed, stale: true))
        #expect(stale.change.isEmpty && stale.events.isEmpty)
    }

    @Test("a successor ends the subscription it replaces, takes its owner and moves the owner's membership")
    func replacement() throws {
        var old = try R.apply(R.period(0, signed: 0), to: nil, at: 0).subscription
        old.originalTransactionId = "old"
        old.userId = "alice"
        let membership = Membership.apple(old, userId: "alice", now: R.at(0))
        var facts = R.period(0, signed: 5)
        facts.replaces = "old"
        let plan = Self.plan(facts, SubscriptionScene(current: nil, replaced: old, memberships: [membership]), user: nil, day: 5)
        guard case .applied(let successor, _) = plan.outcome else {
            Issue.record("applied")
            return
        }
        #expect(successor.userId == "alice", "the old one's owner owns the successor")
        let ended = try #require(plan.change.subscriptions.first { $0.originalTransactionId == "old" })
        #expect(ended.upgraded && ended.autoRenew == false)
        #expect(plan.after.membership(userId: "alice")?.originalTransactionId == "1000", "the membership moved to the successor")
        #expect(plan.audit.map(\.action) == [.subscriptionReplaced, .subscriptionAttached])
        #expect(plan.events.count == 2, "the replaced one's event and the successor's")
    }
}

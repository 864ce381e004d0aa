import Domain
import Foundation
import Testing

@Suite("Subscription rules: state from facts, never backwards; the link policy table")
struct SubscriptionRulesTests {
    static let t0 = Date(epochMilliseconds: 1_900_000_000_000)
    static let day: TimeInterval = 86_400
    static let product = "com.ft.ftchinese.mobile.subscription.member.monthly"

    static func info(_ id: String) -> SubscriptionProductInfo? {
        id == product ? SubscriptionProductInfo(entitlement: "premium", tier: "standard", cycle: "month") : nil
    }

    /// Facts of a period `n` (0 = the first purchase), signed at `signed` (days after t0).
    static func period(
        _ n: Int,
        signed: Double,
        type: NotificationType? = nil,
        subtype: String? = nil,
        revoked: Bool = false,
        renewal: SubscriptionFacts.RenewalFacts? = nil
    ) -> SubscriptionFacts {
        let start = t0.addingTimeInterval(Double(n) * 30 * day)
        return SubscriptionFacts(
            originalTransactionId: "1000",
            environment: .sandbox,
            signedAt: t0.addingTimeInterval(signed * day),
            transaction: .init(
                transactionId: String(1000 + n),
                productId: product,
                purchasedAt: start,
                expiresAt: start.addingTimeInterval(30 * day),
                revokedAt: revoked ? t0.addingTimeInterval(signed * day) : nil
            ),
            renewal: renewal,
            source: "test",
            notificationType: type,
            notificationSubtype: subtype
        )
    }

    static func renewalOnly(
        signed: Double,
        type: NotificationType,
        subtype: String? = nil,
        _ renewal: SubscriptionFacts.RenewalFacts
    ) -> SubscriptionFacts {
        SubscriptionFacts(
            originalTransactionId: "1000",
            environment: .sandbox,
            signedAt: t0.addingTimeInterval(signed * day),
            transaction: nil,
            renewal: renewal,
            source: "test",
            notificationType: type,
            notificationSubtype: subtype
        )
    }

    static func apply(_ facts: SubscriptionFacts, to s: Subscription?, at day: Double) throws -> SubscriptionUpdate {
        try #require(SubscriptionRules.apply(facts, to: s, tenantId: "ftc", product: info, now: t0.addingTimeInterval(day * Self.day)))
    }

    static func at(_ d: Double) -> Date { t0.addingTimeInterval(d * day) }

    @Test("every notification type moves the state as specified, with expiry and grace following the clock")
    func notificationTypes() throws {
        var s = try Self.apply(Self.period(0, signed: 0, type: .subscribed, renewal: .init(autoRenew: true)), to: nil, at: 0).subscription
        #expect(s.state(at: Self.at(1)) == .active)
        #expect((s.tier, s.cycle, s.entitlement) == ("standard", "month", "premium"))
        #expect(s.state(at: Self.at(31)) == .expired, "without news, the period ends by the clock")

        s = try Self.apply(Self.period(1, signed: 30, type: .didRenew), to: s, at: 30).subscription
        #expect(s.latestTransactionId == "1001")
        #expect(s.state(at: Self.at(45)) == .active)

        s = try Self.apply(
            Self.renewalOnly(signed: 40, type: .didChangeRenewalStatus, subtype: "AUTO_RENEW_DISABLED", .init(autoRenew: false)),
            to: s,
            at: 40
        ).subscription
        #expect(s.autoRenew == false)
        s = try Self.apply(
            Self.renewalOnly(signed: 41, type: .didChangeRenewalStatus, subtype: "AUTO_RENEW_ENABLED", .init(autoRenew: true)),
            to: s,
            at: 41
        ).subscription
        #expect(s.autoRenew == true)
        s = try Self.apply(
            Self.renewalOnly(
                signed: 42,
                type: .didChangeRenewalPref,
                subtype: "DOWNGRADE",
                .init(autoRenewProductId: "com.ft.ftchinese.mobile.subscription.member")
            ),
            to: s,
            at: 42
        ).subscription
        #expect(s.autoRenewProductId == "com.ft.ftchinese.mobile.subscription.member")
        s = try Self.apply(Self.renewalOnly(signed: 43, type: .priceIncrease, subtype: "PENDING", .init(priceIncreaseStatus: 0)), to: s, at: 43)
            .subscription
        #expect(s.priceIncreaseStatus == 0)

        // The renewal fails at day 60: billing grace for 6 days, then billing retry.
        s = try Self.apply(
            Self.renewalOnly(
                signed: 60,
                type: .didFailToRenew,
                subtype: "GRACE_PERIOD",
                .init(inBillingRetry: true, gracePeriodExpiresAt: Self.at(66))
            ),
            to: s,
            at: 60
        ).subscription
        #expect(s.state(at: Self.at(61)) == .gracePeriod)
        #expect(s.accessUntil(at: Self.at(61)) == Self.at(66))
        #expect(s.state(at: Self.at(67)) == .billingRetry, "grace ends by the clock")
        let graceExpired = try Self.apply(
            Self.renewalOnly(signed: 62, type: .gracePeriodExpired, .init(inBillingRetry: true, gracePeriodExpiresAt: Self.at(66))),
            to: s,
            at: 62
        ).subscription
        #expect(graceExpired.state(at: Self.at(62.5)) == .billingRetry, "GRACE_PERIOD_EXPIRED ends the grace whatever the clock says")

        // DID_FAIL_TO_RENEW without grace: straight to billing retry.
        let noGrace = try Self.apply(Self.renewalOnly(signed: 60, type: .didFailToRenew, .init(inBillingRetry: true)), to: s, at: 60).subscription
        #expect(noGrace.state(at: Self.at(61)) == .billingRetry)
        #expect(!noGrace.state(at: Self.at(61)).entitles)

        // Apple recovers the payment: a new period ends the retry.
        let recovered = try Self.apply(
            Self.period(2, signed: 63, type: .didRenew, subtype: "BILLING_RECOVERY", renewal: .init(inBillingRetry: false)),
            to: s,
            at: 63
        ).subscription
        #expect(recovered.state(at: Self.at(64)) == .active)

        let expired = try Self.apply(
            Self.renewalOnly(signed: 70, type: .expired, subtype: "BILLING_RETRY", .init(autoRenew: false, expirationIntent: 2)),
            to: s,
            at: 70
        ).subscription
        #expect(expired.state(at: Self.at(70)) == .expired)
        #expect(expired.expirationIntent == 2)

        // RENEWAL_EXTENDED moves the expiry of the current transaction.
        var extended = Self.period(1, signed: 64, type: .renewalExtended)
        extended.transaction?.expiresAt = Self.at(67)
        let afterExtension = try Self.apply(extended, to: s, at: 64).subscription
        #expect(afterExtension.expiresAt == Self.at(67))
        #expect(afterExtension.state(at: Self.at(65)) == .active)

        // OFFER_REDEEMED with a new transaction is a new period.
        let offer = try Self.apply(Self.period(2, signed: 65, type: .offerRedeemed), to: s, at: 65).subscription
        #expect(offer.latestTransactionId == "1002")
    }

    @Test("REFUND and REVOKE revoke the entitlement at once; REFUND_REVERSED gives it back")
    func refunds() throws {
        let s = try Self.apply(Self.period(0, signed: 0, type: .subscribed), to: nil, at: 0).subscription
        for type in [NotificationType.refund, .revoke] {
            let revoked = try Self.apply(Self.period(0, signed: 5, type: type, revoked: true), to: s, at: 5).subscription
            #expect(revoked.state(at: Self.at(6)) == .revoked)
            #expect(!revoked.state(at: Self.at(6)).entitles)
            let reversed = try Self.apply(Self.period(0, signed: 7, type: .refundReversed), to: revoked, at: 7).subscription
            #expect(reversed.state(at: Self.at(8)) == .active)
        }
        var upgraded = Self.period(0, signed: 3, type: .didChangeRenewalPref, subtype: "UPGRADE")
        upgraded.transaction?.upgraded = true
        #expect(try Self.apply(upgraded, to: s, at: 3).subscription.state(at: Self.at(4)) == .upgraded)
    }

    @Test("out of order: older facts never move a record backwards; an older period never replaces a newer one")
    func outOfOrder() throws {
        let subscribed = Self.period(0, signed: 0, type: .subscribed)
        let renewed = Self.period(1, signed: 30, type: .didRenew)
        let expiredEarly = Self.renewalOnly(signed: 29, type: .expired, .init(autoRenew: false))
        let refundOfFirst = Self.period(0, signed: 10, type: .refund, revoked: true)
        var s = try Self.apply(renewed, to: nil, at: 31).subscription
        for late in [subscribed, expiredEarly, refundOfFirst] {
            let update = try Self.apply(late, to: s, at: 31)
            #expect(update.stale)
            #expect(update.subscription == s)
            s = update.subscription
        }
        #expect(s.latestTransactionId == "1001")
        #expect(s.state(at: Self.at(40)) == .active)
        // Same signed date, older period (a receipt listing history): the newer period stays.
        let history = try Self.apply(Self.period(0, signed: 30), to: s, at: 31)
        #expect(history.subscription.latestTransactionId == "1001")
        #expect(!history.changed)
    }

    // MARK: link policy

    static func subscription(owner: String? = nil, expiresIn days: Double) -> Subscription {
        Subscription(
            tenantId: "ftc",
            originalTransactionId: "1000",
            environment: .sandbox,
            productId: product,
            entitlement: "premium",
            tier: "standard",
            cycle: "month",
            latestTransactionId: "1000",
            purchasedAt: at(-1),
            expiresAt: at(days),
            autoRenew: true,
            userId: owner,
            signedAt: at(-1),
            createdAt: at(-1),
            updatedAt: at(-1)
        )
    }

    static func membership(_ user: String, apple otid: String? = nil, payMethod: String? = "alipay", expiresIn days: Double) -> Membership {
        Membership(
            tenantId: "ftc",
            userId: user,
            originalTransactionId: otid,
            payMethod: otid == nil ? payMethod : "apple",
            tier: "standard",
            cycle: "year",
            expiresAt: at(days),
            autoRenew: false,
            updatedAt: at(-1)
        )
    }

    enum Side: String, CaseIterable { case none, notExpired, expired }

    static func decide(account: Side, apple: Side, force: Bool = false) -> LinkPolicy.Decision {
        let accountMembership: Membership? =
            switch account {
            case .none: nil
            case .notExpired: membership("me", expiresIn: 100)
            case .expired: membership("me", expiresIn: -10)
            }
        // The Apple side has a membership: another account made one from this subscription.
        let appleMembership: Membership? =
            switch apple {
            case .none: nil
            case .notExpired: membership("other", apple: "1000", expiresIn: 20)
            case .expired: membership("other", apple: "1000", expiresIn: -5)
            }
        let expiry: Double = apple == .expired ? -5 : 20
        return LinkPolicy.decide(
            userId: "me",
            subscription: subscription(owner: apple == .none ? nil : "other", expiresIn: expiry),
            accountMembership: accountMembership,
            appleSideMembership: appleMembership,
            force: force,
            now: at(0)
        )
    }

    static func refusalCode(_ decision: LinkPolicy.Decision) -> String? {
        if case .refuse(let refusal) = decision { return refusal.code.rawValue }
        return nil
    }

    @Test(
        "the seed's table, cell by cell: only an empty Apple side with an empty or expired account links",
        arguments: [
            (Side.none, Side.none, nil), (.none, .notExpired, "linked_to_other_account"), (.none, .expired, "linked_to_other_account"),
            (.notExpired, .none, "has_valid_non_iap"), (.notExpired, .notExpired, "linked_to_other_account"),
            (.notExpired, .expired, "linked_to_other_account"),
            (.expired, .none, nil), (.expired, .notExpired, "linked_to_other_account"), (.expired, .expired, "linked_to_other_account"),
        ] as [(Side, Side, String?)]
    )
    func table(account: Side, apple: Side, refused: String?) {
        let decision = Self.decide(account: account, apple: apple)
        #expect(Self.refusalCode(decision) == refused, "\(account) × \(apple): \(decision)")
        if refused == "linked_to_other_account", case .refuse(let refusal) = decision {
            #expect(refusal.cheat, "a claim of another account's subscription is a cheat attempt")
        }
        if refused == nil, case .link(let m, let initial) = decision {
            #expect(m.originalTransactionId == "1000" && m.payMethod == "apple" && m.userId == "me")
            #expect(initial)
        }
    }

    @Test("a membership without a pay method yields to a subscription that expires later, not to one that expires sooner")
    func noPayMethod() {
        for (appleExpiry, linked) in [(150.0, true), (50.0, false)] {
            let decision = LinkPolicy.decide(
                userId: "me",
                subscription: Self.subscription(expiresIn: appleExpiry),
                accountMembership: Self.membership("me", payMethod: nil, expiresIn: 100),
                appleSideMembership: nil,
                force: false,
                now: Self.at(0)
            )
            #expect((Self.refusalCode(decision) == nil) == linked, "\(appleExpiry): \(decision)")
            if !linked { #expect(Self.refusalCode(decision) == "has_valid_non_iap") }
        }
        // With a known pay method the valid membership is never overridden.
        let paid = LinkPolicy.decide(
            userId: "me",
            subscription: Self.subscription(expiresIn: 150),
            accountMembership: Self.membership("me", expiresIn: 100),
            appleSideMembership: nil,
            force: false,
            now: Self.at(0)
        )
        #expect(Self.refusalCode(paid) == "has_valid_non_iap")
    }

    @Test("an account using another Apple subscription switches only with force; the same one syncs")
    func forceAndSync() {
        let other = Self.membership("me", apple: "2000", expiresIn: 10)
        let mine = Self.subscription(owner: "me", expiresIn: 20)
        let refused = LinkPolicy.decide(
            userId: "me",
            subscription: mine,
            accountMembership: other,
            appleSideMembership: nil,
            force: false,
            now: Self.at(0)
        )
        #expect(Self.refusalCode(refused) == "linked_to_other_iap")
        if case .refuse(let r) = refused { #expect(!r.cheat) }
        let forced = LinkPolicy.decide(
            userId: "me",
            subscription: mine,
            accountMembership: other,
            appleSideMembership: nil,
            force: true,
            now: Self.at(0)
        )
        guard case .link(let m, let initial) = forced else {
            Issue.record("force must switch: \(forced)")
            return
        }
        #expect(m.originalTransactionId == "1000" && !initial)
        let inUse = Membership.apple(mine, userId: "me", now: Self.at(0))
        let synced = LinkPolicy.decide(
            userId: "me",
            subscription: mine,
            accountMembership: inUse,
            appleSideMembership: inUse,
            force: false,
            now: Self.at(0)
        )
        guard case .sync(let same) = synced else {
            Issue.record("the same membership syncs: \(synced)")
            return
        }
        #expect(same.expiresAt == mine.expiresAt)
    }
}

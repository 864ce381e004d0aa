import Foundation

/// The membership an account uses: from one of its Apple subscriptions (the one `inUse`), or paid
/// elsewhere (recorded by the app's backend or an operator, so that the link policy can see it).
public struct Membership: Hashable, Sendable {
    public var tenantId: String
    public var userId: String
    /// The Apple subscription it comes from; nil for a membership paid elsewhere.
    public var originalTransactionId: String?
    /// How it was paid: `apple`, or what the app's backend says (`alipay`, `wechat`, `stripe`, …);
    /// nil when nobody knows (created by hand).
    public var payMethod: String?
    public var tier: String?
    public var cycle: String?
    public var expiresAt: Date?
    public var autoRenew: Bool
    public var updatedAt: Date

    public init(
        tenantId: String,
        userId: String,
        originalTransactionId: String?,
        payMethod: String?,
        tier: String?,
        cycle: String?,
        expiresAt: Date?,
        autoRenew: Bool,
        updatedAt: Date
    ) {
        self.tenantId = tenantId
        self.userId = userId
        self.originalTransactionId = originalTransactionId
        self.payMethod = payMethod
        self.tier = tier
        self.cycle = cycle
        self.expiresAt = expiresAt
        self.autoRenew = autoRenew
        self.updatedAt = updatedAt
    }

    public var isApple: Bool { originalTransactionId != nil }

    public func isExpired(at now: Date) -> Bool { (expiresAt ?? .distantPast) <= now }

    /// The membership an Apple subscription gives its account.
    public static func apple(_ s: Subscription, userId: String, now: Date) -> Membership {
        Membership(
            tenantId: s.tenantId,
            userId: userId,
            originalTransactionId: s.originalTransactionId,
            payMethod: s.store.payMethod,
            tier: s.tier,
            cycle: s.cycle,
            expiresAt: s.state(at: now).entitles ? s.accessUntil(at: now) : s.expiresAt,
            autoRenew: s.autoRenew ?? false,
            updatedAt: now
        )
    }
}

/// A refused attempt to take an Apple subscription that belongs to another account.
public struct SubscriptionCheat: Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var userId: String
    public var originalTransactionId: String
    /// The account that owns the subscription.
    public var ownerUserId: String?
    /// Where the claim came from: `link`, `verify_purchase`, `verify_receipt`.
    public var source: String
    public var at: Date

    public init(id: Int64, tenantId: String, userId: String, originalTransactionId: String, ownerUserId: String?, source: String, at: Date) {
        self.id = id
        self.tenantId = tenantId
        self.userId = userId
        self.originalTransactionId = originalTransactionId
        self.ownerUserId = ownerUserId
        self.source = source
        self.at = at
    }
}

/// What an unlink left behind: who, which subscription, and the membership it removed (JSON).
public struct UnlinkArchive: Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var userId: String
    public var originalTransactionId: String
    public var actor: String
    /// The removed membership as JSON, when the subscription was the one in use.
    public var membershipSnapshot: String?
    public var at: Date

    public init(id: Int64, tenantId: String, userId: String, originalTransactionId: String, actor: String, membershipSnapshot: String?, at: Date) {
        self.id = id
        self.tenantId = tenantId
        self.userId = userId
        self.originalTransactionId = originalTransactionId
        self.actor = actor
        self.membershipSnapshot = membershipSnapshot
        self.at = at
    }
}

/// FT Chinese's link policy, for any tenant: an Apple subscription belongs to at most one
/// account; an account may hold several and uses one. Pure.
///
/// | account \ Apple side | none | not expired | expired |
/// |---|---|---|---|
/// | none | link | refused | refused |
/// | not expired | refused (¹) | refused | refused |
/// | expired | link | refused | refused |
///
/// "Apple side" is a membership already made from the subscription for another account; (¹) a
/// membership without a pay method is overridden when the subscription expires later, and an
/// account already using another Apple subscription switches to this one with `force`.
public enum LinkPolicy {
    public enum Decision: Hashable, Sendable {
        /// Link: the account now owns the subscription and uses it (`initial` when it owned nothing of it before).
        case link(Membership, initial: Bool)
        /// Already linked and in use: the membership is brought up to date with the subscription.
        case sync(Membership)
        case refuse(Refusal)
    }

    public struct Refusal: Hashable, Sendable {
        public var code: ErrorCode
        public var field: String
        public var message: String
        /// A claim of someone else's subscription: recorded as a cheat attempt.
        public var cheat: Bool
    }

    /// - Parameters:
    ///   - subscription: the Apple subscription (its `userId` is its owner, if any).
    ///   - accountMembership: the membership the account uses now.
    ///   - appleSideMembership: the membership already made from this subscription, whoever holds it.
    public static func decide(
        userId: String,
        subscription: Subscription,
        accountMembership: Membership?,
        appleSideMembership: Membership?,
        force: Bool,
        now: Date
    ) -> Decision {
        if let owner = subscription.userId, owner != userId {
            return .refuse(
                Refusal(
                    code: .linkedToOtherAccount,
                    field: "originalTransactionId",
                    message: "this Apple subscription is already linked to another account",
                    cheat: true
                )
            )
        }
        let linked = Membership.apple(subscription, userId: userId, now: now)
        if accountMembership == appleSideMembership {
            // Both clean (first link), or the account already uses this subscription (sync).
            guard let current = accountMembership else { return .link(linked, initial: subscription.userId == nil) }
            return .sync(linked.with(updatedAt: current == linked.with(updatedAt: current.updatedAt) ? current.updatedAt : now))
        }
        if let appleSide = appleSideMembership, appleSide.userId != userId {
            return .refuse(
                Refusal(
                    code: .linkedToOtherAccount,
                    field: "originalTransactionId",
                    message: "this Apple subscription already gives another account its membership",
                    cheat: true
                )
            )
        }
        guard let current = accountMembership else { return .link(linked, initial: subscription.userId == nil) }
        if current.isApple {
            guard force else {
                return .refuse(
                    Refusal(
                        code: .linkedToOtherIAP,
                        field: "userId",
                        message: "the account already uses another Apple subscription; send force to switch",
                        cheat: false
                    )
                )
            }
            return .link(linked, initial: subscription.userId == nil)
        }
        if current.isExpired(at: now) { return .link(linked, initial: subscription.userId == nil) }
        if current.payMethod == nil, let theirs = current.expiresAt, let ours = linked.expiresAt, ours > theirs {
            return .link(linked, initial: subscription.userId == nil)
        }
        return .refuse(
            Refusal(
                code: .hasValidNonIAP,
                field: "userId",
                message: "the account already has a valid membership paid outside the App Store",
                cheat: false
            )
        )
    }
}

extension Membership {
    func with(updatedAt: Date) -> Membership {
        var copy = self
        copy.updatedAt = updatedAt
        return copy
    }
}

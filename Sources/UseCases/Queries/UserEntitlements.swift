import Domain
import Foundation

/// `GET /api/entitlements`: what a user holds now and why. Every source becomes grants: the
/// subscriptions the user owns, a membership paid elsewhere, unlocks and passes; entitlements are
/// derived from the live ones, so one source ending takes away only its own grant.
public struct UserEntitlements: Sendable {
    public struct Answer: Sendable {
        /// Every subscription the user owns (whether the account uses it as its membership).
        public var subscriptions: [ListedSubscription]
        public var membership: Membership?
        /// Each entitlement with its grants, derived at `now`.
        public var entitlements: [HeldEntitlement]
        /// Premium: a subscription that entitles, a live membership paid elsewhere, or a live grant of
        /// `premium` or of an entitlement one of the app's subscription products grants.
        public var isPremium: Bool
    }

    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// - Parameter purchases: when given, the transactions waiting for the user are read in the same
    ///   read and claimed first (the user's "next call"; see ``Claims/readClaimingWaiting(runtime:userId:_:)``).
    public func callAsFunction(runtime: TenantRuntime, userId: String, claimingWaitingWith purchases: Claims? = nil) async throws -> Answer {
        let tenantId = runtime.id
        // One statement: on PostgreSQL one round trip for the whole answer.
        let read: @Sendable (any StoreSession, [String]) throws -> EntitlementSources = { tx, tokens in
            try tx.userState.entitlementSources(tenantId: tenantId, userId: userId, waitingTokens: tokens)
        }
        let sources =
            if let purchases {
                try await purchases.readClaimingWaiting(runtime: runtime, userId: userId) { tx, tokens in
                    let sources = try read(tx, tokens)
                    return (!sources.waiting.isEmpty, sources)
                }
            } else {
                try await store.readStatement { tx in try read(tx, []) }
            }
        let (owned, membership, stored) = (sources.owned, sources.membership, sources.grants)
        let now = clock.now()
        let grants =
            owned.map { EntitlementGrant.subscription($0, userId: userId, now: now) }
            + [membership.flatMap { .membership($0, now: now) }].compactMap { $0 }
            + stored
        let held = GrantRules.entitlements(grants, now: now)
        let premiumNames = Set(
            runtime.tenant.products.compactMap { $0.kind == .subscription ? ($0.entitlement ?? GrantRules.premium) : nil } + [GrantRules.premium]
        )
        let isPremium =
            owned.contains { $0.state(at: now).entitles }
            || held.contains { $0.active && premiumNames.contains($0.entitlement) }
        let listed = owned.map { ListedSubscription(subscription: $0, inUse: membership?.originalTransactionId == $0.originalTransactionId) }
        return Answer(subscriptions: listed, membership: membership, entitlements: held, isPremium: isPremium)
    }
}

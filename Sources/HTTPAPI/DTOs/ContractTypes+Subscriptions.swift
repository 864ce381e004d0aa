import AppleSignedData
import Domain
import Foundation
import UseCases

/// A subscription as Berth's own routes show it.
struct SubscriptionDTO: Codable {
    var originalTransactionId: String
    var productId: String
    var entitlement: String
    var tier: String?
    var cycle: String?
    /// `Production` or `Sandbox`.
    var environment: StoreEnvironment
    /// `active`, `grace_period`, `billing_retry`, `expired`, `revoked`, `upgraded` (at the time of the answer).
    var state: String
    var latestTransactionId: String
    var purchasedAt: APITime
    var expiresAt: APITime?
    var gracePeriodExpiresAt: APITime?
    var autoRenew: Bool?
    var autoRenewProductId: String?
    var revokedAt: APITime?
    /// Whether the account uses it as its membership.
    var inUse: Bool
    var userId: String?
    var updatedAt: APITime
    /// The win-back offers Apple says the customer may redeem now (App Store; left out when none).
    var eligibleWinBackOfferIds: [String]?
    /// Present (true) when the user has it through Family Sharing, not by paying.
    var familyShared: Bool?

    init(_ s: Subscription, inUse: Bool, now: Date) {
        eligibleWinBackOfferIds = s.eligibleWinBackOfferIds.isEmpty ? nil : s.eligibleWinBackOfferIds
        familyShared = s.familyShared ? true : nil
        originalTransactionId = s.originalTransactionId
        productId = s.productId
        entitlement = s.entitlement
        tier = s.tier
        cycle = s.cycle
        environment = s.environment
        state = s.state(at: now).rawValue
        latestTransactionId = s.latestTransactionId
        purchasedAt = APITime(s.purchasedAt)
        expiresAt = s.expiresAt.map(APITime.init)
        gracePeriodExpiresAt = s.gracePeriodExpiresAt.map(APITime.init)
        autoRenew = s.autoRenew
        autoRenewProductId = s.autoRenewProductId
        revokedAt = s.revokedAt.map(APITime.init)
        self.inUse = inUse
        userId = s.userId
        updatedAt = APITime(s.updatedAt)
    }
}

protocol CarriesLinkProof {
    var jwsRepresentation: String? { get }
    var receipt: String? { get }
    var transactionId: String? { get }
}

extension CarriesLinkProof {
    /// The proof the body carries, if any: a JWS, a receipt (its entry `transactionId`, else the
    /// subscription's first transaction), or a bare transaction id for Apple's lookup.
    func proof(for originalTransactionId: String) -> PurchaseProof? {
        if let jws = jwsRepresentation, !jws.isEmpty { return .jws(jws) }
        let transactionId = self.transactionId.flatMap { $0.isEmpty ? nil : $0 }
        if let receipt, !receipt.isEmpty { return .receipt(receipt, transactionId: transactionId ?? originalTransactionId) }
        return transactionId.map(PurchaseProof.transactionId)
    }
}

/// The membership an account uses.
struct MembershipDTO: Codable {
    var userId: String
    /// The Apple subscription it comes from (null for a membership paid elsewhere).
    var originalTransactionId: String?
    var payMethod: String?
    var tier: String?
    var cycle: String?
    var expiresAt: APITime?
    var autoRenew: Bool
    var updatedAt: APITime

    init(_ m: Membership) {
        userId = m.userId
        originalTransactionId = m.originalTransactionId
        payMethod = m.payMethod
        tier = m.tier
        cycle = m.cycle
        expiresAt = m.expiresAt.map(APITime.init)
        autoRenew = m.autoRenew
        updatedAt = APITime(m.updatedAt)
    }
}

// MARK: FT Chinese's shapes

/// FT Chinese's `apple.Subscription`.
struct FTCSubscription: Codable {
    var environment: StoreEnvironment
    var originalTransactionId: String
    var lastTransactionId: String
    var productId: String
    var purchaseDateUtc: SecondsTime
    var expiresDateUtc: SecondsTime?
    var tier: String?
    var cycle: String?
    var autoRenewal: Bool
    var createdUtc: SecondsTime
    var updatedUtc: SecondsTime
    /// The linked account, or "" when none.
    var ftcUserId: String
    var inUse: Bool?
    /// `GET /apple/receipt/{id}` only: the kept receipt.
    var receipt: String?

    init(_ s: Subscription, inUse: Bool?) {
        environment = s.environment
        originalTransactionId = s.originalTransactionId
        lastTransactionId = s.latestTransactionId
        productId = s.productId
        purchaseDateUtc = SecondsTime(s.purchasedAt)
        expiresDateUtc = s.expiresAt.map(SecondsTime.init)
        tier = s.tier
        cycle = s.cycle
        autoRenewal = s.autoRenew ?? false
        createdUtc = SecondsTime(s.createdAt)
        updatedUtc = SecondsTime(s.updatedAt)
        ftcUserId = s.userId ?? ""
        self.inUse = inUse
    }
}

/// An entitlement as the user holds it: whether some grant gives it now, until when (none: for
/// ever), and each grant (its source, what the source calls it, from, until, state).
struct HeldEntitlementDTO: Codable {
    struct Grant: Codable {
        /// `app_store_subscription`, `unlock` or `membership`.
        var source: String
        var reference: String
        var productId: String?
        var from: APITime
        var until: APITime?
        /// `active` (live now, or a pass that starts when the previous one ends), `expired`, `ended` (refunded or revoked).
        var state: String
        var endedReason: String?
    }
    var entitlement: String
    var active: Bool
    var expiresAt: APITime?
    var grants: [Grant]

    init(_ held: HeldEntitlement, now: Date) {
        entitlement = held.entitlement
        active = held.active
        expiresAt = held.expiresAt.map(APITime.init)
        grants = held.grants.map { grant in
            Grant(
                source: grant.source.rawValue,
                reference: grant.reference,
                productId: grant.productId,
                from: APITime(grant.from),
                until: grant.until.map(APITime.init),
                state: grant.status(at: now).rawValue,
                endedReason: grant.endedReason
            )
        }
    }
}

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

/// `POST /api/verify-purchase` of a subscription product.
struct SubscriptionPurchaseResponse: Codable {
    var subscription: SubscriptionDTO
    var purchase: PurchaseDTO
}

/// `GET /api/entitlements`.
struct EntitlementsResponse: Codable {
    /// One per subscription the user owns, then one per unlock or pass.
    struct Item: Codable {
        var entitlement: String
        var productId: String
        var expiresAt: APITime?
        /// Subscriptions: their state; unlocks: `active`, `expired` or `revoked`.
        var state: String
        var autoRenew: Bool?
        var environment: StoreEnvironment
        /// Subscriptions: the originalTransactionId; unlocks: the transaction id.
        var originalTransactionId: String
        var inUse: Bool
        /// `app_store_subscription` or `unlock`.
        var source: String?
        /// Subscriptions: the win-back offers Apple says the customer may redeem (left out when none).
        var eligibleWinBackOfferIds: [String]? = nil
        /// Present (true) for a subscription the user has through Family Sharing.
        var familyShared: Bool? = nil
    }
    var isPremium: Bool
    var entitlements: [Item]
    /// Each entitlement the user has or had, with every grant that gives it and until when.
    var byEntitlement: [HeldEntitlementDTO]?
    /// The membership the account uses (from an Apple subscription or paid elsewhere), if any.
    var membership: MembershipDTO?
}

/// `GET /api/subscriptions?page=&per_page=`.
struct SubscriptionPage: Codable {
    var total: Int
    var page: Int
    var limit: Int
    var data: [SubscriptionDTO]
}

/// A link or unlink request. From the app (a user's token or a client key) it carries the store's
/// proof that this device holds the subscription; the app's backend (server key) may name it alone.
struct LinkRequest: Codable, RefusesNull, CarriesLinkProof {
    var originalTransactionId: String
    var force: Bool?
    var jwsRepresentation: String?
    var receipt: String?
    var transactionId: String?
}

struct UnlinkRequest: Codable, RefusesNull, CarriesLinkProof {
    var originalTransactionId: String
    var jwsRepresentation: String?
    var receipt: String?
    var transactionId: String?
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

/// `PUT /api/admin/memberships/{userId}`: a membership paid outside the App Store.
struct MembershipRequest: Codable, RefusesNull {
    /// `alipay`, `wechat`, `stripe`, …; omit when unknown (created by hand).
    var payMethod: String?
    var tier: String?
    var cycle: String?
    var expiresAt: APITime
    var autoRenew: Bool?
}

struct CheatDTO: Codable {
    var id: Int64
    var userId: String
    var originalTransactionId: String
    var ownerUserId: String?
    var source: String
    var at: APITime

    init(_ c: SubscriptionCheat) {
        id = c.id
        userId = c.userId
        originalTransactionId = c.originalTransactionId
        ownerUserId = c.ownerUserId
        source = c.source
        at = APITime(c.at)
    }
}

struct UnlinkDTO: Codable {
    var id: Int64
    var userId: String
    var originalTransactionId: String
    var actor: String
    /// The membership the unlink removed, as JSON text (null when the subscription was not in use).
    var membershipSnapshot: String?
    var at: APITime

    init(_ a: UnlinkArchive) {
        id = a.id
        userId = a.userId
        originalTransactionId = a.originalTransactionId
        actor = a.actor
        membershipSnapshot = a.membershipSnapshot
        at = APITime(a.at)
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

struct FTCSubscriptionList: Codable {
    var total: Int
    var page: Int
    var limit: Int
    var data: [FTCSubscription]
}

/// FT Chinese's `Membership`, the answer of `/apple/link`.
struct FTCMembership: Codable {
    var ftcId: String
    var unionId: String?
    var tier: String?
    var cycle: String?
    /// `2019-11-22`.
    var expireDate: String?
    var payMethod: String?
    var ftcPlanId: String?
    var stripeSubsId: String?
    var autoRenew: Bool
    var status: String?
    var appleSubsId: String?
    var b2bLicenceId: String?

    init(_ m: Membership) {
        ftcId = m.userId
        tier = m.tier
        cycle = m.cycle
        expireDate = m.expiresAt.map { String(BerthJSON.secondsTimestamp($0).prefix(10)) }
        payMethod = m.payMethod
        autoRenew = m.autoRenew
        appleSubsId = m.originalTransactionId
    }

    func encode(to encoder: any Encoder) throws {
        // FT Chinese's clients expect every key, nulls included.
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ftcId, forKey: .ftcId)
        try c.encode(unionId, forKey: .unionId)
        try c.encode(tier, forKey: .tier)
        try c.encode(cycle, forKey: .cycle)
        try c.encode(expireDate, forKey: .expireDate)
        try c.encode(payMethod, forKey: .payMethod)
        try c.encode(ftcPlanId, forKey: .ftcPlanId)
        try c.encode(stripeSubsId, forKey: .stripeSubsId)
        try c.encode(autoRenew, forKey: .autoRenew)
        try c.encode(status, forKey: .status)
        try c.encode(appleSubsId, forKey: .appleSubsId)
        try c.encode(b2bLicenceId, forKey: .b2bLicenceId)
    }
}

/// Apple's verifyReceipt shape, built from a receipt verified offline (when Berth did not ask Apple).
struct FTCAppleReceiptResponse: Encodable {
    struct Entry: Encodable {
        var product_id: String
        var transaction_id: String
        var original_transaction_id: String
        var purchase_date_ms: String
        var expires_date_ms: String?
        var cancellation_date_ms: String?
        var quantity: String
    }
    struct Receipt: Encodable {
        var bundle_id: String?
        var application_version: String?
        var in_app: [Entry]
    }
    var status = 0
    var environment: StoreEnvironment
    var receipt: Receipt
    var latest_receipt_info: [Entry]
    var pending_renewal_info: [String] = []

    init(_ result: ApplyReceipt.Result) {
        let entries = result.verified.receipt.inAppPurchases.compactMap { e -> Entry? in
            guard let product = e.productId, let id = e.transactionId else { return nil }
            return Entry(
                product_id: product,
                transaction_id: id,
                original_transaction_id: e.originalTransactionId ?? id,
                purchase_date_ms: String(e.purchaseDate?.date.epochMilliseconds ?? 0),
                expires_date_ms: e.subscriptionExpirationDate.map { String($0.date.epochMilliseconds) },
                cancellation_date_ms: e.cancellationDate.map { String($0.date.epochMilliseconds) },
                quantity: String(e.quantity ?? 1)
            )
        }
        environment = result.environment
        receipt = Receipt(
            bundle_id: result.verified.receipt.bundleId,
            application_version: result.verified.receipt.applicationVersion,
            in_app: entries
        )
        latest_receipt_info = entries.filter { $0.expires_date_ms != nil }.sorted {
            (Int64($0.purchase_date_ms) ?? 0) > (Int64($1.purchase_date_ms) ?? 0)
        }
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

/// `POST /api/verify-purchase` of an unlock product (lifetime or pass): the entitlement after it.
struct UnlockPurchaseResponse: Codable {
    var entitlement: HeldEntitlementDTO
    var purchase: PurchaseDTO
}

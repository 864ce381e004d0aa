import Foundation

/// What the proof of purchase established, whatever its form (JWS, receipt entry, Apple lookup).
public struct ProvenTransaction: Codable, Hashable, Sendable {
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var environment: StoreEnvironment
    public var purchasedAt: Date?
    public var revoked: Bool
    public var appAccountToken: String?
    /// Hex SHA-256 of the proof (JWS text or receipt DER); logged and stored instead of it.
    public var proofHash: String
    /// How it was proven.
    public var kind: Kind
    /// What Apple signed as paid: price in milliunits of `currency`, and quantity.
    public var priceMilliunits: Int64?
    public var currency: String?
    public var quantity: Int?
    /// For an auto-renewable subscription: what the proof says of it (its latest period).
    public var subscription: SubscriptionFacts?
    /// The store that sold it: nil for the App Store.
    public var store: StoreName?

    /// Google Play: the app's package name the purchase was made in.
    public var package: String?

    /// Family Sharing: a family member's transaction of a purchase someone else in the family paid
    /// for (Apple's inAppOwnershipType FAMILY_SHARED). Its appAccountToken, if any, named the
    /// purchaser: it is dropped from the proof, neither checked against nor recorded for the member.
    public var familyShared: Bool?

    /// The store's order number where the proof names one (Google Play's `GPA.…`), for operators'
    /// searches.
    public var orderId: String?

    /// The store that sold it, as purchases record it.
    public var storeName: StoreName { store ?? .appStore }

    /// The form of a proof. Signed transactions (JWS and Apple's lookup answer) carry an
    /// appAccountToken field; legacy receipts have none.
    public enum Kind: String, Codable, Hashable, Sendable {
        case jws, receipt, lookup
        /// A Google Play purchase token, read from the Play Developer API (its account token is
        /// `obfuscatedExternalAccountId`).
        case play

        public var carriesAccountToken: Bool { self != .receipt }

        /// The request field that carried the proof (named in refusals).
        public var field: String { self == .play ? "purchaseToken" : "jwsRepresentation" }
    }

    public init(
        transactionId: String,
        originalTransactionId: String,
        productId: String,
        environment: StoreEnvironment,
        purchasedAt: Date?,
        revoked: Bool,
        appAccountToken: String?,
        proofHash: String,
        kind: Kind = .jws,
        priceMilliunits: Int64? = nil,
        currency: String? = nil,
        quantity: Int? = nil,
        subscription: SubscriptionFacts? = nil,
        store: StoreName? = nil
    ) {
        self.subscription = subscription
        self.store = store
        self.kind = kind
        self.priceMilliunits = priceMilliunits
        self.currency = currency
        self.quantity = quantity
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.environment = environment
        self.purchasedAt = purchasedAt
        self.revoked = revoked
        self.appAccountToken = appAccountToken
        self.proofHash = proofHash
    }
}

/// A tenant's rules for who may pay with what, beyond the product itself.
public struct PurchasePolicy: Sendable {
    /// The transaction's appAccountToken must be the user's (and be present on proofs that carry one).
    public var accountTokenIsUserId: Bool
    /// The app's user ids are UUIDs in canonical lowercase form, and each is its user's own
    /// appAccountToken. Without it, a token equal to a user id names nobody: anyone may pick a user
    /// id that equals another customer's token (the upper-case spelling of a UUID, or the token a
    /// client derived from someone's user name).
    public var userIdIsToken: Bool
    /// The tenant takes Production purchases: Sandbox ones (free for testers) pay only for `sandboxTesters`.
    public var acceptsProduction: Bool
    public var sandboxTesters: Set<String>
    /// The tokens derived one-way from a user id that name that user (cordova-plugin-purchase's
    /// obfuscated username). Lowercase.
    public var derivedAccountTokens: @Sendable (String) -> [String]
    /// Further forms of a user's token that a proof may carry and the check accepts, but that are
    /// never recorded or looked up (Google Play's obfuscated account id).
    public var checkedAccountTokens: @Sendable (String) -> [String]

    public init(
        accountTokenIsUserId: Bool = false,
        userIdIsToken: Bool = false,
        acceptsProduction: Bool = false,
        sandboxTesters: Set<String> = [],
        derivedAccountTokens: @escaping @Sendable (String) -> [String] = { _ in [] },
        checkedAccountTokens: @escaping @Sendable (String) -> [String] = { _ in [] }
    ) {
        self.checkedAccountTokens = checkedAccountTokens
        self.accountTokenIsUserId = accountTokenIsUserId
        self.userIdIsToken = userIdIsToken
        self.acceptsProduction = acceptsProduction
        self.sandboxTesters = sandboxTesters
        self.derivedAccountTokens = derivedAccountTokens
    }

    /// The account tokens that name `userId` and may be recorded and looked up for it: those derived
    /// from the id, and the id itself only where ids are UUIDs and this one is in canonical form.
    public func tokens(naming userId: String) -> [String] {
        var tokens = derivedAccountTokens(userId)
        if userIdIsToken, CanonicalUUID.isCanonical(userId) { tokens.append(userId) }
        return tokens
    }

    /// Whether an appAccountToken names `userId`: a token derived from the id (or, where user ids
    /// are UUIDs, the id itself in its canonical form).
    public func token(_ token: String, names userId: String) -> Bool {
        let token = token.lowercased()
        return tokens(naming: userId).contains(token) || checkedAccountTokens(userId).contains(token)
    }
}

/// The one spelling of a UUID Berth takes as a user id where ids are UUIDs: 8-4-4-4-12 lowercase hex digits.
public enum CanonicalUUID {
    public static func isCanonical(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f")) else {
                    return false
                }
            }
        }
        return true
    }
}

import Foundation

/// One reason a user holds an entitlement: (user, entitlement, source, from, until?, state).
/// A user's entitlements are derived from their live grants; when a source ends (expiry, refund,
/// revocation, unlink) only its grant ends, and the others keep answering.
public struct EntitlementGrant: Codable, Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var userId: String
    public var entitlement: String
    public var source: GrantSource
    /// What the source calls it: the transaction id of an unlock, the originalTransactionId of an
    /// App Store subscription, the user id of a membership paid elsewhere.
    public var reference: String
    public var productId: String?
    /// When the purchase was made (a pass's days are counted from here, or from the end of the
    /// user's previous pass of the same entitlement, whichever is later).
    public var purchasedAt: Date
    public var from: Date
    /// nil: for ever (a lifetime unlock).
    public var until: Date?
    /// For a pass: the days one purchase grants.
    public var durationDays: Int?
    public var state: GrantState
    /// Why it ended (`REFUND`, `REVOKE`, …) when `state` is `ended`.
    public var endedReason: String?
    public var environment: StoreEnvironment?

    public init(
        id: Int64,
        tenantId: String,
        userId: String,
        entitlement: String,
        source: GrantSource,
        reference: String,
        productId: String?,
        purchasedAt: Date,
        from: Date,
        until: Date?,
        durationDays: Int? = nil,
        state: GrantState = .active,
        endedReason: String? = nil,
        environment: StoreEnvironment? = nil
    ) {
        self.id = id
        self.tenantId = tenantId
        self.userId = userId
        self.entitlement = entitlement
        self.source = source
        self.reference = reference
        self.productId = productId
        self.purchasedAt = purchasedAt
        self.from = from
        self.until = until
        self.durationDays = durationDays
        self.state = state
        self.endedReason = endedReason
        self.environment = environment
    }

    /// How it stands at `now`: `active` while it grants (or, for a pass, waits for the previous one to
    /// end), `expired` once its `until` passed, `ended` when refunded or revoked.
    public func status(at now: Date) -> GrantStatus {
        if state == .ended { return .ended }
        if let until, until <= now { return .expired }
        return .active
    }

    /// Whether it grants its entitlement at `now`.
    public func isLive(at now: Date) -> Bool {
        state == .active && from <= now && (until.map { now < $0 } ?? true)
    }
}

/// Where a grant comes from, stored by raw value. A store's subscriptions are
/// ``subscription(of:)`` (`app_store_subscription`, `google_play_subscription`), so a store added
/// later has its own source without an edit here.
public struct GrantSource: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// A store's auto-renewable subscription (derived from its record).
    public static func subscription(of store: StoreName) -> GrantSource { GrantSource(rawValue: store.rawValue + "_subscription") }
    /// An App Store auto-renewable subscription.
    public static let appStoreSubscription = subscription(of: .appStore)
    /// A Google Play auto-renewing subscription.
    public static let googlePlaySubscription = subscription(of: .googlePlay)
    /// A one-time purchase: a lifetime unlock or a pass.
    public static let unlock = GrantSource(rawValue: "unlock")
    /// A membership paid elsewhere (the app's backend or an operator records it).
    public static let membership = GrantSource(rawValue: "membership")

    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A grant as answers show it (``EntitlementGrant/status(at:)``).
public enum GrantStatus: String, Hashable, Sendable {
    case active, expired, ended
}

public enum GrantState: String, Codable, Hashable, Sendable {
    case active
    /// Refunded, revoked or otherwise withdrawn (not the same as expired: an expired grant is still `active` with `until` in the past).
    case ended
}

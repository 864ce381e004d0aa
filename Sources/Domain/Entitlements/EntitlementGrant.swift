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
    public var environment: String?

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
        environment: String? = nil
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

/// Where a grant comes from. Stored by raw value; other stores add cases.
public enum GrantSource: String, Codable, Hashable, Sendable, CaseIterable {
    /// An App Store auto-renewable subscription (derived from its record).
    case appStoreSubscription = "app_store_subscription"
    /// A Google Play auto-renewing subscription (derived from its record).
    case googlePlaySubscription = "google_play_subscription"
    /// A one-time App Store purchase: a lifetime unlock or a pass.
    case unlock
    /// A membership paid elsewhere (the app's backend or an operator records it).
    case membership
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

import Foundation

/// Who did something: a user, an admin key, a server key, Apple, or Berth itself.
public struct Actor: RawRepresentable, Hashable, Sendable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static func user(_ id: String) -> Actor { Actor(rawValue: "user:\(id)") }
    public static func admin(keyId: Int64) -> Actor { Actor(rawValue: "admin:\(keyId)") }
    public static func server(keyId: Int64) -> Actor { Actor(rawValue: "server:\(keyId)") }
    public static func client(keyId: Int64) -> Actor { Actor(rawValue: "client:\(keyId)") }
    /// Whether an API key (client or server) acted, rather than a user's own token.
    public var isKey: Bool { rawValue.hasPrefix("server:") || rawValue.hasPrefix("client:") }
    public static let apple = Actor(rawValue: "apple")
    public static let system = Actor(rawValue: "system")
}

/// What an audit entry records.
public struct AuditAction: RawRepresentable, Hashable, Sendable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let bookingCreated = AuditAction(rawValue: "booking.created")
    public static let bookingConfirmed = AuditAction(rawValue: "booking.confirmed")
    /// A payment of fewer units than the booking needs: counted, the booking still pending.
    public static let bookingPartlyPaid = AuditAction(rawValue: "booking.partly_paid")
    public static let bookingManualConfirm = AuditAction(rawValue: "booking.manual_confirm")
    public static let bookingCancelled = AuditAction(rawValue: "booking.cancelled")
    /// A resource's slot window reached four fifths of its cap on unpaid holds.
    public static let bookingHoldsHigh = AuditAction(rawValue: "booking.holds_high")
    public static let purchaseNeedsRefund = AuditAction(rawValue: "purchase.needs_refund")
    public static let purchaseRefused = AuditAction(rawValue: "purchase.refused")
    public static let replayDetected = AuditAction(rawValue: "replay.detected")
    public static let creditsPurchased = AuditAction(rawValue: "credits.purchased")
    public static let creditsAdjusted = AuditAction(rawValue: "credits.adjusted")
    public static let creditProductCreated = AuditAction(rawValue: "credit_product.created")
    public static let creditProductUpdated = AuditAction(rawValue: "credit_product.updated")
    public static let apiKeyCreated = AuditAction(rawValue: "api_key.created")
    public static let apiKeyRevoked = AuditAction(rawValue: "api_key.revoked")
    public static let apiKeyRotated = AuditAction(rawValue: "api_key.rotated")
    public static let consumptionConsent = AuditAction(rawValue: "consumption_consent.recorded")
    public static let renewalExtended = AuditAction(rawValue: "subscription.renewal_extended")
    /// An operator closed what a booking owed its customer (``OwedPayment``).
    public static let owedResolved = AuditAction(rawValue: "owed.resolved")
    /// The inventory changed: a resource added, changed, retired (the detail has the resource as written).
    public static let resourceCreated = AuditAction(rawValue: "resource.created")
    public static let resourceUpdated = AuditAction(rawValue: "resource.updated")
    public static let resourceRetired = AuditAction(rawValue: "resource.retired")
    /// A closure made or deleted (the dates reopened).
    public static let closureCreated = AuditAction(rawValue: "closure.created")
    public static let closureDeleted = AuditAction(rawValue: "closure.deleted")
    /// A booking moved to another slot, day or resource (detail: from and to).
    public static let bookingMoved = AuditAction(rawValue: "booking.moved")
    /// `notification.refund`, `notification.did_renew`, …
    public static func notification(_ type: NotificationType) -> AuditAction { AuditAction(rawValue: "notification.\(type.rawValue.lowercased())") }
}

/// One audit entry to write (the permanent log is read back as ``AuditEntry``).
public struct AuditRecord: Hashable, Sendable {
    public var tenantId: String
    public var actor: Actor
    public var action: AuditAction
    public var bookingId: Int64?
    public var purchaseId: Int64?
    public var detail: [String: String]
    public var at: Date

    public init(tenantId: String, actor: Actor, action: AuditAction, bookingId: Int64?, purchaseId: Int64?, detail: [String: String], at: Date) {
        self.tenantId = tenantId
        self.actor = actor
        self.action = action
        self.bookingId = bookingId
        self.purchaseId = purchaseId
        self.detail = detail
        self.at = at
    }

    public init(tenantId: String, actor: Actor, action: AuditAction, target: PurchaseTarget?, purchaseId: Int64?, detail: [String: String], at: Date)
    {
        self.init(tenantId: tenantId, actor: actor, action: action, bookingId: target?.bookingId, purchaseId: purchaseId, detail: detail, at: at)
    }
}

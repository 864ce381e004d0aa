import Foundation

/// Everything the exactly-once rules look at, read inside the applying transaction.
public struct PurchaseContext: Sendable {
    public var claim: PurchaseClaim
    /// The purchase already recorded for this (store, environment, transaction id), if any.
    public var existing: Purchase?
    public var booking: Booking
    public var resource: Resource?
    /// What other bookings hold of a slot overlapping this booking's, at `now`.
    public var occupancy: Occupancy
    public var now: Date

    public init(claim: PurchaseClaim, existing: Purchase?, booking: Booking, resource: Resource?, occupancy: Occupancy, now: Date) {
        self.claim = claim
        self.existing = existing
        self.booking = booking
        self.resource = resource
        self.occupancy = occupancy
        self.now = now
    }
}

/// What to do with a claimed purchase. Pure data; the store applies it in one transaction.
public enum PurchaseDecision: Hashable, Sendable {
    /// The same user already claimed this transaction for this booking: answer as before, write nothing.
    case repeatOf(Purchase)
    /// Someone else (another user, booking or tenant) already used this transaction: record a replay, refuse.
    case replay(existing: Purchase, reason: String)
    /// Record the purchase and confirm the booking.
    case confirm
    /// Record the purchase as needing a refund; optionally move the booking (to `payment_needs_refund`).
    case needsRefund(code: String, message: String, bookingStatus: BookingStatus?)
}

public enum PurchaseRules {
    /// The exactly-once and booking rules of `POST /api/verify-purchase`.
    public static func decide(_ context: PurchaseContext) -> PurchaseDecision {
        let claim = context.claim
        if let existing = context.existing {
            if existing.tenantId == claim.tenantId, existing.userId == claim.userId, existing.bookingId == claim.bookingId {
                return .repeatOf(existing)
            }
            let reason: String
            if existing.tenantId != claim.tenantId {
                reason = "transaction already used by another app"
            } else if existing.userId != claim.userId {
                reason = "transaction already used by another user"
            } else {
                reason = "transaction already used for booking \(existing.bookingId.map(String.init) ?? "none")"
            }
            return .replay(existing: existing, reason: reason)
        }
        let booking = context.booking
        switch booking.status {
        case .pendingPayment:
            if booking.holdExpiresAt > context.now { return .confirm }
            if let resource = context.resource, Capacity.fits(resource, seats: booking.seats, occupancy: context.occupancy) {
                return .confirm
            }
            return .needsRefund(code: "slot_unavailable", message: "the hold expired and the slot was taken; the payment is recorded for a refund", bookingStatus: .paymentNeedsRefund)
        case .confirmed:
            return .needsRefund(code: "booking_already_paid", message: "the booking was already paid by another transaction; this payment is recorded for a refund", bookingStatus: nil)
        case .cancelled, .refunded:
            return .needsRefund(code: "booking_not_payable", message: "the booking is \(booking.status.rawValue); the payment is recorded for a refund", bookingStatus: .paymentNeedsRefund)
        case .paymentNeedsRefund:
            return .needsRefund(code: "booking_not_payable", message: "the booking already awaits a refund; this payment is recorded for a refund", bookingStatus: nil)
        }
    }
}

/// What the proof of purchase established, whatever its form (JWS, receipt entry, Apple lookup).
public struct ProvenTransaction: Hashable, Sendable {
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var environment: String
    public var purchasedAt: Date?
    public var revoked: Bool
    public var appAccountToken: String?
    /// Hex SHA-256 of the proof (JWS text or receipt DER); logged and stored instead of it.
    public var proofHash: String

    public init(transactionId: String, originalTransactionId: String, productId: String, environment: String, purchasedAt: Date?,
                revoked: Bool, appAccountToken: String?, proofHash: String) {
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

extension PurchaseRules {
    /// Whether a proven transaction may pay this booking for this user, before anything is written:
    /// the product must be the one the app says and the one the booking needs, a claimed transaction
    /// id must match, the account token (when the tenant ties it to users) must be the user's, and
    /// Apple must not have revoked it.
    public static func check(
        _ proven: ProvenTransaction, claimedProductId: String, claimedTransactionId: String?, booking: Booking,
        userId: String, accountTokenIsUserId: Bool
    ) throws(DomainError) {
        guard proven.productId == claimedProductId else {
            throw DomainError(.unprocessable, "product_mismatch", "the transaction is for \(proven.productId), not \(claimedProductId)", field: "productId")
        }
        guard proven.productId == booking.requiredProductId else {
            throw DomainError(.unprocessable, "product_mismatch", "booking \(booking.id) must be paid with \(booking.requiredProductId), not \(proven.productId)", field: "productId")
        }
        if let claimed = claimedTransactionId, claimed != proven.transactionId {
            throw DomainError(.unprocessable, "transaction_mismatch", "transactionId \(claimed) does not match the signed transaction", field: "transactionId")
        }
        if accountTokenIsUserId, let token = proven.appAccountToken, token.lowercased() != userId.lowercased() {
            throw DomainError(.unprocessable, "account_token_mismatch", "the transaction was bought by another account of this app", field: "jwsRepresentation")
        }
        if proven.revoked {
            throw DomainError(.unprocessable, "transaction_revoked", "Apple has refunded or revoked this transaction", field: "transactionId")
        }
    }
}

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
    /// Apple reported a REFUND or REVOKE of this transaction before anyone claimed it.
    public var revokedByApple: Bool

    public init(claim: PurchaseClaim, existing: Purchase?, booking: Booking, resource: Resource?, occupancy: Occupancy, now: Date,
                revokedByApple: Bool = false) {
        self.revokedByApple = revokedByApple
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
    /// Grant nothing and write no purchase; the refusal is recorded in the audit log.
    case refuse(code: String, message: String)
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
        // Money Apple has given back never pays for anything, whoever claims it and however.
        if context.claim.revoked {
            return .refuse(code: "transaction_revoked", message: "Apple has refunded or revoked this transaction")
        }
        if context.revokedByApple {
            return .refuse(code: "transaction_revoked", message: "Apple reported this transaction refunded or revoked before it was claimed")
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
    /// How it was proven.
    public var kind: Kind
    /// What Apple signed as paid: price in milliunits of `currency`, and quantity.
    public var priceMilliunits: Int64?
    public var currency: String?
    public var quantity: Int?

    /// The form of a proof. Signed transactions (JWS and Apple's lookup answer) carry an
    /// appAccountToken field; legacy receipts have none.
    public enum Kind: String, Hashable, Sendable {
        case jws, receipt, lookup

        public var carriesAccountToken: Bool { self != .receipt }
    }

    public init(transactionId: String, originalTransactionId: String, productId: String, environment: String, purchasedAt: Date?,
                revoked: Bool, appAccountToken: String?, proofHash: String, kind: Kind = .jws,
                priceMilliunits: Int64? = nil, currency: String? = nil, quantity: Int? = nil) {
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
public struct PurchasePolicy: Hashable, Sendable {
    /// The transaction's appAccountToken must equal the user id (and be present on proofs that carry one).
    public var accountTokenIsUserId: Bool
    /// The tenant takes Production purchases: Sandbox ones (free for testers) pay only for `sandboxTesters`.
    public var acceptsProduction: Bool
    public var sandboxTesters: Set<String>

    public init(accountTokenIsUserId: Bool = false, acceptsProduction: Bool = false, sandboxTesters: Set<String> = []) {
        self.accountTokenIsUserId = accountTokenIsUserId
        self.acceptsProduction = acceptsProduction
        self.sandboxTesters = sandboxTesters
    }
}

extension PurchaseRules {
    /// Whether a proven transaction may pay this booking for this user, before anything is written:
    /// the product must be the one the app says and the one the booking needs, in the quantity the
    /// booking needs; a claimed transaction id must match; the account token (when the tenant ties it
    /// to users) must be the user's; a Sandbox purchase pays a Production tenant's booking only for an
    /// allow-listed tester. Revocation is decided with the stored state, in ``decide(_:)``.
    public static func check(
        _ proven: ProvenTransaction, claimedProductId: String, claimedTransactionId: String?, booking: Booking,
        userId: String, policy: PurchasePolicy
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
        let quantity = proven.quantity ?? 1
        guard quantity >= booking.requiredQuantity else {
            throw DomainError(.unprocessable, "quantity_insufficient", "booking \(booking.id) needs \(booking.requiredQuantity) × \(booking.requiredProductId); the transaction bought \(quantity)", field: "productId")
        }
        if policy.accountTokenIsUserId, proven.kind.carriesAccountToken {
            guard let token = proven.appAccountToken else {
                throw DomainError(.unprocessable, "account_token_missing", "this app ties purchases to accounts: buy with appAccountToken set to the user id", field: "jwsRepresentation")
            }
            guard token.lowercased() == userId.lowercased() else {
                throw DomainError(.unprocessable, "account_token_mismatch", "the transaction was bought by another account of this app", field: "jwsRepresentation")
            }
        }
        if policy.acceptsProduction, proven.environment == "Sandbox", !policy.sandboxTesters.contains(userId) {
            throw DomainError(.unprocessable, "sandbox_not_allowed", "Sandbox purchases pay for bookings of this app only for its listed testers", field: "jwsRepresentation")
        }
    }
}

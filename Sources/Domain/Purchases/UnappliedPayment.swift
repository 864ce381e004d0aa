import Foundation

/// A proven, paid transaction that could not be applied to what it was claimed for (the booking is
/// gone or not the user's, the product is not the one named or not sold here, the account token
/// names another account, ...). Paid is never silent: it is kept with its reason, shown to operators
/// with its amount and told to the tenant's backend, until an operator applies it or marks it for a
/// refund (or a later claim applies it).
public struct UnappliedPayment: Hashable, Sendable {
    public enum Status: String, Hashable, Sendable, CaseIterable {
        /// Waiting for an operator (or a later successful claim).
        case open
        /// Applied: by an operator's action or a later claim (`purchaseId`).
        case applied
        /// An operator decided the money goes back to the buyer (refunded through Apple's support).
        case refundRequested = "refund_requested"
    }

    public var id: Int64
    public var tenantId: String
    public var store: StoreName
    /// The user the claim was for, and the booking it named (if any).
    public var userId: String
    public var bookingId: Int64?
    public var reasonCode: ErrorCode
    public var reason: String
    public var proven: ProvenTransaction
    /// Claims refused for the same reason (retries of the app) counted on the one row.
    public var attempts: Int64
    public var status: Status
    public var firstSeenAt: Date
    public var lastSeenAt: Date
    public var resolvedAt: Date?
    public var resolvedBy: String?
    public var purchaseId: Int64?
    public var note: String?
    /// A purchase that applied the transaction after it was kept (a later good claim by the app), as
    /// the store found it beside the row.
    public var claimedByPurchaseId: Int64?

    /// What the payment is now: `applied` once any claim applied it, else the recorded status.
    public var currentStatus: Status { status == .open && claimedByPurchaseId != nil ? .applied : status }
    /// The purchase that applied it, by an operator's action or a later claim.
    public var appliedPurchaseId: Int64? { purchaseId ?? claimedByPurchaseId }

    public init(
        id: Int64,
        tenantId: String,
        store: StoreName,
        userId: String,
        bookingId: Int64?,
        reasonCode: ErrorCode,
        reason: String,
        proven: ProvenTransaction,
        attempts: Int64 = 1,
        status: Status = .open,
        firstSeenAt: Date,
        lastSeenAt: Date,
        resolvedAt: Date? = nil,
        resolvedBy: String? = nil,
        purchaseId: Int64? = nil,
        note: String? = nil
    ) {
        self.id = id
        self.tenantId = tenantId
        self.store = store
        self.userId = userId
        self.bookingId = bookingId
        self.reasonCode = reasonCode
        self.reason = reason
        self.proven = proven
        self.attempts = attempts
        self.status = status
        self.firstSeenAt = firstSeenAt
        self.lastSeenAt = lastSeenAt
        self.resolvedAt = resolvedAt
        self.resolvedBy = resolvedBy
        self.purchaseId = purchaseId
        self.note = note
    }

    /// Whether a refusal after the proof leaves a paid transaction unapplied (and so is kept). Not:
    /// storage trouble (the app retries), a refusal of the caller, a Sandbox purchase where only
    /// testers' count (no money was paid).
    public static func keeps(_ error: DomainError) -> Bool {
        switch error.kind {
        case .unavailable, .unauthenticated: false
        case .invalidInput, .forbidden, .notFound, .conflict, .unprocessable: error.code != .sandboxNotAllowed
        }
    }

    /// What the tenant's backend is told (`payment.unapplied`, `payment.refund_requested`, `payment.applied`).
    public func event(_ type: WebhookEventType) -> WebhookEvent {
        var data = [
            "unappliedPaymentId": String(id), "userId": userId, "transactionId": proven.transactionId, "productId": proven.productId,
            "environment": proven.environment.rawValue, "reasonCode": reasonCode.rawValue, "status": currentStatus.rawValue,
            "quantity": String(proven.quantity ?? 1),
            "store": proven.storeName.rawValue,
        ]
        if let bookingId { data["bookingId"] = String(bookingId) }
        if let price = proven.priceMilliunits { data["priceMilliunits"] = String(price) }
        if let currency = proven.currency { data["currency"] = currency }
        if let purchaseId = appliedPurchaseId { data["purchaseId"] = String(purchaseId) }
        return WebhookEvent(type: type, data: data, subject: "payment:\(proven.transactionId)")
    }
}

extension WebhookEventType {
    public static let paymentUnapplied = WebhookEventType(rawValue: "payment.unapplied")
    public static let paymentRefundRequested = WebhookEventType(rawValue: "payment.refund_requested")
    public static let paymentApplied = WebhookEventType(rawValue: "payment.applied")
}

extension AuditAction {
    public static let paymentUnapplied = AuditAction(rawValue: "payment.unapplied")
    public static let paymentRefundRequested = AuditAction(rawValue: "payment.refund_requested")
    public static let paymentApplied = AuditAction(rawValue: "payment.applied")
}

import Foundation

/// How a claim ended, as the caller is told.
public enum PurchaseOutcome: Hashable, Sendable {
    /// Recorded now and its effect applied.
    case applied(Purchase)
    /// Recorded earlier for the same user and target, and applied then.
    case repeated(Purchase)
    /// Already used by someone else (recorded as a replay attempt).
    case replay(reason: String)
    /// Money was received but cannot be honoured; the purchase is recorded for a refund.
    case needsRefund(Purchase, code: ErrorCode, message: String)
    /// Nothing granted, no purchase recorded (the refusal is audited).
    case refused(code: ErrorCode, message: String)
}

extension PurchaseOutcome {
    /// The purchase of an applied or repeated claim (what the user has now).
    public var purchase: Purchase? {
        switch self {
        case .applied(let purchase), .repeated(let purchase): purchase
        case .replay, .needsRefund, .refused: nil
        }
    }
}

/// Everything one claim writes, decided by Domain and saved by the store as it is: the purchase
/// row (or a replay attempt), what it changes (``PlanEffect``: one case per kind of state), audit
/// entries and webhook events. One plan is one transaction.
public struct PurchasePlan: Hashable, Sendable {
    public var outcome: PurchaseOutcome
    /// A new purchase row (with the proof's hash).
    public var purchase: Purchase?
    public var proofHash: String?
    /// What the claim changes, saved in order.
    public var effects: [PlanEffect]
    public var replay: ReplayAttempt?
    public var audit: [AuditRecord]
    public var events: [WebhookEvent]

    public init(
        outcome: PurchaseOutcome,
        purchase: Purchase? = nil,
        proofHash: String? = nil,
        effects: [PlanEffect] = [],
        replay: ReplayAttempt? = nil,
        audit: [AuditRecord] = [],
        events: [WebhookEvent] = []
    ) {
        self.outcome = outcome
        self.purchase = purchase
        self.proofHash = proofHash
        self.effects = effects
        self.replay = replay
        self.audit = audit
        self.events = events
    }
}

/// Random positive ids below 2^53: exact as JavaScript numbers, unguessable, no sequence to contend on.
public enum RecordID {
    public static func next() -> Int64 { Int64.random(in: 1...(1 << 53) - 1) }
}

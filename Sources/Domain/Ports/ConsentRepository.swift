import Foundation

/// A user's answer, in the app, to "may we tell Apple how you used a purchase if you ask for a refund?".
public struct ConsumptionConsent: Hashable, Sendable {
    public var tenantId: String
    public var userId: String
    public var consented: Bool
    /// Which wording the user saw (the app's own version label).
    public var textVersion: String
    public var recordedAt: Date

    public init(tenantId: String, userId: String, consented: Bool, textVersion: String, recordedAt: Date) {
        self.tenantId = tenantId
        self.userId = userId
        self.consented = consented
        self.textVersion = textVersion
        self.recordedAt = recordedAt
    }
}

/// Each user's latest consumption consent.
public protocol ConsentRepository {
    func consent(tenantId: String, userId: String) throws -> ConsumptionConsent?
    /// Replaces the user's answer.
    func record(_ consent: ConsumptionConsent) throws
}

/// An answer Berth owes Apple for one CONSUMPTION_REQUEST (Send Consumption Information), kept
/// until it is sent, refused for lack of consent, or Apple's 12-hour window closes: a failed call
/// is tried again, by whichever instance, instead of being lost.
public struct ConsumptionAnswer: Hashable, Sendable {
    public enum Status: String, Sendable, Hashable {
        /// Owed: tried at `nextAttemptAt`.
        case pending
        /// Apple has it.
        case sent
        /// The customer had not consented when it was due: nothing was sent.
        case noConsent = "no_consent"
        /// Apple's window closed before a call succeeded.
        case expired
    }

    public var id: Int64
    public var tenantId: String
    public var environment: StoreEnvironment
    public var transactionId: String
    /// The CONSUMPTION_REQUEST's uuid: one answer per request, however often it arrives.
    public var notificationUUID: String
    /// When Apple asked (the notification's signed date): the window runs 12 hours from it.
    public var requestedAt: Date
    public var status: Status
    public var attempts: Int
    public var lastError: String?
    public var nextAttemptAt: Date
    public var createdAt: Date
    public var doneAt: Date?

    public init(
        id: Int64,
        tenantId: String,
        environment: StoreEnvironment,
        transactionId: String,
        notificationUUID: String,
        requestedAt: Date,
        status: Status = .pending,
        attempts: Int = 0,
        lastError: String? = nil,
        nextAttemptAt: Date,
        createdAt: Date,
        doneAt: Date? = nil
    ) {
        self.id = id
        self.tenantId = tenantId
        self.environment = environment
        self.transactionId = transactionId
        self.notificationUUID = notificationUUID
        self.requestedAt = requestedAt
        self.status = status
        self.attempts = attempts
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt
        self.doneAt = doneAt
    }
}

/// The consumption answers Berth owes Apple.
public protocol ConsumptionAnswerRepository {
    /// Records an answer owed, once per tenant and request uuid, leased to `owner` until
    /// `leaseUntil` (the caller tries it at once): false, and nothing written, when it is known.
    func enqueue(_ answer: ConsumptionAnswer, owner: String, leaseUntil: Date) throws -> Bool
    /// Leases up to `limit` pending answers due at `now` (others' unexpired leases are skipped; on
    /// PostgreSQL, rows another instance is claiming too).
    func claimDue(now: Date, limit: Int, owner: String, leaseUntil: Date) throws -> [ConsumptionAnswer]
    /// Records an attempt and releases the lease; `pending` waits until `nextAttemptAt`.
    func record(_ answer: ConsumptionAnswer, status: ConsumptionAnswer.Status, error: String?, nextAttemptAt: Date, now: Date) throws
    func answers(tenantId: String, transactionId: String) throws -> [ConsumptionAnswer]
}

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

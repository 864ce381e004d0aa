import Foundation

/// Signed data whose signature, certificate chain and app claims have been verified.
///
/// Only ``SignedDataVerifier`` creates values of this type, so holding one is proof of verification.
public struct VerifiedSignedData<Payload: SignedPayload>: Sendable {
    /// How the data was trusted.
    public enum Trust: Hashable, Sendable {
        /// Chain verified to a configured root; the SHA-256 fingerprint of that root.
        case chain(rootFingerprint: String)
        /// Xcode / LocalTesting data, accepted because the caller allowed it; not signed by Apple.
        case localTesting
    }

    public let payload: Payload
    /// The exact JSON bytes that were signed (every field, including ones this version does not model).
    public let rawPayload: Data
    /// When the payload was signed (its `signedDate`; an app transaction's `receiptCreationDate`), or,
    /// when it states neither, when it was verified: the time its chain was judged at.
    public let signedDate: AppleTimestamp
    /// Whether ``signedDate`` is the payload's own.
    public let statesSignedDate: Bool
    public let trust: Trust

    init(payload: Payload, rawPayload: Data, signedDate: AppleTimestamp, statesSignedDate: Bool, trust: Trust) {
        self.payload = payload
        self.rawPayload = rawPayload
        self.signedDate = signedDate
        self.statesSignedDate = statesSignedDate
        self.trust = trust
    }
}

public typealias VerifiedTransaction = VerifiedSignedData<TransactionPayload>
public typealias VerifiedRenewalInfo = VerifiedSignedData<RenewalInfoPayload>
public typealias VerifiedAppTransaction = VerifiedSignedData<AppTransactionPayload>

/// A verified server notification together with its verified nested signed data.
public struct VerifiedNotification: Sendable {
    public let notification: VerifiedSignedData<NotificationPayload>
    /// `data.signedTransactionInfo`, verified with the same expectations.
    public let transaction: VerifiedTransaction?
    /// `data.signedRenewalInfo`, verified with the same expectations.
    public let renewalInfo: VerifiedRenewalInfo?

    public var payload: NotificationPayload { notification.payload }
}

/// Any kind of verified JWS, as detected from its payload (for tools that take whatever they are given).
public enum VerifiedAnySignedData: Sendable {
    case transaction(VerifiedTransaction)
    case renewalInfo(VerifiedRenewalInfo)
    case notification(VerifiedNotification)
    case appTransaction(VerifiedAppTransaction)
}

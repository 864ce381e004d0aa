import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// How a caller may name the subscription to link or unlink.
public enum LinkAuthority: Sendable {
    /// The app's backend (a server key): by its original transaction id alone.
    case byId
    /// Anyone else (a user's token, a client key): only with a proof from the store that this
    /// device holds the subscription (a JWS, a receipt, or an id whose transaction carries the
    /// user's appAccountToken).
    case proof(PurchaseProof?)
}

/// A link or unlink from the app must carry the store's proof that the device holds the subscription.
public struct AuthorizeLink: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Checks the proof a user-initiated link or unlink must carry: it verifies for the app, names
    /// the same subscription, and was bought by this account where the app ties purchases to accounts.
    public func callAsFunction(_ authority: LinkAuthority, runtime: TenantRuntime, userId: String, originalTransactionId: String) async throws {
        guard case .proof(let proof) = authority else { return }
        guard let proof else {
            throw DomainError(
                .forbidden,
                .proofRequired,
                "linking or unlinking from the app needs the store's proof: send jwsRepresentation, receipt or transactionId with it (bare ids are for the app's backend)",
                field: "jwsRepresentation"
            )
        }
        let proven = try await PurchaseProver(logger: logger).prove(proof, productId: nil, userId: userId, runtime: runtime)
        guard proven.originalTransactionId == originalTransactionId else {
            throw DomainError(
                .unprocessable,
                .transactionMismatch,
                "the proof is of subscription \(proven.originalTransactionId), not \(originalTransactionId)",
                field: "originalTransactionId"
            )
        }
        try PurchaseChecks.buyer(proven, userId: userId, policy: runtime.purchasePolicy)
    }
}

import Foundation

/// Checks every claim passes whatever it pays for, before anything is written.
public enum PurchaseChecks {
    /// The product must be the one the app says.
    public static func claimedProduct(_ proven: ProvenTransaction, claimedProductId: String) throws(DomainError) {
        guard proven.productId == claimedProductId else {
            throw DomainError(
                .unprocessable,
                .productMismatch,
                "the transaction is for \(proven.productId), not \(claimedProductId)",
                field: "productId"
            )
        }
    }

    /// A claimed transaction id must match the proof.
    public static func claimedTransaction(_ proven: ProvenTransaction, claimedTransactionId: String?) throws(DomainError) {
        if let claimed = claimedTransactionId, claimed != proven.transactionId {
            throw DomainError(
                .unprocessable,
                .transactionMismatch,
                "transactionId \(claimed) does not match the signed transaction",
                field: "transactionId"
            )
        }
    }

    /// The account token (when the tenant ties it to users) must be the user's; a Sandbox purchase
    /// counts for a Production tenant only for an allow-listed tester.
    public static func buyer(_ proven: ProvenTransaction, userId: String, policy: PurchasePolicy) throws(DomainError) {
        if policy.accountTokenIsUserId, proven.kind.carriesAccountToken, proven.familyShared != true {
            guard let token = proven.appAccountToken else {
                throw DomainError(
                    .unprocessable,
                    .accountTokenMissing,
                    "this app ties purchases to accounts: buy with appAccountToken set to the user id (or cordova-plugin-purchase's token for it)",
                    field: proven.kind.field
                )
            }
            // Google Play's obfuscatedExternalAccountId is any text the app sets (often the user id
            // itself); it proves nothing without the purchase token, which Apple's ids do not need.
            guard policy.token(token, names: userId) || (proven.kind == .play && token == userId) else {
                throw DomainError(
                    .unprocessable,
                    .accountTokenMismatch,
                    "the transaction was bought by another account of this app",
                    field: proven.kind.field
                )
            }
        }
        if policy.acceptsProduction, proven.environment == .sandbox, !policy.sandboxTesters.contains(userId) {
            throw DomainError(
                .unprocessable,
                .sandboxNotAllowed,
                "Sandbox purchases count for this app only for its listed testers",
                field: proven.kind.field
            )
        }
    }
}

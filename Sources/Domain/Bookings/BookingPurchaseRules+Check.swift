import Foundation

extension BookingPurchaseRules {
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
            throw DomainError(.unprocessable, .productMismatch, "the transaction is for \(proven.productId), not \(claimedProductId)", field: "productId")
        }
        guard proven.productId == booking.requiredProductId else {
            throw DomainError(.unprocessable, .productMismatch, "booking \(booking.id) must be paid with \(booking.requiredProductId), not \(proven.productId)", field: "productId")
        }
        if let claimed = claimedTransactionId, claimed != proven.transactionId {
            throw DomainError(.unprocessable, .transactionMismatch, "transactionId \(claimed) does not match the signed transaction", field: "transactionId")
        }
        let quantity = proven.quantity ?? 1
        guard quantity >= booking.requiredQuantity else {
            throw DomainError(.unprocessable, .quantityInsufficient, "booking \(booking.id) needs \(booking.requiredQuantity) × \(booking.requiredProductId); the transaction bought \(quantity)", field: "productId")
        }
        if policy.accountTokenIsUserId, proven.kind.carriesAccountToken {
            guard let token = proven.appAccountToken else {
                throw DomainError(.unprocessable, .accountTokenMissing, "this app ties purchases to accounts: buy with appAccountToken set to the user id", field: "jwsRepresentation")
            }
            guard token.lowercased() == userId.lowercased() else {
                throw DomainError(.unprocessable, .accountTokenMismatch, "the transaction was bought by another account of this app", field: "jwsRepresentation")
            }
        }
        if policy.acceptsProduction, proven.environment == "Sandbox", !policy.sandboxTesters.contains(userId) {
            throw DomainError(.unprocessable, .sandboxNotAllowed, "Sandbox purchases pay for bookings of this app only for its listed testers", field: "jwsRepresentation")
        }
    }
}

import Foundation

extension BookingPurchaseRules {
    /// Whether a proven transaction may pay this booking for this user, before anything is written:
    /// the product must be the one the app says and the one the booking needs (any quantity: fewer
    /// units than needed pay part of it); a claimed transaction id must match; the account token (when the tenant ties it
    /// to users) must be the user's; a Sandbox purchase pays a Production tenant's booking only for an
    /// allow-listed tester. Revocation is decided with the stored state, by ``ClaimPolicy``.
    public static func check(
        _ proven: ProvenTransaction,
        claimedProductId: String,
        claimedTransactionId: String?,
        booking: Booking,
        userId: String,
        policy: PurchasePolicy
    ) throws(DomainError) {
        try PurchaseChecks.claimedProduct(proven, claimedProductId: claimedProductId)
        guard proven.productId == booking.requiredProductId else {
            throw DomainError(
                .unprocessable,
                .productMismatch,
                "booking \(booking.id) must be paid with \(booking.requiredProductId), not \(proven.productId)",
                field: "productId"
            )
        }
        try PurchaseChecks.claimedTransaction(proven, claimedTransactionId: claimedTransactionId)
        // Fewer units than the booking needs pay part of it (see ``BookingPurchaseRules/plan``).
        try PurchaseChecks.buyer(proven, userId: userId, policy: policy)
    }
}

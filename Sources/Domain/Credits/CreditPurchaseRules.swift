import Foundation

/// What a payment for a credit pack does, once ``ClaimPolicy`` found the transaction new and not
/// revoked: it always grants (the App Store has charged), the product's credits times the quantity.
public enum CreditPurchaseRules {
    /// Whether a proven transaction may be claimed as this credit product by this user.
    public static func check(
        _ proven: ProvenTransaction,
        claimedProductId: String,
        claimedTransactionId: String?,
        userId: String,
        policy: PurchasePolicy
    ) throws(DomainError) {
        try PurchaseChecks.claimedProduct(proven, claimedProductId: claimedProductId)
        try PurchaseChecks.claimedTransaction(proven, claimedTransactionId: claimedTransactionId)
        try PurchaseChecks.buyer(proven, userId: userId, policy: policy)
        // Apple sells at most 10 of a product at once; anything else was not signed by the App Store
        // (a tenant's test root can sign any number), and would overflow the credits granted.
        guard (1...maximumQuantity).contains(proven.quantity ?? 1) else {
            throw DomainError(.unprocessable, .malformed, "the transaction's quantity must be 1 to \(maximumQuantity)", field: "jwsRepresentation")
        }
    }

    /// The most units of one product the App Store sells in one transaction.
    public static let maximumQuantity = 10

    /// Credits a transaction of `product` grants (Apple's quantity, at least 1; at most Int64.max,
    /// although ``check(_:claimedProductId:claimedTransactionId:userId:policy:)`` refuses more than 10).
    public static func credits(_ product: CreditProduct, quantity: Int?) -> Int64 {
        let (total, overflow) = product.credits.multipliedReportingOverflow(by: Int64(min(max(1, quantity ?? 1), maximumQuantity)))
        return overflow ? Int64.max : total
    }

    /// The plan of a new, unrevoked claim: the purchase row, the grant (with its lot) and its event.
    public static func plan(_ claim: PurchaseClaim, product: CreditProduct, account: CreditAccount, negativeAllowed: Bool, now: Date) -> PurchasePlan
    {
        let credits = credits(product, quantity: claim.quantity)
        var purchase = Purchase(claim, id: RecordID.next(), status: .applied, outcomeCode: nil, now: now)
        purchase.credits = credits
        let change = CreditRules.grant(
            account,
            amount: credits,
            type: .purchase,
            actor: .user(claim.userId),
            productId: claim.productId,
            transactionId: claim.transactionId,
            purchaseId: purchase.id,
            negativeAllowed: negativeAllowed,
            now: now
        )
        let audit = AuditRecord(
            tenantId: claim.tenantId,
            actor: .user(claim.userId),
            action: .creditsPurchased,
            bookingId: nil,
            purchaseId: purchase.id,
            detail: [
                "transactionId": claim.transactionId, "productId": claim.productId, "creditType": product.creditType,
                "credits": String(credits),
            ],
            at: now
        )
        return PurchasePlan(
            outcome: .applied(purchase),
            purchase: purchase,
            proofHash: claim.proofHash,
            effects: [.credits(change)],
            audit: [audit],
            events: change.event(reason: .purchase).map { [$0] } ?? []
        )
    }
}

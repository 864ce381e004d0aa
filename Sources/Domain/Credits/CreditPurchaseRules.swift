import Foundation

/// What a payment for a credit pack does, once ``ClaimPolicy`` found the transaction new and not
/// revoked: it always grants (the App Store has charged), the product's credits times the quantity.
public enum CreditPurchaseRules {
    /// Whether a proven transaction may be claimed as this credit product by this user.
    public static func check(_ proven: ProvenTransaction, claimedProductId: String, claimedTransactionId: String?, userId: String,
                             policy: PurchasePolicy) throws(DomainError) {
        try PurchaseChecks.claimedProduct(proven, claimedProductId: claimedProductId)
        try PurchaseChecks.claimedTransaction(proven, claimedTransactionId: claimedTransactionId)
        try PurchaseChecks.buyer(proven, userId: userId, policy: policy)
    }

    /// Credits a transaction of `product` grants (Apple's quantity, at least 1).
    public static func credits(_ product: CreditProduct, quantity: Int?) -> Int64 {
        product.credits * Int64(max(1, quantity ?? 1))
    }

    /// The plan of a new, unrevoked claim: the purchase row, the grant (with its lot) and its event.
    public static func plan(_ claim: PurchaseClaim, product: CreditProduct, account: CreditAccount, negativeAllowed: Bool, now: Date) -> PurchasePlan {
        let credits = credits(product, quantity: claim.quantity)
        var purchase = Purchase(claim, id: RecordID.next(), status: .applied, outcomeCode: nil, now: now)
        purchase.credits = credits
        let change = CreditRules.grant(account, amount: credits, type: .purchase, actor: .user(claim.userId), productId: claim.productId,
                                       transactionId: claim.transactionId, purchaseId: purchase.id, negativeAllowed: negativeAllowed, now: now)
        let audit = AuditRecord(tenantId: claim.tenantId, actor: .user(claim.userId), action: .creditsPurchased, bookingId: nil, purchaseId: purchase.id,
                                detail: ["transactionId": claim.transactionId, "productId": claim.productId, "creditType": product.creditType,
                                         "credits": String(credits)], at: now)
        return PurchasePlan(outcome: .applied(purchase), purchase: purchase, proofHash: claim.proofHash, credits: change, audit: [audit],
                            events: change.event(reason: .purchase).map { [$0] } ?? [])
    }
}

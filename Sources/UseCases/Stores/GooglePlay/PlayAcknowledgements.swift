import Domain
import Foundation

/// What Berth owes Google for a Play purchase it applied, recorded in the unit of work that
/// applied it: a consumption for consumables (credit packs, bookings: Google then lets the user buy
/// the product again), an acknowledgement otherwise. A purchase Berth could not honour
/// (`needs_refund`) is deliberately left unacknowledged: Google refunds it after three days.
public enum PlayAcknowledgements {
    public static func action(for product: Product) -> PlayAcknowledgement.Action {
        if product.kind == .subscription { return .acknowledgeSubscription }
        return product.type == "Consumable" ? .consume : .acknowledgeProduct
    }

    public static func owe(for outcome: PurchaseOutcome, proven: ProvenTransaction, tenant: Tenant, tx: any StoreSession, now: Date) throws {
        guard proven.storeName == GooglePlaySettings.store, let package = proven.package, let product = tenant.product(id: proven.productId) else {
            return
        }
        let purchase: Purchase
        switch outcome {
        case .applied(let applied), .repeated(let applied): purchase = applied
        default: return
        }
        guard purchase.status == .applied else { return }
        _ = try tx.play.enqueue(
            PlayAcknowledgement(
                id: RecordID.next(),
                tenantId: tenant.id,
                packageName: package,
                googleProductId: product.googleProductId,
                purchaseToken: proven.transactionId,
                action: action(for: product),
                purchaseId: purchase.id,
                nextAttemptAt: now,
                purchasedAt: proven.purchasedAt ?? now,
                createdAt: now
            )
        )
    }
}

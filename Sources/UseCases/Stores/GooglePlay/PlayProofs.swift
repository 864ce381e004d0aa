import Crypto
import Domain
import Foundation
import GooglePlayAPI

/// What the Play Developer API says of a purchase token, as a ``ProvenTransaction`` (store
/// `google_play`; the token is its transaction id, so each token applies once) and, for
/// subscriptions, as subscription facts.
public enum PlayProofs {
    /// Reads the purchase of `product` that `token` names from Google. Refusals name `purchaseToken`.
    public static func prove(token: String, product: Product, package: String, runtime: PlayRuntime, now: Date) async throws -> ProvenTransaction {
        guard !token.isEmpty, token.utf8.count <= 1024 else {
            throw DomainError(.invalidInput, .invalidField, "purchaseToken must be 1...1024 characters", field: "purchaseToken")
        }
        do {
            var transaction: ProvenTransaction
            if product.kind == .subscription {
                transaction = try proven(
                    try await runtime.client.subscriptionPurchase(package: package, token: token),
                    token: token,
                    product: product,
                    now: now
                )
            } else {
                transaction = try proven(
                    try await runtime.client.productPurchase(package: package, productId: product.googleProductId, token: token),
                    token: token,
                    product: product
                )
            }
            transaction.package = package
            return transaction
        } catch let error as PlayError {
            if error.isTransient { throw DomainError.playUnavailable(error) }
            throw DomainError(
                .unprocessable,
                .purchaseTokenInvalid,
                "Google Play knows no purchase of \(product.googleProductId) in \(package) with this token (\(error.reason))",
                field: "purchaseToken"
            )
        }
    }

    public static func proofHash(_ token: String) -> String { SHA256.hash(data: Data(token.utf8)).hexString }

    static func proven(_ p: ProductPurchase, token: String, product: Product) throws -> ProvenTransaction {
        switch p.purchaseState {
        case 0, 1: break  // purchased; cancelled (kept as revoked: it never grants)
        case 2:
            throw DomainError(
                .conflict,
                .purchasePending,
                "the purchase waits for payment: Google Play's notification of the payment applies it for this user (or send it again once paid)",
                field: "purchaseToken"
            )
        default:
            // An answer that does not say "purchased" is not read as paid (T11).
            throw DomainError(.unprocessable, .purchaseTokenInvalid, "Google Play's answer does not say the purchase is paid", field: "purchaseToken")
        }
        // Google names the product in the request's path and may leave it out of the answer; one it names must be that product.
        if let id = p.productId, id != product.googleProductId {
            throw DomainError(.unprocessable, .productMismatch, "the purchase is of \(id), not \(product.googleProductId)", field: "productId")
        }
        let quantity = min(max(p.quantity ?? 1, 1), 1000)
        var proven = ProvenTransaction(
            transactionId: token,
            originalTransactionId: token,
            productId: product.id,
            environment: p.purchaseType == 0 ? .sandbox : .production,
            purchasedAt: p.purchasedAt,
            revoked: p.purchaseState == 1,
            appAccountToken: p.obfuscatedExternalAccountId,
            proofHash: proofHash(token),
            kind: .play,
            quantity: quantity,
            store: GooglePlaySettings.store
        )
        proven.orderId = p.orderId
        return proven
    }

    static func proven(_ s: SubscriptionPurchaseV2, token: String, product: Product, now: Date) throws -> ProvenTransaction {
        switch s.subscriptionState {
        case "SUBSCRIPTION_STATE_PENDING":
            throw DomainError(
                .conflict,
                .purchasePending,
                "the subscription waits for payment; send it again once Google Play says it is paid",
                field: "purchaseToken"
            )
        case "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED", nil, "SUBSCRIPTION_STATE_UNSPECIFIED":
            throw DomainError(.unprocessable, .purchaseTokenInvalid, "the subscription was never paid", field: "purchaseToken")
        default:
            break
        }
        guard let facts = facts(s, token: token, product: product, now: now) else {
            throw DomainError(
                .unprocessable,
                .productMismatch,
                "the subscription is not of \(product.googleProductId)\(product.google?.basePlanIds.map { " (base plans \($0.joined(separator: ", ")))" } ?? "")",
                field: "productId"
            )
        }
        var proven = ProvenTransaction(
            transactionId: token,
            originalTransactionId: token,
            productId: product.id,
            environment: facts.environment,
            purchasedAt: s.startedAt,
            revoked: false,
            appAccountToken: s.externalAccountIdentifiers?.obfuscatedExternalAccountId,
            proofHash: proofHash(token),
            kind: .play,
            quantity: 1,
            subscription: facts,
            store: GooglePlaySettings.store
        )
        proven.orderId = s.latestOrderId
        proven.priceMilliunits = facts.transaction?.priceMilliunits
        proven.currency = facts.transaction?.currency
        return proven
    }

    /// The subscription facts of a subscriptionsv2 answer for the catalog's `product` (nil when no
    /// line item is that product). Read at `now`, which orders them: Google's answer is the whole
    /// current state. `notification` adds what only the push says (a revocation).
    public static func facts(_ s: SubscriptionPurchaseV2, token: String, product: Product, now: Date, revoked: Bool = false) -> SubscriptionFacts? {
        guard
            let item = s.lineItems?.first(where: { item in
                guard item.productId == product.googleProductId else { return false }
                guard let plans = product.google?.basePlanIds else { return true }
                return item.offerDetails?.basePlanId.map(plans.contains) ?? false
            })
        else { return nil }
        let state = s.subscriptionState ?? ""
        let expires = item.expiryTime.flatMap(RFC3339.date)
        let start = s.startedAt ?? now
        let order = item.latestSuccessfulOrderId ?? s.latestOrderId ?? token
        // A renewal's order id ends in "..N"; Google does not say when its period began, so the read's time orders it.
        // (never before the subscription's start; a later expiry then orders two reads of the same moment).
        let periodStart = order.contains("..") ? max(start, min(now, expires ?? now)) : start
        let inTrouble = state == "SUBSCRIPTION_STATE_IN_GRACE_PERIOD" || state == "SUBSCRIPTION_STATE_ON_HOLD"
        var transaction = SubscriptionFacts.TransactionFacts(
            transactionId: order,
            productId: product.id,
            purchasedAt: periodStart,
            expiresAt: expires,
            originalPurchasedAt: start,
            revokedAt: revoked ? now : nil
        )
        if let price = item.autoRenewingPlan?.recurringPrice, let milliunits = price.milliunits, let currency = price.currencyCode {
            transaction.priceMilliunits = milliunits
            transaction.currency = currency.uppercased()
        }
        let renewal = SubscriptionFacts.RenewalFacts(
            autoRenew: item.autoRenewingPlan?.autoRenewEnabled ?? false,
            autoRenewProductId: product.id,
            inBillingRetry: inTrouble,
            gracePeriodExpiresAt: state == "SUBSCRIPTION_STATE_IN_GRACE_PERIOD" ? expires : nil
        )
        let type: NotificationType? = revoked ? .revoke : (state == "SUBSCRIPTION_STATE_EXPIRED" ? .expired : nil)
        var facts = SubscriptionFacts(
            originalTransactionId: token,
            environment: s.testPurchase != nil ? .sandbox : .production,
            signedAt: now,
            transaction: transaction,
            renewal: renewal,
            source: "google_play",
            notificationType: type,
            store: GooglePlaySettings.store
        )
        facts.replaces = s.linkedPurchaseToken.flatMap { $0.isEmpty || $0 == token ? nil : $0 }
        return facts
    }
}

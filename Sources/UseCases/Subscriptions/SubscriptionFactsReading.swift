import AppStoreAPI
import AppleSignedData
import Domain
import Foundation

/// Reading ``SubscriptionFacts`` out of Apple's verified data, whatever the source.
public enum SubscriptionFactsReading {
    /// A StoreKit 2 transaction (from the app, the App Store Server API or a notification), with its
    /// renewal info when the source carries one. Nil for transactions that are not subscription periods.
    public static func facts(
        transaction: TransactionPayload?,
        renewal: RenewalInfoPayload?,
        signedAt fallback: Date,
        source: String,
        notificationType: Domain.NotificationType? = nil,
        subtype: String? = nil
    ) -> SubscriptionFacts? {
        let periodFacts = transaction.flatMap(period(from:))
        guard let otid = transaction?.originalTransactionId ?? renewal?.originalTransactionId else { return nil }
        guard periodFacts != nil || renewal != nil else { return nil }
        let environment = (transaction?.environment ?? renewal?.environment).map(StoreEnvironment.init) ?? .production
        let signed = [transaction?.signedDate?.date, renewal?.signedDate?.date].compactMap { $0 }.max() ?? fallback
        return SubscriptionFacts(
            originalTransactionId: otid,
            environment: environment,
            signedAt: signed,
            transaction: periodFacts,
            renewal: renewal.map(renewalFacts(from:)),
            source: source,
            notificationType: notificationType,
            notificationSubtype: subtype
        )
    }

    static func period(from t: TransactionPayload) -> SubscriptionFacts.TransactionFacts? {
        guard let id = t.transactionId, let product = t.productId, let expires = t.expiresDate else { return nil }
        return SubscriptionFacts.TransactionFacts(
            transactionId: id,
            productId: product,
            purchasedAt: t.purchaseDate?.date ?? expires.date,
            expiresAt: expires.date,
            originalPurchasedAt: t.originalPurchaseDate?.date,
            revokedAt: t.revocationDate?.date,
            upgraded: t.isUpgraded ?? false,
            familyShared: t.inAppOwnershipType.map { $0 == .familyShared }
        )
    }

    static func renewalFacts(from r: RenewalInfoPayload) -> SubscriptionFacts.RenewalFacts {
        SubscriptionFacts.RenewalFacts(
            autoRenew: r.autoRenewStatus.map { $0 == .on },
            autoRenewProductId: r.autoRenewProductId,
            inBillingRetry: r.isInBillingRetryPeriod,
            gracePeriodExpiresAt: r.gracePeriodExpiresDate?.date,
            expirationIntent: r.expirationIntent?.rawValue,
            priceIncreaseStatus: r.priceIncreaseStatus?.rawValue,
            // Apple leaves the field out when no win-back offer applies: renewal info always says.
            eligibleWinBackOfferIds: r.eligibleWinBackOfferIds ?? []
        )
    }

    /// The subscriptions a receipt shows: per originalTransactionId, its latest period (receipts carry no renewal info).
    public static func facts(receipt: AppReceipt, environment: StoreEnvironment, signedAt: Date, source: String) -> [SubscriptionFacts] {
        var latest: [String: (entry: AppReceipt.InAppPurchase, transactionId: String, productId: String)] = [:]
        for entry in receipt.inAppPurchases where entry.subscriptionExpirationDate != nil {
            guard let transactionId = entry.transactionId, let productId = entry.productId else { continue }
            let otid = entry.originalTransactionId ?? transactionId
            if let known = latest[otid],
                (known.entry.subscriptionExpirationDate?.date ?? .distantPast) >= (entry.subscriptionExpirationDate?.date ?? .distantPast)
            {
                continue
            }
            latest[otid] = (entry, transactionId, productId)
        }
        return latest.sorted { $0.key < $1.key }.map { otid, found in
            let entry = found.entry
            return SubscriptionFacts(
                originalTransactionId: otid,
                environment: environment,
                signedAt: signedAt,
                transaction: .init(
                    transactionId: found.transactionId,
                    productId: found.productId,
                    purchasedAt: entry.purchaseDate?.date ?? signedAt,
                    expiresAt: entry.subscriptionExpirationDate?.date,
                    originalPurchasedAt: entry.originalPurchaseDate?.date,
                    revokedAt: entry.cancellationDate?.date
                ),
                renewal: nil,
                source: source
            )
        }
    }

    /// What Apple's verifyReceipt answered: per originalTransactionId, the latest period from
    /// latest_receipt_info and the renewal info from pending_renewal_info.
    public static func facts(verifyReceipt response: VerifyReceiptClient.Response, signedAt: Date) -> [SubscriptionFacts] {
        let environment: StoreEnvironment = response.environment?.lowercased() == "sandbox" ? .sandbox : .production
        func date(_ ms: String?) -> Date? { ms.flatMap(Int64.init).map(Date.init(epochMilliseconds:)) }
        var latest: [String: (entry: VerifyReceiptClient.Response.Entry, transactionId: String, productId: String)] = [:]
        for entry in (response.latestReceiptInfo ?? response.receipt?.inApp ?? []) where entry.expiresDateMs != nil {
            guard let transactionId = entry.transactionId, let productId = entry.productId else { continue }
            let otid = entry.originalTransactionId ?? transactionId
            if let known = latest[otid], (date(known.entry.expiresDateMs) ?? .distantPast) >= (date(entry.expiresDateMs) ?? .distantPast) { continue }
            latest[otid] = (entry, transactionId, productId)
        }
        let renewals = Dictionary(
            (response.pendingRenewalInfo ?? []).compactMap { r in r.originalTransactionId.map { ($0, r) } },
            uniquingKeysWith: { a, _ in a }
        )
        return latest.sorted { $0.key < $1.key }.map { otid, found in
            let entry = found.entry
            let renewal = renewals[otid].map { r in
                SubscriptionFacts.RenewalFacts(
                    autoRenew: r.autoRenewStatus.map { $0 == "1" },
                    autoRenewProductId: r.autoRenewProductId,
                    inBillingRetry: r.isInBillingRetryPeriod.map { $0 == "1" },
                    gracePeriodExpiresAt: date(r.gracePeriodExpiresDateMs),
                    expirationIntent: r.expirationIntent.flatMap(Int.init)
                )
            }
            return SubscriptionFacts(
                originalTransactionId: otid,
                environment: environment,
                signedAt: signedAt,
                transaction: .init(
                    transactionId: found.transactionId,
                    productId: found.productId,
                    purchasedAt: date(entry.purchaseDateMs) ?? signedAt,
                    expiresAt: date(entry.expiresDateMs),
                    revokedAt: date(entry.cancellationDateMs)
                ),
                renewal: renewal,
                source: "verify_receipt"
            )
        }
    }
}

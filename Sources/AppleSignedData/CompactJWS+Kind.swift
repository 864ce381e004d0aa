import Foundation

/// Which Apple payload a JWS carries. A caller that knows (every route of Berth does; `berth verify
/// --kind`) says so; ``SignedDataVerifier/verifyAny(_:expecting:)`` tells it from the fields only one
/// kind has, and refuses when the payload carries none of them (Apple's minimal payloads, e.g.
/// `{"environment":"Sandbox","signedDate":…}`, fit a transaction and renewal info alike).
public enum SignedPayloadKind: String, CaseIterable, Sendable {
    case transaction
    case renewalInfo = "renewal-info"
    case notification
    case appTransaction = "app-transaction"

    /// The names `berth verify --kind` takes.
    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// Members only a payload of that kind has (Apple's models: `JWSTransactionDecodedPayload`,
    /// `JWSRenewalInfoDecodedPayload`, `ResponseBodyV2DecodedPayload`, `AppTransaction`).
    static let markers: [(SignedPayloadKind, Set<String>)] = [
        (.notification, ["notificationType", "notificationUUID", "subtype", "summary", "externalPurchaseToken"]),
        (
            .appTransaction,
            [
                "receiptType", "applicationVersion", "originalApplicationVersion", "receiptCreationDate", "preorderDate",
                "versionExternalIdentifier", "originalPlatform",
            ]
        ),
        (
            .transaction,
            [
                "transactionId", "purchaseDate", "quantity", "type", "inAppOwnershipType", "webOrderLineItemId", "expiresDate",
                "revocationDate", "revocationReason", "isUpgraded", "storefront", "storefrontId", "transactionReason",
                "subscriptionGroupIdentifier",
            ]
        ),
        (
            .renewalInfo,
            [
                "autoRenewProductId", "autoRenewStatus", "renewalDate", "expirationIntent", "isInBillingRetryPeriod",
                "priceIncreaseStatus", "gracePeriodExpiresDate", "recentSubscriptionStartDate", "renewalPrice",
                "eligibleWinBackOfferIds",
            ]
        ),
    ]
}

extension CompactJWS {
    /// The kind told from the payload's member names (their values are judged by the kind's decoding).
    func payloadKind() throws(SignedDataError) -> SignedPayloadKind {
        do {
            try StrictJSON.check(payload)
        } catch {
            throw SignedDataError(.malformed, error == .duplicateKey ? "payload names a member twice" : "payload is not JSON (or nests too deep)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: payload) as? [String: Any] else {
            throw SignedDataError(.malformed, "payload is JSON but not an object")
        }
        let members = Set(object.keys)
        for (kind, markers) in SignedPayloadKind.markers where !members.isDisjoint(with: markers) {
            return kind
        }
        throw SignedDataError(
            .malformed,
            "payload has none of the members that tell a transaction, renewal info, notification or app transaction apart; name the kind (berth verify --kind \(SignedPayloadKind.names.replacingOccurrences(of: ", ", with: "|")))"
        )
    }
}

import AppleSignedData
import Crypto
import Foundation

/// How to shape the JWS header, including deliberately wrong shapes for negative tests.
public struct JWSHeaderOptions: Sendable {
    public enum Chain: Sendable {
        /// leaf, intermediate, root of the signing CA (what Apple sends).
        case standard
        /// No x5c member at all.
        case omitted
        /// Exactly these base64 DER entries.
        case custom([String])
    }

    public var alg: String
    public var chain: Chain

    public init(alg: String = "ES256", chain: Chain = .standard) {
        self.alg = alg
        self.chain = chain
    }

    public static let standard = JWSHeaderOptions()
}

extension TestCA {
    /// Signs any JSON-encodable payload as a compact JWS with this CA's leaf key.
    public func signJWS(_ payload: some Encodable, header options: JWSHeaderOptions = .standard) throws -> String {
        var header: [String: JSONValue] = ["alg": .string(options.alg)]
        switch options.chain {
        case .standard: header["x5c"] = .array(try x5c.map(JSONValue.string))
        case .omitted: break
        case .custom(let entries): header["x5c"] = .array(entries.map(JSONValue.string))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try signJWS(payloadBytes: try encoder.encode(payload), headerBytes: try encoder.encode(header))
    }

    /// Signs payload bytes exactly as given (hostile shapes: duplicate members, deep nesting),
    /// with this CA's standard header unless `headerBytes` is given.
    public func signJWS(payloadBytes: Data, headerBytes: Data? = nil) throws -> String {
        let standard = try JSONEncoder().encode(["alg": JSONValue.string("ES256"), "x5c": .array(try x5c.map(JSONValue.string))])
        let headerPart = Base64URL.encode(headerBytes ?? standard)
        let payloadPart = Base64URL.encode(payloadBytes)
        let signingInput = "\(headerPart).\(payloadPart)"
        let signature = try leafKey.signature(for: Data(signingInput.utf8))
        return "\(signingInput).\(Base64URL.encode(signature.rawRepresentation))"
    }

    /// Signs a transaction as StoreKit 2 would hand it to the app (`jwsRepresentation`).
    public func signTransaction(_ payload: TransactionPayload, header: JWSHeaderOptions = .standard) throws -> String {
        try signJWS(payload, header: header)
    }

    /// Signs subscription renewal info.
    public func signRenewalInfo(_ payload: RenewalInfoPayload, header: JWSHeaderOptions = .standard) throws -> String {
        try signJWS(payload, header: header)
    }

    /// Signs an app transaction.
    public func signAppTransaction(_ payload: AppTransactionPayload, header: JWSHeaderOptions = .standard) throws -> String {
        try signJWS(payload, header: header)
    }

    /// Signs a notification's `signedPayload`. Nested transaction and renewal info are given as
    /// already-signed JWS in `payload.data` (see ``notification(type:subtype:bundleId:appAppleId:environment:transaction:renewalInfo:signedDate:)``).
    public func signNotification(_ payload: NotificationPayload, header: JWSHeaderOptions = .standard) throws -> String {
        try signJWS(payload, header: header)
    }

    /// Builds and signs a notification whose nested transaction and renewal info are signed by this CA;
    /// `data.status` is the subscription's status at `signedDate` (none for other products), as Apple sends it.
    public func signNotification(
        type: NotificationType,
        subtype: NotificationSubtype? = nil,
        uuid: UUID = UUID(),
        bundleId: String,
        appAppleId: Int64? = nil,
        environment: AppStoreEnvironment = .sandbox,
        transaction: TransactionPayload? = nil,
        renewalInfo: RenewalInfoPayload? = nil,
        signedDate: Date = Date()
    ) throws -> String {
        try signNotification(
            type: type,
            subtype: subtype,
            uuid: uuid,
            bundleId: bundleId,
            appAppleId: appAppleId,
            environment: environment,
            signedTransactionInfo: try transaction.map { try signTransaction($0) },
            signedRenewalInfo: try renewalInfo.map { try signRenewalInfo($0) },
            signedDate: signedDate,
            status: transaction.flatMap { SubscriptionStatus.of($0, renewalInfo: renewalInfo, at: signedDate) }
        )
    }

    /// Builds and signs a notification around already-signed transaction and renewal info
    /// (which may come from another CA, for negative tests). A `TEST` notification carries what
    /// Apple's do: the app's ids and environment, no `bundleVersion` and no signed data.
    public func signNotification(
        type: NotificationType,
        subtype: NotificationSubtype? = nil,
        uuid: UUID = UUID(),
        bundleId: String,
        appAppleId: Int64? = nil,
        environment: AppStoreEnvironment = .sandbox,
        signedTransactionInfo: String?,
        signedRenewalInfo: String?,
        signedDate: Date = Date(),
        status: SubscriptionStatus? = nil
    ) throws -> String {
        let payload = NotificationPayload(
            notificationType: type,
            subtype: subtype,
            notificationUUID: uuid.uuidString.lowercased(),
            data: NotificationData(
                environment: environment,
                appAppleId: appAppleId,
                bundleId: bundleId,
                bundleVersion: type == .test ? nil : "1",
                signedTransactionInfo: signedTransactionInfo,
                signedRenewalInfo: signedRenewalInfo,
                status: status
            ),
            version: "2.0",
            signedDate: AppleTimestamp(signedDate)
        )
        return try signNotification(payload)
    }
}

extension TransactionPayload {
    /// A plausible purchase of one product, signed now, for tests.
    public static func testPurchase(
        bundleId: String,
        productId: String,
        transactionId: String = TestIDs.transactionId(),
        originalTransactionId: String? = nil,
        environment: AppStoreEnvironment = .sandbox,
        type: TransactionType = .consumable,
        appAccountToken: UUID? = nil,
        quantity: Int = 1,
        price: Int64? = nil,
        currency: String? = nil,
        purchaseDate: Date = Date(),
        signedDate: Date? = nil,
        expiresDate: Date? = nil,
        appTransactionId: String? = nil
    ) -> TransactionPayload {
        let purchased = AppleTimestamp(purchaseDate)
        let subscription = type == .autoRenewableSubscription
        var payload = TransactionPayload(
            originalTransactionId: originalTransactionId ?? transactionId,
            transactionId: transactionId,
            webOrderLineItemId: subscription ? TestIDs.transactionId() : nil,
            bundleId: bundleId,
            productId: productId,
            purchaseDate: purchased,
            originalPurchaseDate: purchased,
            expiresDate: expiresDate.map(AppleTimestamp.init),
            quantity: quantity,
            type: type,
            appAccountToken: appAccountToken?.uuidString.lowercased(),
            inAppOwnershipType: .purchased,
            signedDate: AppleTimestamp(signedDate ?? purchaseDate),
            environment: environment,
            storefront: "ITA",
            storefrontId: "143450",
            transactionReason: .purchase,
            currency: currency,
            price: price
        )
        // What Apple's current payloads carry besides: the subscription group of an auto-renewable
        // product and the customer's app transaction id (stable per Apple Account and app).
        payload.subscriptionGroupIdentifier = subscription ? TestIDs.subscriptionGroup(bundleId: bundleId) : nil
        payload.appTransactionId = appTransactionId ?? TestIDs.appTransactionId(appAccountToken: appAccountToken, bundleId: bundleId)
        return payload
    }
}

extension RenewalInfoPayload {
    /// The renewal info Apple pairs with a subscription transaction: the same ids, product, renewal
    /// date (the transaction's expiry), the start of the run of periods, the token and price.
    public static func testRenewal(
        for transaction: TransactionPayload,
        autoRenew: Bool = true,
        autoRenewProductId: String? = nil,
        signedDate: Date = Date()
    ) -> RenewalInfoPayload {
        RenewalInfoPayload(
            originalTransactionId: transaction.originalTransactionId,
            autoRenewProductId: autoRenewProductId ?? transaction.productId,
            productId: transaction.productId,
            autoRenewStatus: autoRenew ? .on : .off,
            signedDate: AppleTimestamp(signedDate),
            environment: transaction.environment,
            recentSubscriptionStartDate: transaction.originalPurchaseDate ?? transaction.purchaseDate,
            renewalDate: transaction.expiresDate,
            currency: transaction.currency,
            renewalPrice: transaction.price,
            appAccountToken: transaction.appAccountToken,
            appTransactionId: transaction.appTransactionId
        )
    }
}

extension SubscriptionStatus {
    /// The status a notification's `data.status` gives for an auto-renewable transaction at `date`
    /// (nil for other products, which Apple sends without one).
    public static func of(_ transaction: TransactionPayload, renewalInfo: RenewalInfoPayload?, at date: Date) -> SubscriptionStatus? {
        guard transaction.type == .autoRenewableSubscription else { return nil }
        if transaction.revocationDate != nil { return .revoked }
        if let expires = transaction.expiresDate?.date, expires > date { return .active }
        if renewalInfo?.isInBillingRetryPeriod == true {
            if let grace = renewalInfo?.gracePeriodExpiresDate?.date, grace > date { return .billingGracePeriod }
            return .billingRetry
        }
        return .expired
    }
}

extension TransactionPayload {
    /// Fills what a hand-written test payload leaves out: bundle id, environment, ids, dates.
    public func completedForTesting(bundleId: String, environment: AppStoreEnvironment, now: Date) -> TransactionPayload {
        var payload = self
        payload.bundleId = payload.bundleId ?? bundleId
        payload.environment = payload.environment ?? environment
        payload.transactionId = payload.transactionId ?? TestIDs.transactionId()
        payload.originalTransactionId = payload.originalTransactionId ?? payload.transactionId
        payload.purchaseDate = payload.purchaseDate ?? AppleTimestamp(now)
        payload.originalPurchaseDate = payload.originalPurchaseDate ?? payload.purchaseDate
        payload.signedDate = payload.signedDate ?? AppleTimestamp(now)
        payload.quantity = payload.quantity ?? 1
        payload.type = payload.type ?? .consumable
        payload.inAppOwnershipType = payload.inAppOwnershipType ?? .purchased
        if payload.type == .autoRenewableSubscription {
            payload.subscriptionGroupIdentifier =
                payload.subscriptionGroupIdentifier ?? TestIDs.subscriptionGroup(bundleId: payload.bundleId ?? bundleId)
            payload.webOrderLineItemId = payload.webOrderLineItemId ?? TestIDs.transactionId()
        }
        payload.appTransactionId =
            payload.appTransactionId
            ?? TestIDs.appTransactionId(
                appAccountToken: payload.appAccountToken.flatMap(UUID.init(uuidString:)),
                bundleId: payload.bundleId ?? bundleId
            )
        payload.storefront = payload.storefront ?? "ITA"
        payload.storefrontId = payload.storefrontId ?? "143450"
        payload.transactionReason = payload.transactionReason ?? .purchase
        return payload
    }
}

extension RenewalInfoPayload {
    /// Fills what a hand-written test payload leaves out: environment and signed date, and from the
    /// transaction it goes with (when known) its ids, product, renewal date and start.
    public func completedForTesting(environment: AppStoreEnvironment, now: Date, transaction: TransactionPayload? = nil) -> RenewalInfoPayload {
        var payload = self
        payload.environment = payload.environment ?? environment
        payload.signedDate = payload.signedDate ?? AppleTimestamp(now)
        if let transaction {
            payload.originalTransactionId = payload.originalTransactionId ?? transaction.originalTransactionId
            payload.productId = payload.productId ?? transaction.productId
            payload.autoRenewProductId = payload.autoRenewProductId ?? payload.productId
            payload.renewalDate = payload.renewalDate ?? transaction.expiresDate
            payload.recentSubscriptionStartDate = payload.recentSubscriptionStartDate ?? transaction.originalPurchaseDate ?? transaction.purchaseDate
            payload.appAccountToken = payload.appAccountToken ?? transaction.appAccountToken
            payload.appTransactionId = payload.appTransactionId ?? transaction.appTransactionId
        }
        payload.autoRenewProductId = payload.autoRenewProductId ?? payload.productId
        // Apple always says whether the subscription renews; left out, it does.
        payload.autoRenewStatus = payload.autoRenewStatus ?? .on
        return payload
    }
}

/// Identifiers shaped like Apple's.
public enum TestIDs {
    /// A subscription group id (8 digits, like App Store Connect's), the same for every product of one app.
    public static func subscriptionGroup(bundleId: String) -> String {
        var hash: UInt32 = 2_166_136_261
        for byte in bundleId.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return String(20_000_000 + hash % 10_000_000)
    }

    /// An app transaction id (Apple's are 18-19 digits): stable for one appAccountToken and app, random otherwise.
    public static func appTransactionId(appAccountToken: UUID? = nil, bundleId: String = "") -> String {
        guard let token = appAccountToken else { return String(UInt64.random(in: 700_000_000_000_000_000...799_999_999_999_999_999)) }
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in (token.uuidString.lowercased() + bundleId).utf8 { hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211 }
        return String(700_000_000_000_000_000 + hash % 100_000_000_000_000_000)
    }

    /// A 16-digit numeric id in the range Apple uses for sandbox transactions.
    public static func transactionId() -> String {
        String(UInt64.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))
    }
}

/// Just enough JSON to write a JWS header with an arbitrary shape.
enum JSONValue: Encodable {
    case string(String)
    case array([JSONValue])

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .array(let values): try container.encode(values)
        }
    }
}

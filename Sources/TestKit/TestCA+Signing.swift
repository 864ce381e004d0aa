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

    /// Builds and signs a notification whose nested transaction and renewal info are signed by this CA.
    public func signNotification(
        type: NotificationType, subtype: NotificationSubtype? = nil, uuid: UUID = UUID(),
        bundleId: String, appAppleId: Int64? = nil, environment: AppStoreEnvironment = .sandbox,
        transaction: TransactionPayload? = nil, renewalInfo: RenewalInfoPayload? = nil,
        signedDate: Date = Date()
    ) throws -> String {
        try signNotification(
            type: type, subtype: subtype, uuid: uuid, bundleId: bundleId, appAppleId: appAppleId,
            environment: environment, signedTransactionInfo: try transaction.map { try signTransaction($0) },
            signedRenewalInfo: try renewalInfo.map { try signRenewalInfo($0) }, signedDate: signedDate
        )
    }

    /// Builds and signs a notification around already-signed transaction and renewal info
    /// (which may come from another CA, for negative tests).
    public func signNotification(
        type: NotificationType, subtype: NotificationSubtype? = nil, uuid: UUID = UUID(),
        bundleId: String, appAppleId: Int64? = nil, environment: AppStoreEnvironment = .sandbox,
        signedTransactionInfo: String?, signedRenewalInfo: String?, signedDate: Date = Date()
    ) throws -> String {
        let payload = NotificationPayload(
            notificationType: type, subtype: subtype, notificationUUID: uuid.uuidString.lowercased(),
            data: NotificationData(
                environment: environment, appAppleId: appAppleId, bundleId: bundleId, bundleVersion: "1",
                signedTransactionInfo: signedTransactionInfo, signedRenewalInfo: signedRenewalInfo
            ),
            version: "2.0", signedDate: AppleTimestamp(signedDate)
        )
        return try signNotification(payload)
    }
}

extension TransactionPayload {
    /// A plausible purchase of one product, signed now, for tests.
    public static func testPurchase(
        bundleId: String, productId: String, transactionId: String = TestIDs.transactionId(),
        originalTransactionId: String? = nil, environment: AppStoreEnvironment = .sandbox,
        type: TransactionType = .consumable, appAccountToken: UUID? = nil, quantity: Int = 1,
        price: Int64? = nil, currency: String? = nil, purchaseDate: Date = Date(), signedDate: Date? = nil,
        expiresDate: Date? = nil
    ) -> TransactionPayload {
        let purchased = AppleTimestamp(purchaseDate)
        return TransactionPayload(
            originalTransactionId: originalTransactionId ?? transactionId, transactionId: transactionId,
            webOrderLineItemId: type == .autoRenewableSubscription ? TestIDs.transactionId() : nil,
            bundleId: bundleId, productId: productId,
            purchaseDate: purchased, originalPurchaseDate: purchased,
            expiresDate: expiresDate.map(AppleTimestamp.init), quantity: quantity, type: type,
            appAccountToken: appAccountToken?.uuidString.lowercased(), inAppOwnershipType: .purchased,
            signedDate: AppleTimestamp(signedDate ?? purchaseDate), environment: environment,
            storefront: "ITA", storefrontId: "143450", transactionReason: .purchase,
            currency: currency, price: price
        )
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
        return payload
    }
}

extension RenewalInfoPayload {
    /// Fills what a hand-written test payload leaves out: environment and signed date.
    public func completedForTesting(environment: AppStoreEnvironment, now: Date) -> RenewalInfoPayload {
        var payload = self
        payload.environment = payload.environment ?? environment
        payload.signedDate = payload.signedDate ?? AppleTimestamp(now)
        return payload
    }
}

/// Identifiers shaped like Apple's.
public enum TestIDs {
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

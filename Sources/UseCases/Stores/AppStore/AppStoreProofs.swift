import AppStoreAPI
import AppleSignedData
import Crypto
import Domain
import Foundation
import Logging

/// A verified app receipt: every purchase in it, proven, and what it says of the app.
public struct ProvenReceipt: Sendable {
    public var transactions: [ProvenTransaction]
    public var bundleId: String?
    public var environment: StoreEnvironment
    public var originalApplicationVersion: String?
}

/// The App Store's proving: a signed transaction or a receipt verified offline, a bare id through
/// Apple's API. Refusals are ``DomainError``s naming the proof's field.
public struct AppStoreProofs: Sendable {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    func provenByJWS(_ jws: String, runtime: TenantRuntime) async throws -> ProvenTransaction {
        let proofHash = SHA256.hash(data: Data(jws.utf8)).hexString
        let transaction: TransactionPayload
        if let verified = runtime.appStore.verifiedProofs.transactions[proofHash] {
            transaction = verified
        } else {
            do {
                transaction = try await runtime.appStore.verifier.verifyTransaction(jws, expecting: runtime.appStore.expectations).payload
            } catch {
                logger.info(
                    "verify-purchase refused",
                    metadata: ["jws.sha256": .string(String(proofHash.prefix(16))), "code": .string(error.code.rawValue)]
                )
                throw DomainError(error, field: "jwsRepresentation")
            }
            runtime.appStore.verifiedProofs.transactions.insert(transaction, for: proofHash)
        }
        guard let proven = Self.proven(transaction, proofHash: proofHash) else {
            throw DomainError(.invalidInput, .malformed, "the transaction lacks transactionId, productId or environment", field: "jwsRepresentation")
        }
        return proven
    }

    /// What a verified signed transaction proves (nil when it lacks its id, product or environment):
    /// a JWS the app sent, or the one nested in a notification.
    public static func proven(_ transaction: TransactionPayload, proofHash: String) -> ProvenTransaction? {
        guard let transactionId = transaction.transactionId, let productId = transaction.productId, let environment = transaction.environment else {
            return nil
        }
        let familyShared = transaction.inAppOwnershipType == .familyShared
        var proven = ProvenTransaction(
            transactionId: transactionId,
            originalTransactionId: transaction.originalTransactionId ?? transactionId,
            productId: productId,
            environment: StoreEnvironment(environment),
            purchasedAt: transaction.purchaseDate?.date,
            revoked: transaction.revocationDate != nil,
            appAccountToken: familyShared ? nil : transaction.appAccountToken,
            proofHash: proofHash,
            kind: .jws,
            priceMilliunits: transaction.price,
            currency: transaction.currency,
            quantity: transaction.quantity,
            subscription: SubscriptionFactsReading.facts(transaction: transaction, renewal: nil, signedAt: Date(), source: "jws")
        )
        if familyShared { proven.familyShared = true }
        return proven
    }

    /// A base64 app receipt, verified offline; `transactionId` picks its entry, else the newest entry
    /// of the product the app says it bought.
    func provenByReceipt(
        _ base64: String,
        transactionId: String?,
        productId: String?,
        runtime: TenantRuntime
    ) async throws -> ProvenTransaction {
        let receipt = try await proveReceipt(base64, runtime: runtime)
        if let transactionId {
            guard let match = receipt.transactions.first(where: { $0.transactionId == transactionId }) else {
                throw DomainError(
                    .unprocessable,
                    .transactionNotInReceipt,
                    "the receipt holds no transaction \(transactionId)",
                    field: "transactionId"
                )
            }
            return match
        }
        // Without a product either, the newest purchase of any product.
        guard
            let newest = receipt.transactions.filter({ productId == nil || $0.productId == productId })
                .max(by: { ($0.purchasedAt ?? .distantPast) < ($1.purchasedAt ?? .distantPast) })
        else {
            if let productId {
                throw DomainError(.unprocessable, .productMismatch, "the receipt holds no purchase of \(productId)", field: "receipt")
            }
            // A genuine receipt of an app that has sold nothing to this device yet.
            throw DomainError(.unprocessable, .receiptWithoutPurchases, "the receipt holds no in-app purchase", field: "receipt")
        }
        return newest
    }

    /// A base64 app receipt verified offline, with every purchase it holds proven (in the receipt's
    /// order): what a validator needs to apply all of them, not only the one the app names.
    public func proveReceipt(_ base64: String, runtime: TenantRuntime) async throws -> ProvenReceipt {
        let verified: VerifiedReceipt
        let presented = SHA256.hash(data: Data(base64.utf8)).hexString
        if let known = runtime.appStore.verifiedProofs.receipts[presented] {
            verified = known
        } else {
            do {
                verified = try await runtime.appStore.receiptVerifier.verify(base64: base64, expecting: runtime.appStore.expectations)
            } catch {
                logger.info(
                    "verify-purchase refused",
                    metadata: [
                        "receipt.sha256": .string(String(presented.prefix(16))),
                        "code": .string(error.code.rawValue),
                    ]
                )
                throw DomainError(error, field: "receipt")
            }
            runtime.appStore.verifiedProofs.receipts.insert(verified, for: presented)
        }
        // Old receipts do not say their environment; then it must be the only one the app accepts.
        let accepted = runtime.tenant.apple.environments
        guard let environment = verified.receipt.environment.map(StoreEnvironment.init) ?? (accepted.count == 1 ? accepted.first : nil) else {
            throw DomainError(.unprocessable, .wrongEnvironment, "the receipt does not say whether it is Production or Sandbox", field: "receipt")
        }
        let facts = SubscriptionFactsReading.facts(
            receipt: verified.receipt,
            environment: environment,
            signedAt: verified.receipt.creationDate?.date ?? Date(),
            source: "receipt"
        )
        var transactions: [ProvenTransaction] = []
        for entry in verified.receipt.inAppPurchases {
            guard let id = entry.transactionId, let entryProduct = entry.productId else {
                throw DomainError(.invalidInput, .malformed, "the receipt entry lacks its transaction or product id", field: "receipt")
            }
            let original = entry.originalTransactionId ?? id
            transactions.append(
                ProvenTransaction(
                    transactionId: id,
                    originalTransactionId: original,
                    productId: entryProduct,
                    environment: environment,
                    purchasedAt: entry.purchaseDate?.date,
                    revoked: entry.cancellationDate != nil,
                    appAccountToken: nil,
                    proofHash: verified.sha256,
                    kind: .receipt,
                    quantity: entry.quantity,
                    subscription: facts.first { $0.originalTransactionId == original }
                )
            )
        }
        return ProvenReceipt(
            transactions: transactions,
            bundleId: verified.receipt.bundleId,
            environment: environment,
            originalApplicationVersion: verified.receipt.originalApplicationVersion
        )
    }

    /// A bare transaction id, resolved through the App Store Server API (Get Transaction Info).
    /// Transaction ids are not secrets (they show up in webhooks, listings and support tickets), so
    /// the answer proves a purchase for this caller only when Apple's signed transaction carries the
    /// caller's appAccountToken; otherwise the app must send what StoreKit gave it (JWS or receipt).
    func provenByLookup(_ transactionId: String, userId: String, runtime: TenantRuntime) async throws -> ProvenTransaction {
        guard let api = runtime.appStore.serverAPI else {
            throw DomainError(
                .unprocessable,
                .transactionLookupUnavailable,
                "this app has no App Store Server API key configured; send jwsRepresentation or receipt",
                field: "transactionId"
            )
        }
        let verified: VerifiedTransaction
        do {
            verified = try await api.transactionInfo(transactionId)
        } catch let error as AppStoreAPIError {
            logger.warning("transaction lookup failed", metadata: ["code": .string(error.code.rawValue)])
            switch error.code {
            case .transactionNotFound, .rejected:
                throw DomainError(.unprocessable, ErrorCode(rawValue: error.code.rawValue), error.reason, field: "transactionId")
            default:
                throw DomainError(
                    .unavailable,
                    ErrorCode(rawValue: error.code.rawValue),
                    "Apple could not be asked now; retry later (\(error.reason))",
                    retryAfter: 5
                )
            }
        } catch let error as SignedDataError {
            throw DomainError(
                .unprocessable,
                ErrorCode(rawValue: error.code.rawValue),
                "Apple's answer did not verify: \(error.reason)",
                field: "transactionId"
            )
        }
        let transaction = verified.payload
        guard let productId = transaction.productId, let environment = transaction.environment else {
            throw DomainError(.unprocessable, .malformed, "Apple's transaction lacks productId or environment", field: "transactionId")
        }
        guard let token = transaction.appAccountToken, runtime.purchasePolicy.token(token, names: userId) else {
            logger.warning(
                "bare transaction id refused: not bought with this user's appAccountToken",
                metadata: ["transaction": .string(transactionId)]
            )
            throw DomainError(
                .unprocessable,
                .proofRequired,
                "a transaction id alone proves a purchase only when it was bought with this user's appAccountToken; send jwsRepresentation or receipt",
                field: "transactionId"
            )
        }
        return ProvenTransaction(
            transactionId: transaction.transactionId ?? transactionId,
            originalTransactionId: transaction.originalTransactionId ?? transactionId,
            productId: productId,
            environment: StoreEnvironment(environment),
            purchasedAt: transaction.purchaseDate?.date,
            revoked: transaction.revocationDate != nil,
            appAccountToken: transaction.appAccountToken,
            proofHash: SHA256.hash(data: verified.rawPayload).hexString,
            kind: .lookup,
            priceMilliunits: transaction.price,
            currency: transaction.currency,
            quantity: transaction.quantity,
            subscription: SubscriptionFactsReading.facts(transaction: transaction, renewal: nil, signedAt: Date(), source: "server_api")
        )
    }
}

extension DomainError {
    /// A refusal of Apple-signed data: malformed input is 400-like, everything else unprocessable.
    public init(_ error: SignedDataError, field: String, messagePrefix: String = "") {
        self.init(
            error.code == .malformed ? .invalidInput : .unprocessable,
            ErrorCode(rawValue: error.code.rawValue),
            messagePrefix + error.reason,
            field: field
        )
    }
}

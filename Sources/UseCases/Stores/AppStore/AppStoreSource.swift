import Domain
import Foundation

/// The App Store's proof, in the three forms `POST /api/verify-purchase` accepts.
public enum AppStoreProof: Sendable {
    /// A StoreKit 2 signed transaction (`jwsRepresentation`).
    case jws(String)
    /// A base64 app receipt; `transactionId` picks its entry, else the newest entry of the product.
    case receipt(String, transactionId: String?)
    /// A bare transaction id, resolved through the App Store Server API.
    case transactionId(String)
}

/// The App Store: StoreKit 2 signed transactions and app receipts verified offline, bare ids through
/// the App Store Server API (`AppStoreProofs.swift`). Apple is owed nothing after a claim. Its
/// notifications (``ReceiveNotification``), history (``AppleNotificationHistory``,
/// ``RestorePurchases``), consumption answers and offers live beside this file.
public struct AppStoreSource: PurchaseSource {
    public var store: StoreName { .appStore }

    public init() {}

    public var proofFieldsHint: String { "jwsRepresentation (StoreKit 2), receipt (base64 app receipt), transactionId" }
    public var primaryField: String { "jwsRepresentation" }

    /// A signed transaction first, then a receipt (with the entry `transactionId` names), then a bare id.
    public func proof(from fields: ProofFields) -> PurchaseProof? {
        let transactionId = fields["transactionId"]
        if let jws = fields["jwsRepresentation"] { return .jws(jws, claiming: transactionId) }
        if let receipt = fields["receipt"] { return .receipt(receipt, transactionId: transactionId) }
        return transactionId.map { .transactionId($0) }
    }

    public func prove(
        _ proof: PurchaseProof,
        productId: String?,
        userId: String,
        runtime: TenantRuntime,
        prover: PurchaseProver
    ) async throws -> ProvenTransaction {
        guard let form = proof.form as? AppStoreProof else {
            throw DomainError(.invalidInput, .malformed, "not an App Store proof", field: proof.field)
        }
        let proofs = AppStoreProofs(logger: prover.logger)
        return switch form {
        case .jws(let jws): try await proofs.provenByJWS(jws, runtime: runtime)
        case .receipt(let base64, let transactionId):
            try await proofs.provenByReceipt(base64, transactionId: transactionId, productId: productId, runtime: runtime)
        case .transactionId(let id): try await proofs.provenByLookup(id, userId: userId, runtime: runtime)
        }
    }
}

extension PurchaseProof {
    /// A StoreKit 2 signed transaction; `claiming` is the transaction id the app sent beside it.
    public static func jws(_ jws: String, claiming transactionId: String? = nil) -> PurchaseProof {
        PurchaseProof(source: AppStoreSource(), field: "jwsRepresentation", claimedTransactionId: transactionId, form: AppStoreProof.jws(jws))
    }

    /// A base64 app receipt; `transactionId` picks its entry.
    public static func receipt(_ base64: String, transactionId: String?) -> PurchaseProof {
        PurchaseProof(
            source: AppStoreSource(),
            field: "receipt",
            claimedTransactionId: transactionId,
            form: AppStoreProof.receipt(base64, transactionId: transactionId)
        )
    }

    /// A bare transaction id, for Apple's lookup.
    public static func transactionId(_ id: String) -> PurchaseProof {
        PurchaseProof(source: AppStoreSource(), field: "transactionId", claimedTransactionId: id, form: AppStoreProof.transactionId(id))
    }
}

import Domain
import Foundation

/// The App Store: StoreKit 2 signed transactions and app receipts verified offline, bare ids through
/// the App Store Server API (``PurchaseProver``). Apple is owed nothing after a claim.
public struct AppStoreSource: PurchaseSource {
    public var store: StoreName { .appStore }

    public init() {}

    public func proves(_ proof: PurchaseProof) -> Bool {
        switch proof {
        case .jws, .receipt, .transactionId: true
        default: false
        }
    }

    public func prove(
        _ proof: PurchaseProof,
        productId: String?,
        userId: String,
        runtime: TenantRuntime,
        prover: PurchaseProver
    ) async throws -> ProvenTransaction {
        try await prover.proveApple(proof, productId: productId, userId: userId, runtime: runtime)
    }
}

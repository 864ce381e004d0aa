import Domain
import Foundation
import Logging

/// Google Play: a purchase token read from the Play Developer API (``PlayProofs``), products named
/// by their Play Console id or the catalog's, and an acknowledgement (or consumption) owed to Google
/// for every purchase Berth applied (``PlayAcknowledgements``).
public struct GooglePlaySource: PurchaseSource {
    public var store: StoreName { .googlePlay }

    public init() {}

    public func proves(_ proof: PurchaseProof) -> Bool {
        if case .playToken = proof { return true }
        return false
    }

    public func checkOffered(by runtime: TenantRuntime) throws {
        guard runtime.play != nil else {
            throw DomainError(.unprocessable, .googlePlayNotConfigured, "this app takes no Google Play purchases", field: "purchaseToken")
        }
    }

    public func product(named productId: String, in tenant: Tenant) -> Product? { tenant.product(namedOnPlay: productId) }

    public func prove(
        _ proof: PurchaseProof,
        productId: String?,
        userId: String,
        runtime: TenantRuntime,
        prover: PurchaseProver
    ) async throws -> ProvenTransaction {
        guard case .playToken(let token, let packageName) = proof else {
            throw DomainError(.invalidInput, .malformed, "not a Google Play purchase", field: "purchaseToken")
        }
        try checkOffered(by: runtime)
        guard let play = runtime.play, let package = play.package(packageName) else {
            throw DomainError(.unprocessable, .invalidField, "packageName is not one of this app's", field: "packageName")
        }
        guard let productId, !productId.isEmpty else {
            throw DomainError(.invalidInput, .missingField, "a Google Play purchase needs its productId", field: "productId")
        }
        guard let product = product(named: productId, in: runtime.tenant) else {
            throw DomainError(.unprocessable, .unknownProduct, "unknown product \(productId)", field: "productId")
        }
        do {
            return try await PlayProofs.prove(token: token, product: product, package: package, runtime: play, now: prover.clock.now())
        } catch let error as DomainError {
            prover.logger.info(
                "verify-purchase refused",
                metadata: [
                    "purchaseToken.sha256": .string(String(PlayProofs.proofHash(token).prefix(16))),
                    "code": .string(error.code.rawValue),
                ]
            )
            throw error
        }
    }

    public func owe(after outcome: PurchaseOutcome, proven: ProvenTransaction, tenant: Tenant, tx: any StoreSession, now: Date) throws {
        try PlayAcknowledgements.owe(for: outcome, proven: proven, tenant: tenant, tx: tx, now: now)
    }
}

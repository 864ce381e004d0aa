import Domain
import Foundation
import Logging

/// Google Play: a purchase token read from the Play Developer API (``PlayProofs``), products named
/// by their Play Console id or the catalog's, and an acknowledgement (or consumption) owed to Google
/// for every purchase Berth applied (``PlayAcknowledgements``).
public struct GooglePlaySource: PurchaseSource {
    public var store: StoreName { .googlePlay }

    public init() {}

    public var proofFieldsHint: String { "purchaseToken (Google Play)" }
    public var primaryField: String { "purchaseToken" }

    /// A purchase token, with the package it names (the tenant's, when absent).
    public func proof(from fields: ProofFields) -> PurchaseProof? {
        fields["purchaseToken"].map { .playToken($0, packageName: fields["packageName"]) }
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
        guard let form = proof.form as? PlayProof else {
            throw DomainError(.invalidInput, .malformed, "not a Google Play purchase", field: "purchaseToken")
        }
        try checkOffered(by: runtime)
        let token = form.token
        guard let play = runtime.play, let package = play.package(form.packageName) else {
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

    /// A one-time purchase that waits for its payment (409 purchase_pending): who sent it and for
    /// what is kept, so that Google's notification of the payment applies it to that user
    /// (``ReceivePlayNotification``) through the same claim, whether or not the app calls again. A
    /// second user's sending is audited as a replay.
    public func keepRefused(_ proof: PurchaseProof, refusal: any Error, attempt: RefusedAttempt, store: any Store) async throws -> String? {
        guard let error = refusal as? DomainError, error.code == .purchasePending, let form = proof.form as? PlayProof,
            let play = attempt.runtime.play, let package = play.package(form.packageName), let productId = attempt.productId,
            let product = attempt.runtime.tenant.product(namedOnPlay: productId),
            product.kind != .subscription
        else { return nil }
        let bookingId: Int64? = if case .booking(let id)? = attempt.target { id } else { nil }
        let claim = PlayPendingClaim(
            tenantId: attempt.runtime.id,
            purchaseToken: form.token,
            userId: attempt.userId,
            productId: product.id,
            bookingId: bookingId,
            packageName: package,
            createdAt: attempt.now
        )
        return try await store.write { tx -> String in
            let holder = try tx.play.rememberPending(claim)
            if holder != claim.userId {
                try tx.audit.append(
                    AuditRecord(
                        tenantId: claim.tenantId,
                        actor: .user(claim.userId),
                        action: .replayDetected,
                        target: attempt.target,
                        purchaseId: nil,
                        detail: ["reason": "pending purchase sent first by another user", "store": "google_play"],
                        at: attempt.now
                    )
                )
            }
            return holder
        }
    }
}

/// Google Play's proof: a purchase token, read from the Play Developer API in `packageName` (else
/// the tenant's package).
public struct PlayProof: Sendable {
    public var token: String
    public var packageName: String?
}

extension PurchaseProof {
    /// A Google Play purchase token.
    public static func playToken(_ token: String, packageName: String?) -> PurchaseProof {
        PurchaseProof(source: GooglePlaySource(), field: "purchaseToken", form: PlayProof(token: token, packageName: packageName))
    }
}

import Domain
import Foundation

/// One store a purchase can come from, behind one seam (the second axis beside the product kinds):
/// which proofs it proves, whether a tenant sells through it, how its product ids map to the
/// catalog, how a proof becomes a ``ProvenTransaction``, and what Berth owes the store once a claim
/// is settled. A new store is a new file here and its line in ``PurchaseSources/all``.
public protocol PurchaseSource: Sendable {
    var store: StoreName { get }

    /// Whether this store proves `proof`.
    func proves(_ proof: PurchaseProof) -> Bool

    /// Before anything about the product: refuses when the tenant does not sell through this store.
    func checkOffered(by runtime: TenantRuntime) throws

    /// The catalog product an app names in this store's terms (nil: unknown).
    func product(named productId: String, in tenant: Tenant) -> Product?

    /// The transaction `proof` proves for this tenant (refusals are ``DomainError``s naming the proof's field).
    func prove(
        _ proof: PurchaseProof,
        productId: String?,
        userId: String,
        runtime: TenantRuntime,
        prover: PurchaseProver
    ) async throws -> ProvenTransaction

    /// In the claim's unit of work: what Berth owes the store after `outcome` (Google Play's
    /// acknowledgements and consumptions; nothing for the App Store).
    func owe(after outcome: PurchaseOutcome, proven: ProvenTransaction, tenant: Tenant, tx: any StoreSession, now: Date) throws
}

extension PurchaseSource {
    public func checkOffered(by runtime: TenantRuntime) throws {}
    public func product(named productId: String, in tenant: Tenant) -> Product? { tenant.product(id: productId) }
    public func owe(after outcome: PurchaseOutcome, proven: ProvenTransaction, tenant: Tenant, tx: any StoreSession, now: Date) throws {}
}

/// The stores Berth takes purchases from.
public struct PurchaseSources: Sendable {
    public let all: [any PurchaseSource]

    /// The App Store and Google Play (one list for the process: a prover is made per request).
    public static let standard = PurchaseSources([AppStoreSource(), GooglePlaySource()])

    public init(_ all: [any PurchaseSource]) {
        self.all = all
    }

    /// The store that proves `proof`.
    public func source(for proof: PurchaseProof) -> any PurchaseSource {
        all.first { $0.proves(proof) } ?? AppStoreSource()
    }

    /// The store a proven transaction came from (the App Store when it names none Berth knows).
    public func source(of transaction: ProvenTransaction) -> any PurchaseSource {
        all.first { $0.store == transaction.storeName } ?? AppStoreSource()
    }
}

import AsyncHTTPClient
import Domain
import Foundation
import Logging

/// One store a purchase can come from, behind one seam (the second axis beside the product kinds).
/// A store is a folder of its own (`Stores/AppStore/`, `Stores/GooglePlay/`) holding its proof
/// forms, its proving, its notifications and what it owes; this protocol is all the rest of Berth
/// knows of it: which request fields carry its proof, whether a tenant sells through it, how its
/// product ids map to the catalog, how a proof becomes a ``ProvenTransaction``, what Berth owes the
/// store once a claim is settled, and what a refused proof leaves behind.
/// A new store is a new folder and its line in ``PurchaseSources/standard``.
public protocol PurchaseSource: Sendable {
    var store: StoreName { get }

    /// The proof this store reads from what the request carried (nil: none of its fields is there).
    func proof(from fields: ProofFields) -> PurchaseProof?

    /// The fields that carry this store's proof, for the refusal of a request that sent none
    /// (`purchaseToken (Google Play)`).
    var proofFieldsHint: String { get }

    /// The field a request that carried no proof at all is refused on, when this store is the fallback.
    var primaryField: String { get }

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

    /// The tenant's runtime of this store (its client and secrets, from ``Tenant/stores`` and the
    /// process environment), built once when the tenant starts; nil when the tenant does not sell
    /// through it. The App Store's and Google Play's are ``TenantRuntime``'s own properties.
    func runtime(for tenant: Tenant, context: StoreRuntimeContext) async throws -> (any Sendable)?

    /// The error codes this store's refusals use beyond ``ErrorCode/all`` (the contract lists them too).
    var errorCodes: [ErrorCode] { get }

    /// After the store refused `proof` with `refusal`: what the store keeps of the attempt so that
    /// its later notification applies it (Google Play's pending purchases). Returns the user the kept
    /// claim names (the first who sent it), nil when nothing is kept.
    func keepRefused(_ proof: PurchaseProof, refusal: any Error, attempt: RefusedAttempt, store: any Store) async throws -> String?
}

/// What a store's runtime is built from, besides the tenant.
public struct StoreRuntimeContext: Sendable {
    /// Where relative files named by the catalog live.
    public var baseDirectory: URL
    /// The process environment (secrets come from it, never the catalog).
    public var environment: [String: String]
    public var clock: any BerthClock
    /// The composition root's outbound client (nil: the store's client's own).
    public var httpClient: HTTPClient?
    public var logger: Logger
}

/// Who sent a proof the store refused, and for what (``PurchaseSource/keepRefused(_:refusal:attempt:store:)``).
public struct RefusedAttempt: Sendable {
    public var runtime: TenantRuntime
    public var userId: String
    public var productId: String?
    public var target: PurchaseTarget?
    public var now: Date
}

extension PurchaseSource {
    public func checkOffered(by runtime: TenantRuntime) throws {}
    public func runtime(for tenant: Tenant, context: StoreRuntimeContext) async throws -> (any Sendable)? { nil }
    public var errorCodes: [ErrorCode] { [] }
    public func product(named productId: String, in tenant: Tenant) -> Product? { tenant.product(id: productId) }
    public func owe(after outcome: PurchaseOutcome, proven: ProvenTransaction, tenant: Tenant, tx: any StoreSession, now: Date) throws {}
    public func keepRefused(_ proof: PurchaseProof, refusal: any Error, attempt: RefusedAttempt, store: any Store) async throws -> String? {
        nil
    }
}

/// The stores Berth takes purchases from, in the order they read a request's fields (the first
/// whose fields are there takes the proof).
public struct PurchaseSources: Sendable {
    public let all: [any PurchaseSource]
    /// The store of a stored transaction that names none Berth knows, and whose field a request
    /// without any proof is refused on.
    public let fallback: any PurchaseSource

    /// Google Play, then the App Store (a purchase token wins over App Store fields sent beside it).
    public static let standard = PurchaseSources([GooglePlaySource(), AppStoreSource()], fallback: AppStoreSource())

    public init(_ all: [any PurchaseSource], fallback: any PurchaseSource) {
        self.all = all
        self.fallback = fallback
    }

    /// The proof the request carried, read once by the first store whose fields are there.
    public func proof(from fields: ProofFields) throws -> PurchaseProof {
        for source in all {
            if let proof = source.proof(from: fields) { return proof }
        }
        let hints = [fallback.proofFieldsHint] + all.filter { $0.store != fallback.store }.map(\.proofFieldsHint)
        throw DomainError(.invalidInput, .missingField, "send " + hints.joined(separator: ", or "), field: fallback.primaryField)
    }

    /// The store a proven transaction came from (the fallback when it names none Berth knows).
    public func source(of transaction: ProvenTransaction) -> any PurchaseSource {
        all.first { $0.store == transaction.storeName } ?? fallback
    }
}

import Domain
import Foundation
import Logging

/// What a request carried as proof of a purchase, by the contract's field names
/// (`jwsRepresentation`, `receipt`, `transactionId`, `purchaseToken`, `packageName`, …): handed to
/// the stores once (``PurchaseSources/proof(from:)``), and the store whose fields are there reads
/// its proof from them. Empty values are absent (what a client sends when the store gave none).
public struct ProofFields: Sendable {
    private var values: [String: String]

    public init(_ values: [String: String?]) {
        self.values = values.compactMapValues { value in value.flatMap { $0.isEmpty ? nil : $0 } }
    }

    public subscript(_ field: String) -> String? { values[field] }
}

/// A store's proof of one purchase, as the store read it: the store that proves it (decided once,
/// when it was read), the request field a refusal of it names, the transaction id the app claims
/// beside it, and the store's own form of it (``AppStoreProof``, ``PlayProof``), which only that
/// store reads.
public struct PurchaseProof: Sendable {
    /// The store that read it and proves it.
    public let source: any PurchaseSource
    /// The request field a refusal of the proof names (`jwsRepresentation`, `purchaseToken`, …).
    public let field: String
    /// The transaction id the app claims beside the proof (checked against what it proves).
    public let claimedTransactionId: String?
    /// The store's own form of the proof.
    public let form: any Sendable

    public init(source: any PurchaseSource, field: String, claimedTransactionId: String? = nil, form: any Sendable) {
        self.source = source
        self.field = field
        self.claimedTransactionId = claimedTransactionId
        self.form = form
    }

    public var store: StoreName { source.store }
}

/// Proves a ``PurchaseProof`` by the store that read it, with the logger and clock proving uses.
public struct PurchaseProver: Sendable {
    let logger: Logger
    /// Orders what a store's API answers now (Google Play's state) against what Berth applied before.
    let clock: any BerthClock
    /// The stores proofs come from.
    public let sources: PurchaseSources

    public init(logger: Logger, clock: any BerthClock = SystemClock(), sources: PurchaseSources = .standard) {
        self.logger = logger
        self.clock = clock
        self.sources = sources
    }

    /// The transaction `proof` proves, by the store that read it.
    public func prove(_ proof: PurchaseProof, productId: String?, userId: String, runtime: TenantRuntime) async throws -> ProvenTransaction {
        try await proof.source.prove(proof, productId: productId, userId: userId, runtime: runtime, prover: self)
    }
}

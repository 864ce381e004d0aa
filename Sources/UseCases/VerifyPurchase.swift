import Domain
import Foundation
import Logging

/// `POST /api/verify-purchase`: prove a StoreKit transaction, then claim it for its target exactly
/// once. The one place where proving, deciding and persisting meet.
public struct VerifyPurchase: Sendable {
    public struct Command: Sendable {
        public var runtime: TenantRuntime
        public var userId: String
        /// The product the app says it bought; nil lets the proof name it (validators whose
        /// clients send only a receipt or a signed transaction).
        public var productId: String?
        /// The transaction id the app claims (checked against the proof).
        public var transactionId: String?
        public var proof: PurchaseProof
        /// What the purchase pays for: a booking the app names, or nil to let the product decide
        /// (a credit pack: its credit type).
        public var target: PurchaseTarget?

        public init(runtime: TenantRuntime, userId: String, productId: String?, transactionId: String?, proof: PurchaseProof, target: PurchaseTarget?) {
            self.runtime = runtime
            self.userId = userId
            self.productId = productId
            self.transactionId = transactionId
            self.proof = proof
            self.target = target
        }
    }

    /// How the claim ended and the target's state after it.
    public struct Result: Sendable {
        public var outcome: PurchaseOutcome
        public var state: PurchasedState
    }

    let store: any Store
    let prover: PurchaseProver
    let kinds: PurchaseKinds
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, prover: PurchaseProver, kinds: PurchaseKinds, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.prover = prover
        self.kinds = kinds
        self.clock = clock
        self.logger = logger
    }

    /// Prove, pick the kind, claim under the policy, let the kind plan, save: the same for every kind.
    public func callAsFunction(_ command: Command) async throws -> Result {
        let runtime = command.runtime
        var request = PurchaseRequest(tenant: runtime.tenant, policy: runtime.purchasePolicy, emitsEvents: runtime.webhook != nil, userId: command.userId,
                                      productId: command.productId ?? "", transactionId: command.transactionId, named: command.target)
        var proven: ProvenTransaction?
        if command.productId == nil {
            // Without a claimed product, the proof names it (and the checks compare it with itself).
            proven = try await prove(command, request: request)
            request.productId = proven?.productId ?? ""
        }
        let kind = try kinds.module(kinds.kind(of: request))
        let target = try await kind.target(for: request, store: store)
        let transaction: ProvenTransaction
        if let proven { transaction = proven } else { transaction = try await prove(command, request: request) }
        return try await claim(transaction, request: request, kind: kind, target: target, runtime: runtime)
    }

    /// Claims a transaction already proven (one entry of a verified receipt) for `userId`: the
    /// product names its kind and target, unless the app names a target.
    public func claim(proven transaction: ProvenTransaction, runtime: TenantRuntime, userId: String, named: PurchaseTarget?) async throws -> Result {
        let request = PurchaseRequest(tenant: runtime.tenant, policy: runtime.purchasePolicy, emitsEvents: runtime.webhook != nil, userId: userId,
                                      productId: transaction.productId, transactionId: transaction.transactionId, named: named)
        let kind = try kinds.module(kinds.kind(of: request))
        let target = try await kind.target(for: request, store: store)
        return try await claim(transaction, request: request, kind: kind, target: target, runtime: runtime)
    }

    private func claim(_ transaction: ProvenTransaction, request: PurchaseRequest, kind: some PurchaseKind, target: PurchaseTarget,
                       runtime: TenantRuntime) async throws -> Result {
        let now = clock.now()
        let claim = PurchaseClaim(transaction, tenantId: runtime.id, userId: request.userId, target: target, now: now)
        let result = try await store.write { [request] tx in try Self.claim(claim, proven: transaction, request: request, kind: kind, tx: tx, now: now) }
        log(result.outcome, proofHash: transaction.proofHash, transactionId: transaction.transactionId, target: target)
        return result
    }

    /// One claim in its unit of work: the kind loads and checks under its locks, the policy settles
    /// repeats, replays and revoked transactions, the kind plans the rest, the store saves the plan.
    public static func claim<Kind: PurchaseKind>(_ claim: PurchaseClaim, proven: ProvenTransaction, request: PurchaseRequest, kind: Kind, tx: any StoreSession,
                                          now: Date) throws -> Result {
        var claim = claim
        let loaded = try kind.load(&claim, proven: proven, request: request, tx: tx, now: now)
        let existing = try tx.purchases.purchase(store: claim.store, environment: claim.environment, transactionId: claim.transactionId, forUpdate: true)
        let revoked = try existing == nil
            && tx.purchases.isRevoked(tenantId: claim.tenantId, store: claim.store, environment: claim.environment, transactionId: claim.transactionId)
        let plan: PurchasePlan, state: PurchasedState
        if let settled = kind.settle(claim, existing: existing, revokedByApple: revoked, loaded: loaded, now: now) {
            (plan, state) = (settled, try kind.state(settled: settled, claim: claim, loaded: loaded, tx: tx, now: now))
        } else {
            (plan, state) = try kind.plan(claim, existing: existing, loaded: loaded, tx: tx, now: now)
        }
        try tx.save(plan, tenantId: claim.tenantId, store: claim.store, emitsEvents: request.emitsEvents, now: now)
        return Result(outcome: plan.outcome, state: state)
    }

    /// Proves the command's proof. A caller without the target learns nothing about proofs: when the
    /// proof is refused, "not found" comes first (on success, ownership is checked inside the write,
    /// under the target's lock).
    private func prove(_ command: Command, request: PurchaseRequest) async throws -> ProvenTransaction {
        do {
            return try await prover.prove(command.proof, productId: command.productId, userId: command.userId, runtime: command.runtime)
        } catch {
            if let named = request.named { try await kinds.module(named.kind).checkVisible(request, store: store) }
            throw error
        }
    }

    private func log(_ outcome: PurchaseOutcome, proofHash: String, transactionId: String, target: PurchaseTarget) {
        var metadata: Logger.Metadata = ["proof.sha256": .string(String(proofHash.prefix(16))), "target": .string(target.description),
                                         "transaction": .string(transactionId)]
        switch outcome {
        case .applied: logger.info("purchase applied", metadata: metadata)
        case .repeated: break
        case .replay: logger.warning("replay refused", metadata: metadata)
        case .needsRefund(_, let code, _):
            metadata["code"] = .string(code.rawValue)
            logger.warning("payment recorded for refund", metadata: metadata)
        case .refused(let code, _):
            metadata["code"] = .string(code.rawValue)
            logger.warning("purchase refused", metadata: metadata)
        }
    }
}

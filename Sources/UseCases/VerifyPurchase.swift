import Domain
import Foundation
import Logging

/// `POST /api/verify-purchase`: read the proof, prove it by its store, then hand the proven
/// transaction to the claim engine (``Claims``), which applies it to its target exactly once.
public struct VerifyPurchase: Sendable {
    public struct Command: Sendable {
        public var runtime: TenantRuntime
        public var userId: String
        /// The product the app says it bought; nil lets the proof name it (validators whose
        /// clients send only a receipt or a signed transaction).
        public var productId: String?
        /// The proof: as the request carried it (read here, by the store whose fields are there), or
        /// already read by a caller that knows its store (the plugin's validator).
        public var evidence: Evidence
        /// What the purchase pays for: a booking the app names, or nil to let the product decide
        /// (a credit pack: its credit type).
        public var target: PurchaseTarget?
        /// Whether the caller proved who the user is (the user's own token, or the app's backend with
        /// a server key). A client key only names a user: for it, transactions waiting for the user
        /// are claimed only when the proof itself carries a token naming the user.
        public var callerProvesUser: Bool

        /// A proof already read by a caller that knows its store (the plugin's validator).
        public init(
            runtime: TenantRuntime,
            userId: String,
            productId: String?,
            proof: PurchaseProof,
            target: PurchaseTarget?,
            callerProvesUser: Bool
        ) {
            self.init(runtime, userId, productId, .proof(proof), target, callerProvesUser)
        }

        /// A request's proof fields, by the contract's names: the stores read them (refused
        /// `missing_field` when no store's fields are there).
        public init(
            runtime: TenantRuntime,
            userId: String,
            productId: String?,
            proofFields: ProofFields,
            target: PurchaseTarget?,
            callerProvesUser: Bool
        ) {
            self.init(runtime, userId, productId, .fields(proofFields), target, callerProvesUser)
        }

        private init(
            _ runtime: TenantRuntime,
            _ userId: String,
            _ productId: String?,
            _ evidence: Evidence,
            _ target: PurchaseTarget?,
            _ callerProvesUser: Bool
        ) {
            self.runtime = runtime
            self.userId = userId
            self.productId = productId
            self.evidence = evidence
            self.target = target
            self.callerProvesUser = callerProvesUser
        }
    }

    /// What a command carries of the store's proof.
    public enum Evidence: Sendable {
        case fields(ProofFields)
        case proof(PurchaseProof)
    }

    /// How the claim ended and the target's state after it (``ClaimResult``).
    public typealias Result = ClaimResult

    let store: any Store
    let prover: PurchaseProver
    let kinds: PurchaseKinds
    let clock: any BerthClock
    let logger: Logger
    /// The claim engine this action hands proven transactions to, and the other use cases hold.
    public let claims: Claims

    public init(
        store: any Store,
        prover: PurchaseProver,
        kinds: PurchaseKinds,
        clock: any BerthClock,
        logger: Logger,
        recordedTokens: RecordedTokenUsers = RecordedTokenUsers()
    ) {
        self.store = store
        self.prover = prover
        self.kinds = kinds
        self.clock = clock
        self.logger = logger
        claims = Claims(store: store, kinds: kinds, sources: prover.sources, clock: clock, logger: logger, recordedTokens: recordedTokens)
    }

    /// Prove, pick the kind, claim under the policy, let the kind plan, save: the same for every kind.
    /// A proven transaction that cannot be applied is kept as an unapplied payment (paid is never silent).
    public func callAsFunction(_ command: Command) async throws -> Result {
        let runtime = command.runtime
        // The proof is read once, by the store whose fields the request carries.
        let proof: PurchaseProof
        switch command.evidence {
        case .fields(let fields): proof = try prover.sources.proof(from: fields)
        case .proof(let read): proof = read
        }
        var request = PurchaseRequest(
            tenant: runtime.tenant,
            policy: runtime.purchasePolicy,
            emitsEvents: runtime.webhook != nil,
            userId: command.userId,
            productId: command.productId ?? "",
            transactionId: proof.claimedTransactionId,
            named: command.target
        )
        var proven: ProvenTransaction?
        // Before anything about the product: the app does not sell through the proof's store at all.
        let source = proof.source
        try source.checkOffered(by: runtime)
        // The app may name the product in the store's terms (Google Play's product id).
        if let named = command.productId { request.productId = source.product(named: named, in: runtime.tenant)?.id ?? named }
        do {
            if command.productId == nil {
                // Without a claimed product, the proof names it (and the checks compare it with itself).
                proven = try await prove(proof, command, request: request)
                request.productId = proven?.productId ?? ""
            }
            let kind = try kinds.module(kinds.kind(of: request))
            let target = try await kind.target(for: request, store: store)
            let transaction: ProvenTransaction
            if let proven {
                transaction = proven
            } else {
                transaction = try await prove(proof, command, request: request)
                proven = transaction
            }
            // The user's waiting transactions are looked for only for a caller who proved the user, or
            // a proof that carries a token naming them (a client key alone proves nothing: T1).
            let provesUser = command.callerProvesUser || transaction.appAccountToken.map { request.policy.token($0, names: command.userId) } == true
            var result = try await claims.claim(
                transaction,
                request: request,
                kind: kind,
                target: target,
                runtime: runtime,
                looksForWaiting: provesUser
            )
            // The user's next call: what Apple told Berth of that the user's tokens name is applied now.
            for waiting in result.waiting where waiting.transactionId != transaction.transactionId {
                do {
                    _ = try await claims.claim(proven: waiting, runtime: runtime, userId: command.userId, named: nil)
                } catch {
                    logger.warning(
                        "waiting transaction not applied",
                        metadata: ["transaction": .string(waiting.transactionId), "error": .string("\(error)")]
                    )
                }
            }
            result.proofField = proof.field
            return result
        } catch let refusal as ProofRefusal {
            // Nothing was proven: nothing to keep.
            throw refusal.error
        } catch let error as DomainError where UnappliedPayment.keeps(error) {
            // Refused before the proof was checked (unknown product, no booking named): check it now;
            // a proof that does not hold keeps nothing and the refusal stands.
            let transaction: ProvenTransaction
            if let proven {
                transaction = proven
            } else if let checked = try? await prover.prove(proof, productId: command.productId, userId: command.userId, runtime: runtime) {
                transaction = checked
            } else {
                throw error
            }
            throw try await claims.keepUnapplied(transaction, refusal: error, runtime: runtime, userId: command.userId, named: command.target)
        }
    }

    /// A refusal of the proof itself (or, for a caller who cannot see the target, the target's "not
    /// found" that comes first): thrown as ``error`` to the caller, never kept as an unapplied payment.
    private struct ProofRefusal: Error {
        var error: any Error
    }

    /// Proves the command's proof. A caller without the target learns nothing about proofs: when the
    /// proof is refused, "not found" comes first (on success, ownership is checked inside the write,
    /// under the target's lock).
    private func prove(_ proof: PurchaseProof, _ command: Command, request: PurchaseRequest) async throws -> ProvenTransaction {
        do {
            return try await prover.prove(proof, productId: command.productId, userId: command.userId, runtime: command.runtime)
        } catch {
            do {
                if let named = request.named { try await kinds.module(named.kind).checkVisible(request, store: store) }
            } catch {
                throw ProofRefusal(error: error)
            }
            let attempt = RefusedAttempt(
                runtime: command.runtime,
                userId: command.userId,
                productId: command.productId,
                target: command.target,
                now: clock.now()
            )
            let holder = try? await proof.source.keepRefused(proof, refusal: error, attempt: attempt, store: store)
            if let holder, holder != command.userId {
                logger.warning("pending purchase sent by a second user refused", metadata: ["tenant": .string(command.runtime.id)])
                // Another user sent this pending purchase first: it stays theirs (V4).
                throw ProofRefusal(
                    error: DomainError(.conflict, .transactionAlreadyUsed, "transaction already used by another user", field: proof.field)
                )
            }
            throw ProofRefusal(error: error)
        }
    }
}

import Domain
import Foundation
import Logging

/// How a claim ended and the target's state after it.
public struct ClaimResult: Sendable {
    public var outcome: PurchaseOutcome
    public var state: PurchasedState
    /// Transactions Apple told Berth of that the user's account tokens name, found in the same
    /// unit of work (the caller claims them next).
    var waiting: [ProvenTransaction] = []
    /// Whether the proof carried an account token that names the claim's user.
    public internal(set) var proofNamesUser = false
    /// The request field that carried the proof (what a replay's refusal names).
    public internal(set) var proofField = "jwsRepresentation"
}

/// The claim engine: applies a proven transaction to its target exactly once, in one unit of work
/// (the kind loads and checks under its locks, the policy settles repeats, replays and revoked
/// transactions, the kind plans, the store saves, the transaction's store records what Berth owes
/// it). A refusal keeps the payment as an unapplied payment. Held by ``VerifyPurchase`` and by every
/// use case that applies transactions proven elsewhere: receipts' other entries, notifications,
/// restores, the plugin's validator, an operator resolving an unapplied payment, a user's reads that
/// claim what waits for them.
public struct Claims: Sendable {
    let store: any Store
    let kinds: PurchaseKinds
    /// The stores proven transactions come from (what each is owed after a claim).
    let sources: PurchaseSources
    let clock: any BerthClock
    let logger: Logger
    /// Users whose account tokens are already recorded (only a user's first applied claim writes them).
    let recordedTokens: RecordedTokenUsers

    public init(
        store: any Store,
        kinds: PurchaseKinds,
        sources: PurchaseSources = .standard,
        clock: any BerthClock,
        logger: Logger,
        recordedTokens: RecordedTokenUsers = RecordedTokenUsers()
    ) {
        self.store = store
        self.kinds = kinds
        self.sources = sources
        self.clock = clock
        self.logger = logger
        self.recordedTokens = recordedTokens
    }

    public typealias Result = ClaimResult

    /// Claims a transaction already proven (one entry of a verified receipt) for `userId`: the
    /// product names its kind and target, unless the app names a target. A refusal keeps it as an
    /// unapplied payment unless `keepsRefusals` is false (an operator applying one).
    ///
    /// `alongside` runs in the claim's unit of work, after it: what it writes commits with the claim,
    /// and what it throws undoes the claim (an operator's decision on the payment the claim resolves).
    public func claim(
        proven transaction: ProvenTransaction,
        runtime: TenantRuntime,
        userId: String,
        named: PurchaseTarget?,
        keepsRefusals: Bool = true,
        alongside: (@Sendable (any StoreSession, PurchaseOutcome) throws -> Void)? = nil
    ) async throws -> Result {
        let request = PurchaseRequest(
            tenant: runtime.tenant,
            policy: runtime.purchasePolicy,
            emitsEvents: runtime.webhook != nil,
            userId: userId,
            productId: transaction.productId,
            transactionId: transaction.transactionId,
            named: named
        )
        do {
            let kind = try kinds.module(kinds.kind(of: request))
            let target = try await kind.target(for: request, store: store)
            return try await claim(transaction, request: request, kind: kind, target: target, runtime: runtime, alongside: alongside)
        } catch let error as DomainError where keepsRefusals && UnappliedPayment.keeps(error) {
            throw try await keepUnapplied(transaction, refusal: error, runtime: runtime, userId: userId, named: named)
        }
    }

    /// Keeps a proven transaction that a refusal left unapplied (one row per transaction; a retry
    /// counts an attempt), with an audit entry and a `payment.unapplied` event the first time.
    /// Returns the refusal, now carrying the kept payment. A transaction already applied (a retry
    /// naming something else) is not kept again: the refusal stands as it is.
    func keepUnapplied(
        _ transaction: ProvenTransaction,
        refusal: DomainError,
        runtime: TenantRuntime,
        userId: String,
        named: PurchaseTarget?
    ) async throws -> DomainError {
        let now = clock.now()
        let candidate = UnappliedPayment(
            id: RecordID.next(),
            tenantId: runtime.id,
            store: transaction.storeName,
            userId: userId,
            bookingId: named?.bookingId,
            reasonCode: refusal.code,
            reason: refusal.message,
            proven: transaction,
            firstSeenAt: now,
            lastSeenAt: now
        )
        let emitsEvents = runtime.webhook != nil
        let kept: UnappliedPayment? = try await store.write { tx in
            if try tx.purchases.purchase(
                store: candidate.store,
                environment: transaction.environment,
                transactionId: transaction.transactionId,
                forUpdate: false
            ) != nil {
                return nil
            }
            let payment = try tx.purchases.keepUnapplied(candidate)
            if payment.attempts == 1, payment.status == .open {
                try tx.audit.append(
                    AuditRecord(
                        tenantId: runtime.id,
                        actor: .user(userId),
                        action: .paymentUnapplied,
                        bookingId: named?.bookingId,
                        purchaseId: nil,
                        detail: [
                            "transactionId": transaction.transactionId, "productId": transaction.productId,
                            "code": refusal.code.rawValue, "unappliedPaymentId": String(payment.id),
                        ],
                        at: now
                    )
                )
                if emitsEvents { try tx.outbox.enqueue([payment.event(.paymentUnapplied)], tenantId: runtime.id, now: now) }
            }
            return payment
        }
        guard let kept else { return refusal }
        logger.warning(
            "paid transaction kept unapplied",
            metadata: [
                "transaction": .string(transaction.transactionId), "code": .string(refusal.code.rawValue),
                "unapplied_payment": .string(String(kept.id)), "attempts": .string(String(kept.attempts)),
            ]
        )
        var error = refusal
        error.unappliedPayment = kept
        return error
    }

    func claim(
        _ transaction: ProvenTransaction,
        request: PurchaseRequest,
        kind: some PurchaseKind,
        target: PurchaseTarget,
        runtime: TenantRuntime,
        looksForWaiting: Bool = false,
        alongside: (@Sendable (any StoreSession, PurchaseOutcome) throws -> Void)? = nil
    ) async throws -> Result {
        let now = clock.now()
        let claim = PurchaseClaim(transaction, tenantId: runtime.id, userId: request.userId, target: target, now: now)
        let remember = !recordedTokens.contains(tenantId: runtime.id, userId: request.userId)
        let tokens = remember || looksForWaiting ? Self.tokens(naming: request.userId, policy: request.policy) : []
        let source = sources.source(of: transaction)
        var result = try await store.write { [request] tx in
            var result = try Self.claim(
                claim,
                proven: transaction,
                request: request,
                kind: kind,
                tx: tx,
                now: now,
                remembering: remember ? tokens : []
            )
            // What Berth owes the store for the claim (Google Play's acknowledgement), in the same unit of work.
            try source.owe(after: result.outcome, proven: transaction, tenant: request.tenant, tx: tx, now: now)
            // In the same unit of work: one index lookup, no extra round trip to the database.
            if looksForWaiting, !tokens.isEmpty { result.waiting = try tx.purchases.waitingTransactions(tenantId: claim.tenantId, tokens: tokens) }
            try alongside?(tx, result.outcome)
            return result
        }
        result.proofNamesUser = transaction.appAccountToken.map { request.policy.token($0, names: request.userId) } == true
        // Recorded with the claim's commit: later claims of this user need not write them again.
        if remember, case .applied = result.outcome { recordedTokens.insert(tenantId: runtime.id, userId: request.userId) }
        log(result.outcome, proofHash: transaction.proofHash, transactionId: transaction.transactionId, target: target)
        return result
    }

    /// One claim in its unit of work: the kind loads under its locks, the transaction's stored purchase
    /// is read beside it, the kind decides (the proof against the target, the policy on repeats,
    /// replays and revoked transactions, the plan), the store saves the plan.
    /// An applied claim also records `remembering`, the account tokens that name its user.
    public static func claim<Kind: PurchaseKind>(
        _ claim: PurchaseClaim,
        proven: ProvenTransaction,
        request: PurchaseRequest,
        kind: Kind,
        tx: any StoreSession,
        now: Date,
        remembering tokens: [String] = []
    ) throws -> Result {
        var claim = claim
        let loaded = try kind.load(&claim, proven: proven, request: request, tx: tx, now: now)
        let existing = try tx.purchases.purchase(
            store: claim.store,
            environment: claim.environment,
            transactionId: claim.transactionId,
            forUpdate: true
        )
        let revoked =
            try existing == nil
            && tx.purchases.isRevoked(
                tenantId: claim.tenantId,
                store: claim.store,
                environment: claim.environment,
                transactionId: claim.transactionId
            )
        let (plan, state) = try kind.decide(
            claim,
            proven: proven,
            request: request,
            existing: existing,
            revokedByApple: revoked,
            loaded: loaded,
            tx: tx,
            now: now
        )
        try tx.save(plan, tenantId: claim.tenantId, store: claim.store, emitsEvents: request.emitsEvents, now: now)
        var answered = state
        if case .booking(let hold) = state, let changed = hold.changeOf, hold.status == .confirmed,
            try tx.bookings.booking(id: hold.id, tenantId: claim.tenantId, forUpdate: false) == nil,
            let moved = try tx.bookings.booking(id: changed, tenantId: claim.tenantId, forUpdate: false)
        {
            // The difference of a move was paid: the answer shows the booking at its new place (the hold is gone).
            answered = .booking(moved)
        }
        if !tokens.isEmpty, case .applied = plan.outcome {
            // The tokens that name this user, for transactions Berth learns of without a claim.
            try tx.purchases.rememberTokens(tokens, userId: claim.userId, tenantId: claim.tenantId, at: now)
        }
        return Result(outcome: plan.outcome, state: answered)
    }

    /// The appAccountTokens that name `userId`: the tokens clients derive one-way from the id
    /// (cordova-plugin-purchase's), and the id itself only for apps whose user ids are UUIDs (in
    /// their one canonical spelling). A token merely seen on a user's proof is not taken as theirs,
    /// and neither is a user id that happens to equal someone's token (T1: anyone may pick such an id).
    static func tokens(naming userId: String, policy: PurchasePolicy) -> [String] {
        policy.tokens(naming: userId)
    }

    /// Applies to `userId` the transactions Berth learned of without a claim (Apple's notifications)
    /// whose appAccountToken names the user: the user's "next call". Each is claimed like any other
    /// (a refusal keeps it as an unapplied payment); storage trouble is logged, never the caller's error.
    public func claimWaiting(runtime: TenantRuntime, userId: String) async -> [Result] {
        let tokens = Self.tokens(naming: userId, policy: runtime.purchasePolicy)
        let tenantId = runtime.id
        do {
            let waiting = try await store.read { try $0.purchases.waitingTransactions(tenantId: tenantId, tokens: tokens) }
            var results: [Result] = []
            for transaction in waiting {
                do {
                    results.append(try await claim(proven: transaction, runtime: runtime, userId: userId, named: nil))
                    logger.info("waiting transaction applied to its user", metadata: ["transaction": .string(transaction.transactionId)])
                } catch {
                    logger.warning(
                        "waiting transaction not applied",
                        metadata: ["transaction": .string(transaction.transactionId), "error": .string("\(error)")]
                    )
                }
            }
            return results
        } catch {
            logger.error("waiting transactions not read: \(error)")
            return []
        }
    }

    /// Reads `body`, a one-statement read (``Store/readStatement(_:)``) that also finds the transactions
    /// waiting for `userId`: `body` is given the tokens naming the user and tells whether anything
    /// waits. On the common path, where nothing waits, that is the whole answer in one trip; when some
    /// wait, they are claimed first (``claimWaiting(runtime:userId:)``) and `body` is read again
    /// (without tokens), so the answer includes them.
    public func readClaimingWaiting<T: Sendable>(
        runtime: TenantRuntime,
        userId: String,
        _ body: @escaping @Sendable (any StoreSession, _ waitingTokens: [String]) throws -> (waiting: Bool, value: T)
    ) async throws -> T {
        let tokens = Self.tokens(naming: userId, policy: runtime.purchasePolicy)
        guard !tokens.isEmpty else { return try await store.readStatement { session in try body(session, []).value } }
        let first = try await store.readStatement { session in try body(session, tokens) }
        guard first.waiting else { return first.value }
        _ = await claimWaiting(runtime: runtime, userId: userId)
        return try await store.readStatement { session in try body(session, []).value }
    }

    private func log(_ outcome: PurchaseOutcome, proofHash: String, transactionId: String, target: PurchaseTarget) {
        var metadata: Logger.Metadata = [
            "proof.sha256": .string(String(proofHash.prefix(16))), "target": .string(target.description),
            "transaction": .string(transactionId),
        ]
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

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
        public var booking: Booking?
        /// For a credits purchase: the account's balance after the claim.
        public var credits: CreditSummary?
        /// For a subscription: the record after the claim, and whether the account uses it.
        public var subscription: Subscription?
        public var inUse: Bool = false
    }

    let store: any Store
    let prover: PurchaseProver
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, prover: PurchaseProver, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.prover = prover
        self.clock = clock
        self.logger = logger
    }

    public func callAsFunction(_ command: Command) async throws -> Result {
        let runtime = command.runtime
        var command = command
        var provenFirst: ProvenTransaction?
        if command.productId == nil {
            // Without a claimed product, the proof names it (and the checks below compare it with itself).
            do {
                provenFirst = try await prover.prove(command.proof, productId: nil, userId: command.userId, runtime: runtime)
            } catch {
                try await checkTarget(command)
                throw error
            }
            command.productId = provenFirst?.productId
        }
        let target: PurchaseTarget
        if let named = command.target { target = named } else { target = try await creditTarget(command) }
        command.target = target
        let proven: ProvenTransaction
        if let provenFirst {
            proven = provenFirst
        } else {
            do {
                proven = try await prover.prove(command.proof, productId: command.productId, userId: command.userId, runtime: runtime)
            } catch {
                // A caller without the target learns nothing about proofs: not found comes first. (On
                // success, ownership is checked inside the write, under the target's lock.)
                try await checkTarget(command)
                throw error
            }
        }
        let now = clock.now()
        var claimTarget = target
        if case .subscription = target { claimTarget = .subscription(originalTransactionId: proven.originalTransactionId) }
        let claim = PurchaseClaim(proven, tenantId: runtime.id, userId: command.userId, target: claimTarget, now: now)
        let emitsEvents = runtime.webhook != nil
        let policy = runtime.purchasePolicy
        let tenant = runtime.tenant
        let claimedProductId = command.productId ?? proven.productId, claimedTransactionId = command.transactionId

        let result = try await store.write { tx in
            switch claim.target {
            case .booking(let id):
                guard let booking = try tx.bookings.booking(id: id, tenantId: claim.tenantId, forUpdate: true), booking.userId == claim.userId else {
                    throw DomainError.bookingNotFound(id)
                }
                try BookingPurchaseRules.check(proven, claimedProductId: claimedProductId, claimedTransactionId: claimedTransactionId, booking: booking,
                                               userId: claim.userId, policy: policy)
                let existing = try tx.purchases.purchase(store: claim.store, environment: claim.environment, transactionId: claim.transactionId, forUpdate: true)
                let revoked = try existing == nil
                    && tx.purchases.isRevoked(tenantId: claim.tenantId, store: claim.store, environment: claim.environment, transactionId: claim.transactionId)
                let plan: PurchasePlan
                if let settled = ClaimPolicy.plan(claim, existing: existing, revokedByApple: revoked, now: now) {
                    plan = settled
                } else {
                    let occupancy = BookingPurchaseRules.needsOccupancy(booking, now: now)
                        ? try tx.bookings.occupancy(tenantId: claim.tenantId, resourceId: booking.resourceId, start: booking.start, end: booking.end,
                                                    excluding: booking.id, now: now)
                        : .none
                    plan = BookingPurchaseRules.plan(claim, booking: booking, resource: tenant.resource(id: booking.resourceId), occupancy: occupancy, now: now)
                }
                try tx.save(plan, tenantId: claim.tenantId, store: claim.store, emitsEvents: emitsEvents, now: now)
                return Result(outcome: plan.outcome, booking: plan.booking ?? booking)
            case .credits:
                // The stored product decides (an operator may have edited it since the pre-check).
                guard let settings = tenant.credits, let product = try tx.credits.product(tenantId: claim.tenantId, productId: claimedProductId) else {
                    throw DomainError(.unprocessable, .unknownProduct, "\(claimedProductId) is not a credit product of this app", field: "productId")
                }
                let creditType = product.creditType
                var claim = claim
                claim.target = .credits(type: creditType)
                try CreditPurchaseRules.check(proven, claimedProductId: claimedProductId, claimedTransactionId: claimedTransactionId, userId: claim.userId,
                                              policy: policy)
                try CreditAccounts.grantBonusIfDue(tx, tenant: tenant, userId: claim.userId, emitsEvents: emitsEvents, now: now)
                let existing = try tx.purchases.purchase(store: claim.store, environment: claim.environment, transactionId: claim.transactionId, forUpdate: true)
                let revoked = try existing == nil
                    && tx.purchases.isRevoked(tenantId: claim.tenantId, store: claim.store, environment: claim.environment, transactionId: claim.transactionId)
                let account = try tx.credits.account(tenantId: claim.tenantId, userId: claim.userId, creditType: creditType, now: now, forUpdate: true)
                let plan = ClaimPolicy.plan(claim, existing: existing, revokedByApple: revoked, now: now)
                    ?? CreditPurchaseRules.plan(claim, product: product, account: account, negativeAllowed: settings.negativeAllowed, now: now)
                try tx.save(plan, tenantId: claim.tenantId, store: claim.store, emitsEvents: emitsEvents, now: now)
                return Result(outcome: plan.outcome, booking: nil, credits: (plan.credits?.account ?? account).summary)
            case .subscription(let originalTransactionId):
                try PurchaseChecks.claimedProduct(proven, claimedProductId: claimedProductId)
                try PurchaseChecks.claimedTransaction(proven, claimedTransactionId: claimedTransactionId)
                try PurchaseChecks.buyer(proven, userId: claim.userId, policy: policy)
                guard let facts = proven.subscription else {
                    throw DomainError(.unprocessable, .productNotSupported, "the transaction is not a period of an auto-renewable subscription", field: "productId")
                }
                let existing = try tx.purchases.purchase(store: claim.store, environment: claim.environment, transactionId: claim.transactionId, forUpdate: true)
                if let existing, existing.tenantId != claim.tenantId || !existing.subscription {
                    // Another app's transaction, or one that paid for something else: a replay.
                    let plan = ClaimPolicy.plan(claim, existing: existing, revokedByApple: false, now: now) ?? PurchasePlan(outcome: .replay(reason: "transaction already used"))
                    try tx.save(plan, tenantId: claim.tenantId, store: claim.store, emitsEvents: emitsEvents, now: now)
                    return Result(outcome: plan.outcome)
                }
                let revoked = try existing == nil
                    && tx.purchases.isRevoked(tenantId: claim.tenantId, store: claim.store, environment: claim.environment, transactionId: claim.transactionId)
                if existing == nil, let plan = ClaimPolicy.plan(claim, existing: nil, revokedByApple: revoked, now: now) {
                    try tx.save(plan, tenantId: claim.tenantId, store: claim.store, emitsEvents: emitsEvents, now: now)
                    return Result(outcome: plan.outcome)
                }
                // Ownership is the subscription's (it moves with link and unlink), not the first claimant's.
                switch try SubscriptionWrites.apply(tx, facts: facts, tenant: tenant, userId: claim.userId, source: "verify_purchase", actor: .user(claim.userId),
                                                    emitsEvents: emitsEvents, now: now) {
                case .ownedByOther:
                    return Result(outcome: .refused(code: .linkedToOtherAccount, message: "this Apple subscription belongs to another account"))
                case .nothing:
                    throw DomainError(.unprocessable, .productNotSupported, "the transaction is not a period of an auto-renewable subscription", field: "productId")
                case .applied(let subscription, _):
                    let inUse = try tx.subscriptions.membership(tenantId: claim.tenantId, userId: claim.userId)?.originalTransactionId == originalTransactionId
                    if let existing {
                        return Result(outcome: .repeated(existing), subscription: subscription, inUse: inUse)
                    }
                    let purchase = Purchase(claim, id: RecordID.next(), status: .applied, outcomeCode: nil, now: now)
                    try tx.purchases.insert(purchase, proofHash: claim.proofHash)
                    return Result(outcome: .applied(purchase), subscription: subscription, inUse: inUse)
                }
            }
        }
        log(result.outcome, proofHash: proven.proofHash, transactionId: proven.transactionId, target: target)
        return result
    }

    /// When a proof is refused: the target must exist for this user (a reader, off the writer), so
    /// that a refusal tells nothing about someone else's target.
    private func checkTarget(_ command: Command) async throws {
        let tenantId = command.runtime.id, userId = command.userId
        switch command.target {
        case .booking(let id):
            let owned = try await store.read { try $0.bookings.booking(id: id, tenantId: tenantId, forUpdate: false)?.userId == userId }
            guard owned else { throw DomainError.bookingNotFound(id) }
        case .credits, .subscription, nil:
            break
        }
    }

    /// The target of a claim that names no booking: the credit type of a credit product, or a
    /// subscription. A booking product needs its booking. Read beside the writer, before
    /// proving, so that an unknown product costs no verification (nor an App Store lookup).
    private func creditTarget(_ command: Command) async throws -> PurchaseTarget {
        let tenant = command.runtime.tenant, productId = command.productId ?? ""
        if let product = tenant.product(id: productId), product.kind != .credits {
            switch product.kind {
            case .booking: throw DomainError(.invalidInput, .missingField, "\(productId) pays for a booking: send bookingId", field: "bookingId")
            // The originalTransactionId comes from the proof.
            case .subscription: return .subscription(originalTransactionId: "")
            case .credits: break
            }
        }
        guard tenant.credits != nil else {
            throw DomainError(.invalidInput, .missingField, "this app sells bookings: send bookingId", field: "bookingId")
        }
        let tenantId = tenant.id
        guard let product = try await store.read({ try $0.credits.product(tenantId: tenantId, productId: productId) }) else {
            throw DomainError(.unprocessable, .unknownProduct, "\(productId) is not a credit product of this app", field: "productId")
        }
        return .credits(type: product.creditType)
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

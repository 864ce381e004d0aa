import AppStoreAPI
import AppleSignedData
import Crypto
import Domain
import Foundation
import Logging

/// `POST /api/apple/notifications/{tenant}`: verify an App Store Server Notification and apply its
/// effect once per uuid, with the notification row, before Apple gets its 200.
public struct ReceiveNotification: Sendable {
    public struct Result: Sendable {
        public var outcome: String
        public var duplicate: Bool
        /// Apple's notificationType (for metrics).
        public var type: String = ""
        /// For a CONSUMPTION_REQUEST's first arrival, its answer's first attempt: `sent`, `failed`
        /// (tried again later), `expired`, `no_consent`, `not_configured` (for metrics).
        public var consumption: String?
    }

    /// This process's name on the consumption answers it tries as requests arrive.
    static let intakeOwner = "intake-" + UUID().uuidString

    let store: any Store
    let kinds: PurchaseKinds
    let clock: any BerthClock
    let logger: Logger
    /// Claims an unclaimed transaction for the user its appAccountToken names (automatic attribution).
    let claims: Claims?

    public init(store: any Store, kinds: PurchaseKinds, clock: any BerthClock, logger: Logger, claims: Claims? = nil) {
        self.store = store
        self.kinds = kinds
        self.clock = clock
        self.logger = logger
        self.claims = claims
    }

    public func callAsFunction(signedPayload: String, runtime: TenantRuntime) async throws -> Result {
        let payloadHash = SHA256.hash(data: Data(signedPayload.utf8)).hexString
        let verified: VerifiedNotification
        do {
            verified = try await runtime.appStore.verifier.verifyNotification(signedPayload, expecting: runtime.appStore.expectations)
        } catch {
            logger.warning(
                "notification refused",
                metadata: ["payload.sha256": .string(String(payloadHash.prefix(16))), "code": .string(error.code.rawValue)]
            )
            throw DomainError(error, field: "signedPayload")
        }
        let payload = verified.payload
        guard let uuid = payload.notificationUUID, let type = payload.notificationType?.rawValue else {
            throw DomainError(.invalidInput, .malformed, "the notification lacks notificationUUID or notificationType", field: "signedPayload")
        }
        let transaction = verified.transaction?.payload
        let environment = (payload.claims.environment ?? transaction?.environment).map(StoreEnvironment.init) ?? .production
        var received = IncomingNotification(
            tenantId: runtime.id,
            uuid: uuid,
            type: NotificationType(rawValue: type),
            subtype: payload.subtype?.rawValue,
            environment: environment,
            signedAt: verified.notification.signedDate.date,
            transactionId: transaction?.transactionId,
            payloadHash: payloadHash,
            originalTransactionId: transaction?.originalTransactionId,
            productId: transaction?.productId,
            purchasedAt: transaction?.purchaseDate?.date,
            proven: verified.transaction.flatMap { AppStoreProofs.proven($0.payload, proofHash: payloadHash) }
        )
        if transaction?.revocationType == .refundProrated { received.revocationPercentage = transaction?.revocationPercentage }
        let incoming = received
        let now = clock.now()
        let emitsEvents = runtime.webhook != nil
        let subscriptionFacts = Self.subscriptionFacts(incoming, verified: verified, tenant: runtime.tenant)
        let tenant = runtime.tenant
        let kinds = self.kinds
        let answer: Result
        do {
            answer = try await store.write { tx in
                if let seen = try tx.notifications.outcome(tenantId: incoming.tenantId, uuid: incoming.uuid) {
                    return Result(outcome: seen, duplicate: true, type: type)
                }
                let store = StoreName.appStore
                let purchase = try incoming.transactionId.flatMap {
                    try tx.purchases.purchase(store: store, environment: incoming.environment, transactionId: $0, forUpdate: true)
                }.flatMap { $0.tenantId == incoming.tenantId ? $0 : nil }
                if let facts = subscriptionFacts {
                    let plan = try Self.subscriptionPlan(tx, incoming, facts: facts, purchase: purchase, tenant: tenant, now: now)
                    try tx.save(plan, for: incoming, store: store, emitsEvents: emitsEvents, now: now)
                    return Result(outcome: plan.effect.outcome, duplicate: false, type: type)
                }
                // A purchase Berth knows: its kind decides. Otherwise the rules for unknown transactions.
                let plan =
                    try purchase.flatMap { purchase in
                        try purchase.kind.map {
                            try kinds.module($0).notificationPlan(incoming, purchase: purchase, tenant: tenant, tx: tx, now: now)
                        }
                    } ?? NotificationRules.plan(incoming, purchase: purchase, now: now)
                try tx.save(plan, for: incoming, store: store, emitsEvents: emitsEvents, now: now)
                return Result(outcome: plan.effect.outcome, duplicate: false, type: type)
            }
        } catch let error as DomainError {
            throw error
        } catch {
            logger.error("notification not stored: \(String(reflecting: error))")
            throw DomainError(.unavailable, .temporarilyUnavailable, "the notification could not be stored; Apple will retry", retryAfter: 60)
        }
        var result = answer
        if !result.duplicate, result.outcome == NotificationEffect.keepUnclaimed.outcome, let proven = incoming.proven, let claims,
            let applied = await attribute(proven, runtime: runtime, claims: claims)
        {
            result.outcome = applied
        }
        logger.info(
            "notification",
            metadata: [
                "uuid": .string(uuid), "type": .string(type), "outcome": .string(result.outcome),
                "duplicate": .stringConvertible(result.duplicate),
            ]
        )
        // Apple's retries of a request (duplicates) owe nothing more: the answer is keyed by its uuid.
        // Asking again makes sure a request stored just before a crash is owed all the same.
        if incoming.type == .consumptionRequest {
            let outcome = await ConsumptionAnswers(store: store, clock: clock, logger: logger, owner: Self.intakeOwner).requested(
                incoming,
                runtime: runtime
            )
            // A retry of a request the tenant does not answer is not counted twice.
            result.consumption = result.duplicate && outcome == .notConfigured ? nil : outcome?.rawValue
        }
        return result
    }

    /// An unclaimed transaction whose appAccountToken names a user Berth has seen it with is claimed
    /// for that user now (outcome `applied_to_token_user`); a refusal keeps it as an unapplied payment
    /// (`unapplied_payment`). Without such a user it waits for the user's next call.
    private func attribute(_ proven: ProvenTransaction, runtime: TenantRuntime, claims: Claims) async -> String? {
        guard let token = proven.appAccountToken?.lowercased(), !token.isEmpty else { return nil }
        let tenantId = runtime.id
        do {
            guard let userId = try await store.read({ try $0.purchases.user(token: token, tenantId: tenantId) }) else { return nil }
            // Only a user the token is derived from (a row recorded under an older rule, where a user
            // id equal to the token sufficed, names nobody: T1).
            guard runtime.purchasePolicy.token(token, names: userId) else {
                logger.warning(
                    "account token recorded for a user it does not name; left waiting",
                    metadata: ["transaction": .string(proven.transactionId)]
                )
                return nil
            }
            let claimed = try await claims.claim(proven: proven, runtime: runtime, userId: userId, named: nil)
            guard case .applied = claimed.outcome else { return nil }
            logger.info("unclaimed transaction applied to the user its token names", metadata: ["transaction": .string(proven.transactionId)])
            return "applied_to_token_user"
        } catch let error as DomainError where error.unappliedPayment != nil {
            return "unapplied_payment"
        } catch {
            logger.warning("unclaimed transaction not attributed: \(error)", metadata: ["transaction": .string(proven.transactionId)])
            return nil
        }
    }

    /// The subscription facts of a notification about an auto-renewable subscription (its
    /// transaction is a subscription period, or it carries renewal info); nil for everything else.
    static func subscriptionFacts(_ incoming: IncomingNotification, verified: VerifiedNotification, tenant: Tenant) -> SubscriptionFacts? {
        guard NotificationType.subscriptionTypes.contains(incoming.type) else { return nil }
        let transaction = verified.transaction?.payload
        if let product = transaction?.productId, let known = tenant.product(id: product), known.kind != .subscription { return nil }
        guard transaction?.expiresDate != nil || verified.renewalInfo != nil else { return nil }
        var facts = SubscriptionFactsReading.facts(
            transaction: transaction,
            renewal: verified.renewalInfo?.payload,
            signedAt: incoming.signedAt,
            source: "notification:\(incoming.type.rawValue)",
            notificationType: incoming.type,
            subtype: incoming.subtype
        )
        // The notification's own signed date orders it against everything else Berth applied.
        facts?.signedAt = incoming.signedAt
        return facts
    }

    /// Plans a subscription notification: the record (created without an owner when nobody has
    /// claimed it yet, so that its user finds it up to date), and the purchase row of a refunded period.
    /// A renewal period Apple signed in a notification (DID_RENEW, and any other that carries a new
    /// period) is a purchase of the subscription's owner, with the price Apple signed: the operator's
    /// money counts every renewal. Only a period Berth has no row for, of a subscription a user owns,
    /// not revoked; the first period is the app's own purchase.
    static func recordRenewal(_ tx: any StoreSession, _ incoming: IncomingNotification, subscription: Subscription, now: Date) throws -> Purchase? {
        guard let proven = incoming.proven, let owner = subscription.userId, !proven.revoked,
            proven.transactionId != proven.originalTransactionId, proven.originalTransactionId == subscription.originalTransactionId,
            try tx.purchases.purchase(store: .appStore, environment: proven.environment, transactionId: proven.transactionId, forUpdate: true) == nil
        else { return nil }
        var claim = PurchaseClaim(
            proven,
            tenantId: subscription.tenantId,
            userId: owner,
            target: .subscription(originalTransactionId: subscription.originalTransactionId),
            now: now
        )
        claim.proofKind = "notification"
        let purchase = Purchase(claim, id: RecordID.next(), status: .applied, outcomeCode: nil, now: now)
        try tx.purchases.insert(purchase, proofHash: claim.proofHash)
        return purchase
    }

    static func subscriptionPlan(
        _ tx: any StoreSession,
        _ incoming: IncomingNotification,
        facts: SubscriptionFacts,
        purchase: Purchase?,
        tenant: Tenant,
        now: Date
    ) throws -> NotificationPlan {
        let scene = try SubscriptionWrites.scene(tx, facts: facts, tenantId: tenant.id, userId: nil)
        let changes = SubscriptionChanges.plan(
            facts,
            scene: scene,
            tenant: tenant,
            userId: nil,
            source: "notification:\(incoming.type.rawValue)",
            actor: .apple,
            now: now
        )
        let outcome: String
        var renewal: Purchase?
        switch changes.outcome {
        case .applied(let subscription, let stale):
            outcome = stale ? "subscription_stale" : "subscription_\(subscription.state(at: now).rawValue)"
            if purchase == nil { renewal = try Self.recordRenewal(tx, incoming, subscription: subscription, now: now) }
        case .nothing, .ownedByOther:
            outcome = "subscription_unknown"
        }
        var plan = NotificationPlan(effect: .recordOnly(outcome))
        if !changes.change.isEmpty { plan.effects = [.subscription(changes.change)] }
        plan.events = changes.events
        if let purchase {
            plan.purchase = try SubscriptionKind().notificationPlan(incoming, purchase: purchase, tenant: tenant, tx: tx, now: now).purchase
        }
        plan.audit =
            changes.audit + [
                AuditRecord(
                    tenantId: incoming.tenantId,
                    actor: .apple,
                    action: .notification(incoming.type),
                    bookingId: nil,
                    purchaseId: purchase?.id ?? renewal?.id,
                    detail: [
                        "uuid": incoming.uuid, "outcome": outcome,
                        "originalTransactionId": facts.originalTransactionId,
                    ].merging(renewal.map { ["renewalTransactionId": $0.transactionId] } ?? [:]) { first, _ in first },
                    at: now
                )
            ]
        return plan
    }
}

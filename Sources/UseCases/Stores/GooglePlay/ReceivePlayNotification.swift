import Crypto
import Domain
import Foundation
import GooglePlayAPI
import JWTKit
import Logging
import Synchronization

/// `POST /api/google/notifications/{tenant}`: a Pub/Sub push of a Google Play real-time developer
/// notification. The push's OIDC token must be Google's (RS256 by a key of the configured key set,
/// issuer accounts.google.com, the tenant's audience, the push service account's verified email).
/// The notification only says that something changed: Berth asks the Play Developer API for the
/// purchase's state and applies that, once per Pub/Sub message id, through the same rules as the
/// App Store's notifications (a voided purchase is a REFUND: credits clawed back, booking cancelled,
/// subscription revoked).
public struct ReceivePlayNotification: Sendable {
    public struct Result: Sendable {
        public var outcome: String
        public var duplicate: Bool
        /// `subscription:4`, `one_time_product:1`, `voided_purchase`, `test` (for logs and metrics).
        public var kind: String
    }

    let store: any Store
    let kinds: PurchaseKinds
    let clock: any BerthClock
    let logger: Logger
    /// Applies a pending purchase once Google says it is paid (nil: such purchases wait for the app).
    let claims: Claims?
    /// What Google answered about voids in the last minute (V3: forged void pushes replayed with one
    /// genuine push token cost at most one Google call per package and known token a minute).
    let voidAnswers = VoidAnswers()

    public init(store: any Store, kinds: PurchaseKinds, clock: any BerthClock, logger: Logger, claims: Claims? = nil) {
        self.store = store
        self.kinds = kinds
        self.clock = clock
        self.logger = logger
        self.claims = claims
    }

    struct PushClaims: JWTPayload {
        var iss: IssuerClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim?
        var email: String?
        var email_verified: Bool?

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired(currentDate: Date())
        }
    }

    static let unauthenticated = DomainError(
        .unauthenticated,
        .invalidSignature,
        "the push carries no valid Google OIDC token for this endpoint",
        field: "Authorization"
    )

    /// Checks the push's bearer token. Throws 401 for a token that is not Google's for this tenant, 503 when Google's key set cannot be had.
    func authenticate(_ authorization: String?, play: PlayRuntime) async throws {
        guard let push = play.settings.push, let keys = play.pushKeys else {
            throw DomainError(.notFound, .notFound, "this app takes no Google Play notifications")
        }
        guard let authorization, authorization.hasPrefix("Bearer "), let parts = RS256JWT.parts(String(authorization.dropFirst(7))),
            parts.header["alg"]?.string == "RS256"
        else { throw Self.unauthenticated }
        let token = String(authorization.dropFirst(7))
        let collection: JWTKeyCollection?
        do { collection = try await keys.keys(for: parts.kid) } catch {
            throw DomainError(.unavailable, .temporarilyUnavailable, "Google's key set cannot be fetched; Pub/Sub will retry", retryAfter: 60)
        }
        guard let collection else { throw Self.unauthenticated }
        let claims: PushClaims
        do { claims = try await collection.verify(token, as: PushClaims.self) } catch { throw Self.unauthenticated }
        guard ["https://accounts.google.com", "accounts.google.com"].contains(claims.iss.value), claims.aud.value.contains(push.audience),
            claims.email == push.serviceAccountEmail, claims.email_verified == true
        else { throw Self.unauthenticated }
    }

    public func callAsFunction(body: Data, authorization: String?, runtime: TenantRuntime) async throws -> Result {
        guard let play = runtime.play else { throw DomainError(.notFound, .notFound, "this app takes no Google Play notifications") }
        try await authenticate(authorization, play: play)
        guard let push = try? JSONDecoder().decode(PubSubPush.self, from: body), let message = push.message, let messageId = message.id,
            !messageId.isEmpty,
            messageId.utf8.count <= 200, let data = message.data.flatMap({ Data(base64Encoded: $0) }),
            let notification = try? JSONDecoder().decode(DeveloperNotification.self, from: data)
        else {
            throw DomainError(.invalidInput, .malformed, "not a Pub/Sub push of a Google Play developer notification", field: "message")
        }
        guard let package = notification.packageName, play.settings.packageNames.contains(package) else {
            throw DomainError(.unprocessable, .invalidField, "the notification is for another app", field: "packageName")
        }
        let uuid = "google_play:" + messageId
        let tenantId = runtime.id
        if let seen = try await store.read({ try $0.notifications.outcome(tenantId: tenantId, uuid: uuid) }) {
            return Result(outcome: seen, duplicate: true, kind: Self.kind(notification))
        }
        let now = clock.now()
        let result: Result
        if let voided = notification.voidedPurchaseNotification, let token = voided.purchaseToken {
            // Google's token authenticates the sender, not this body (a captured one replays for an
            // hour): a void is believed only when Google says so itself (T6).
            if try await confirmsVoid(token: token, package: package, subscription: voided.productType == 1, runtime: runtime, play: play, now: now) {
                result = try await void(
                    token: token,
                    orderId: voided.orderId,
                    uuid: uuid,
                    package: package,
                    subscription: voided.productType == 1,
                    runtime: runtime,
                    play: play,
                    now: now
                )
            } else {
                logger.warning("google play void push not confirmed by Google; nothing revoked", metadata: ["message": .string(messageId)])
                result = try await record(uuid: uuid, outcome: "void_unconfirmed", kind: Self.kind(notification), runtime: runtime, now: now)
            }
        } else if let change = notification.subscriptionNotification, let token = change.purchaseToken {
            result = try await subscriptionChanged(
                token: token,
                type: change.notificationType ?? 0,
                googleProductId: change.subscriptionId,
                uuid: uuid,
                package: package,
                runtime: runtime,
                play: play,
                now: now
            )
        } else if let bought = notification.oneTimeProductNotification, bought.notificationType == 1, let token = bought.purchaseToken,
            let outcome = try await completePending(token: token, runtime: runtime, play: play)
        {
            // ONE_TIME_PRODUCT_PURCHASED of a purchase its app sent while it waited for payment.
            result = try await record(uuid: uuid, outcome: outcome, kind: Self.kind(notification), runtime: runtime, now: now)
        } else {
            // A one-time product's purchase is applied when the app sends it; a test says nothing.
            result = try await record(uuid: uuid, outcome: "recorded", kind: Self.kind(notification), runtime: runtime, now: now)
        }
        logger.info(
            "google play notification",
            metadata: [
                "message": .string(messageId), "kind": .string(result.kind), "outcome": .string(result.outcome),
                "duplicate": .stringConvertible(result.duplicate),
            ]
        )
        return result
    }

    /// A one-time purchase its app sent while Google waited for the payment: proven again now and
    /// claimed for the user (and booking) it was sent for, through the same checks as the app's call.
    /// nil when nobody sent it pending; Google still waiting leaves the claim for the next push.
    func completePending(token: String, runtime: TenantRuntime, play: PlayRuntime) async throws -> String? {
        guard let claims else { return nil }
        let tenantId = runtime.id
        guard let pending = try await store.read({ try $0.play.pendingClaim(tenantId: tenantId, purchaseToken: token) }),
            let product = runtime.tenant.product(id: pending.productId)
        else { return nil }
        let outcome: String
        do {
            let proven = try await PlayProofs.prove(token: token, product: product, package: pending.packageName, runtime: play, now: clock.now())
            let named: PurchaseTarget? = pending.bookingId.map { .booking(id: $0) }
            let claimed = try await claims.claim(proven: proven, runtime: runtime, userId: pending.userId, named: named)
            switch claimed.outcome {
            case .applied: outcome = "pending_purchase_applied"
            case .repeated: outcome = "pending_purchase_already_applied"
            case .replay: outcome = "pending_purchase_replay"
            case .needsRefund: outcome = "pending_purchase_needs_refund"
            case .refused(let code, _): outcome = "pending_purchase_refused:\(code.rawValue)"
            }
        } catch let error as DomainError where error.code == .purchasePending {
            return "pending_purchase_still_waiting"
        } catch let error as DomainError where error.kind == .unavailable {
            throw error
        } catch let error as DomainError where error.unappliedPayment != nil {
            outcome = "unapplied_payment"
        } catch let error as DomainError {
            logger.warning("a pending Google Play purchase could not be applied: \(error.code.rawValue)", metadata: ["tenant": .string(tenantId)])
            outcome = "pending_purchase_refused:\(error.code.rawValue)"
        }
        try await store.write { tx in try tx.play.forgetPending(tenantId: tenantId, purchaseToken: token) }
        logger.info("pending google play purchase completed", metadata: ["tenant": .string(tenantId), "outcome": .string(outcome)])
        return outcome
    }

    static func kind(_ n: DeveloperNotification) -> String {
        if let s = n.subscriptionNotification { return "subscription:\(s.notificationType ?? 0)" }
        if let o = n.oneTimeProductNotification { return "one_time_product:\(o.notificationType ?? 0)" }
        if n.voidedPurchaseNotification != nil { return "voided_purchase" }
        return "test"
    }

    static func incoming(
        _ uuid: String,
        type: NotificationType,
        token: String,
        environment: StoreEnvironment,
        now: Date,
        tenantId: String
    ) -> IncomingNotification {
        IncomingNotification(
            tenantId: tenantId,
            uuid: uuid,
            type: type,
            subtype: nil,
            environment: environment,
            signedAt: now,
            transactionId: token,
            payloadHash: PlayProofs.proofHash(uuid)
        )
    }

    private func record(uuid: String, outcome: String, kind: String, runtime: TenantRuntime, now: Date) async throws -> Result {
        let incoming = Self.incoming(
            uuid,
            type: NotificationType(rawValue: "GOOGLE_PLAY"),
            token: "",
            environment: .production,
            now: now,
            tenantId: runtime.id
        )
        return try await store.write { tx in
            if let seen = try tx.notifications.outcome(tenantId: incoming.tenantId, uuid: uuid) {
                return Result(outcome: seen, duplicate: true, kind: kind)
            }
            try tx.notifications.insert(incoming, outcome: outcome, receivedAt: now)
            return Result(outcome: outcome, duplicate: false, kind: kind)
        }
    }

    /// A subscription changed: its state is read from Google and applied to its record (created
    /// without an owner when nobody has verified it yet); a revocation also marks its purchase refunded.
    private func subscriptionChanged(
        token: String,
        type: Int,
        googleProductId: String?,
        uuid: String,
        package: String,
        runtime: TenantRuntime,
        play: PlayRuntime,
        now: Date
    ) async throws -> Result {
        let kind = "subscription:\(type)"
        let state: SubscriptionPurchaseV2
        do { state = try await play.client.subscriptionPurchase(package: package, token: token) } catch {
            if error.isTransient {
                throw DomainError(.unavailable, .googlePlayUnavailable, "Google Play could not be asked; Pub/Sub will retry", retryAfter: 30)
            }
            return try await record(uuid: uuid, outcome: "unknown_purchase", kind: kind, runtime: runtime, now: now)
        }
        let revoked = type == 12
        let tenant = runtime.tenant
        guard
            let product = (googleProductId ?? state.lineItems?.first?.productId).flatMap({ id in
                tenant.product(googleProductId: id, basePlanId: state.lineItems?.first(where: { $0.productId == id })?.offerDetails?.basePlanId)
            }), product.kind == .subscription, let facts = PlayProofs.facts(state, token: token, product: product, now: now, revoked: revoked)
        else {
            return try await record(uuid: uuid, outcome: "unknown_product", kind: kind, runtime: runtime, now: now)
        }
        let incoming = Self.incoming(
            uuid,
            type: revoked ? .revoke : NotificationType(rawValue: "GOOGLE_PLAY_SUBSCRIPTION_\(type)"),
            token: token,
            environment: facts.environment,
            now: now,
            tenantId: runtime.id
        )
        let emitsEvents = runtime.webhook != nil
        return try await store.write { tx in
            if let seen = try tx.notifications.outcome(tenantId: incoming.tenantId, uuid: uuid) {
                return Result(outcome: seen, duplicate: true, kind: kind)
            }
            let outcome: String
            var renewal: Purchase?
            switch try SubscriptionWrites.apply(
                tx,
                facts: facts,
                tenant: tenant,
                userId: nil,
                source: "google_play:\(type)",
                actor: .provider(GooglePlaySettings.store),
                emitsEvents: emitsEvents,
                now: now
            ) {
            case .applied(let subscription, let stale):
                outcome = stale ? "subscription_stale" : "subscription_\(subscription.state(at: now).rawValue)"
                renewal = try Self.recordRenewal(tx, subscription: subscription, facts: facts, now: now)
            case .nothing, .ownedByOther: outcome = "subscription_unknown"
            }
            var plan = NotificationPlan(effect: .recordOnly(outcome))
            if revoked,
                var purchase = try tx.purchases.purchase(
                    store: GooglePlaySettings.store,
                    environment: facts.environment,
                    transactionId: token,
                    forUpdate: true
                ),
                purchase.tenantId == tenant.id, purchase.status == .applied
            {
                purchase.refund(at: now)
                plan.purchase = purchase
            }
            var detail = ["uuid": uuid, "outcome": outcome, "purchaseToken.sha256": String(PlayProofs.proofHash(token).prefix(16))]
            if let renewal { detail["renewalOrderId"] = renewal.transactionId }
            plan.audit = [
                AuditRecord(
                    tenantId: tenant.id,
                    actor: .provider(GooglePlaySettings.store),
                    action: .notification(incoming.type),
                    bookingId: nil,
                    purchaseId: plan.purchase?.id ?? renewal?.id,
                    detail: detail,
                    at: now
                )
            ]
            try tx.save(plan, for: incoming, store: GooglePlaySettings.store, emitsEvents: emitsEvents, now: now)
            return Result(outcome: outcome, duplicate: false, kind: kind)
        }
    }

    /// Each paid renewal of an owned Google Play subscription is a purchase of its own: its order id
    /// (`GPA.….N`, the first renewal `..0`) is the transaction id, so revenue and refunds of renewals
    /// show, and a notification repeated or a second read of the same period adds nothing.
    static func recordRenewal(_ tx: any StoreSession, subscription: Subscription, facts: SubscriptionFacts, now: Date) throws -> Purchase? {
        guard let owner = subscription.userId, let period = facts.transaction, period.transactionId.contains(".."),
            period.revokedAt == nil, subscription.latestTransactionId == period.transactionId,
            try tx.purchases.purchase(
                store: GooglePlaySettings.store,
                environment: facts.environment,
                transactionId: period.transactionId,
                forUpdate: false
            ) == nil
        else { return nil }
        var claim = PurchaseClaim(
            tenantId: subscription.tenantId,
            userId: owner,
            target: .subscription(originalTransactionId: subscription.originalTransactionId),
            store: GooglePlaySettings.store,
            environment: facts.environment,
            transactionId: period.transactionId,
            originalTransactionId: subscription.originalTransactionId,
            productId: period.productId,
            purchasedAt: period.purchasedAt,
            proofHash: PlayProofs.proofHash(period.transactionId),
            quantity: 1,
            proofKind: "play"
        )
        claim.orderId = period.transactionId
        claim.priceMilliunits = period.priceMilliunits
        claim.currency = period.currency
        let purchase = Purchase(claim, id: RecordID.next(), status: .applied, outcomeCode: nil, now: now)
        try tx.purchases.insert(purchase, proofHash: claim.proofHash)
        return purchase
    }

    /// A voided purchase (refund, chargeback, revocation), from a push or the sweep: a REFUND of the
    /// purchase through its kind; a purchase Berth has not seen yet is remembered as revoked, so that
    /// it never grants anything later. A renewal's order id (`GPA.….N`) names its own purchase row.
    func void(
        token: String,
        orderId: String? = nil,
        uuid: String,
        package: String,
        subscription: Bool,
        runtime: TenantRuntime,
        play: PlayRuntime,
        now: Date
    ) async throws -> Result {
        let kind = "voided_purchase"
        let tenant = runtime.tenant
        let kinds = self.kinds
        let emitsEvents = runtime.webhook != nil
        // A subscription's record follows Google's state (expired, revoked) as well (the sweep does not
        // say what was voided: a purchase Berth recorded as a subscription's says it).
        var isSubscription = subscription
        if !isSubscription {
            let tenantId = tenant.id
            isSubscription = try await store.read { tx in
                try Self.purchase(token, tenantId: tenantId, tx: tx, forUpdate: false)?.kind == .subscription
            }
        }
        var facts: SubscriptionFacts?
        if isSubscription, let state = try? await play.client.subscriptionPurchase(package: package, token: token),
            let product = state.lineItems?.first?.productId.flatMap({
                tenant.product(googleProductId: $0, basePlanId: state.lineItems?.first?.offerDetails?.basePlanId)
            })
        {
            facts = PlayProofs.facts(state, token: token, product: product, now: now, revoked: true)
        }
        return try await store.write { [facts] tx in
            if let seen = try tx.notifications.outcome(tenantId: tenant.id, uuid: uuid) { return Result(outcome: seen, duplicate: true, kind: kind) }
            let renewal = try orderId.flatMap { order in
                order.contains("..") ? try Self.purchase(order, tenantId: tenant.id, tx: tx, forUpdate: true) : nil
            }
            let purchase = try renewal ?? Self.purchase(token, tenantId: tenant.id, tx: tx, forUpdate: true)
            if let facts {
                _ = try SubscriptionWrites.apply(
                    tx,
                    facts: facts,
                    tenant: tenant,
                    userId: nil,
                    source: "google_play:voided",
                    actor: .provider(GooglePlaySettings.store),
                    emitsEvents: emitsEvents,
                    now: now
                )
            }
            let incoming = Self.incoming(
                uuid,
                type: .refund,
                token: token,
                environment: purchase?.environment ?? facts?.environment ?? .production,
                now: now,
                tenantId: tenant.id
            )
            let plan =
                try purchase.flatMap { purchase in
                    try purchase.kind.map { try kinds.module($0).notificationPlan(incoming, purchase: purchase, tenant: tenant, tx: tx, now: now) }
                } ?? NotificationRules.plan(incoming, purchase: purchase, now: now)
            try tx.save(plan, for: incoming, store: GooglePlaySettings.store, emitsEvents: emitsEvents, now: now)
            return Result(outcome: plan.effect.outcome, duplicate: false, kind: kind)
        }
    }

    /// Whether Google itself says `token` was voided: a one-time purchase Berth knows is read
    /// (`purchaseState` 1, cancelled); otherwise the voided-purchases list of the last 30 days is
    /// searched for it. Google out of reach is a 503 (Pub/Sub retries); an unknown token is not confirmed.
    func confirmsVoid(token: String, package: String, subscription: Bool, runtime: TenantRuntime, play: PlayRuntime, now: Date) async throws -> Bool {
        let tenantId = runtime.id
        let known = try await store.read { tx in try Self.purchase(token, tenantId: tenantId, tx: tx, forUpdate: false) }
        do {
            if !subscription, let known, known.kind != .subscription, let product = runtime.tenant.product(id: known.productId) {
                let key = "\(tenantId)|\(package)|\(token)"
                let cancelled: Bool
                if let answer = voidAnswers.purchaseCancelled(key, now: now) {
                    // Read less than a minute ago and not cancelled then: Pub/Sub redelivers a genuine
                    // void after the minute; a forged one costs no call.
                    guard answer else { throw Self.askedRecently }
                    cancelled = answer
                } else {
                    let state = try await play.client.productPurchase(package: package, productId: product.googleProductId, token: token)
                    cancelled = state.purchaseState == 1
                    voidAnswers.keep(purchaseCancelled: cancelled, key, now: now)
                }
                if cancelled { return true }
            }
            let listKey = "\(tenantId)|\(package)"
            if let voided = voidAnswers.voidedTokens(listKey, now: now) {
                guard voided.contains(token) else { throw Self.askedRecently }
                return true
            }
            var tokens = Set<String>()
            var pageToken: String?
            var pages = 0
            repeat {
                let page = try await play.client.voidedPurchases(package: package, since: now.addingTimeInterval(-30 * 86_400), pageToken: pageToken)
                for purchase in page.voidedPurchases ?? [] { if let voided = purchase.purchaseToken { tokens.insert(voided) } }
                pageToken = page.tokenPagination?.nextPageToken
                pages += 1
            } while pageToken != nil && pages < 20
            voidAnswers.keep(voidedTokens: tokens, listKey, now: now)
            return tokens.contains(token)
        } catch let error as PlayError {
            if error.isTransient {
                throw DomainError(.unavailable, .googlePlayUnavailable, "Google Play could not be asked; Pub/Sub will retry", retryAfter: 30)
            }
            return false
        }
    }

    /// A void Google did not confirm when last asked, less than ``VoidAnswers/lifetime`` ago: retried
    /// by Pub/Sub (503) until Berth may ask again, so that a genuine void is applied a minute late at
    /// worst and a forged one costs no call to Google (V3).
    static let askedRecently = DomainError(
        .unavailable,
        .googlePlayUnavailable,
        "Google was asked about this void less than a minute ago and did not confirm it; Pub/Sub will retry",
        retryAfter: Int(VoidAnswers.lifetime)
    )

    /// The tenant's purchase of a Play token, in whichever environment it was recorded (a token is Google's, unique across them).
    static func purchase(_ token: String, tenantId: String, tx: any StoreSession, forUpdate: Bool) throws -> Purchase? {
        for environment in StoreEnvironment.stores {
            if let found = try tx.purchases.purchase(
                store: GooglePlaySettings.store,
                environment: environment,
                transactionId: token,
                forUpdate: forUpdate
            ),
                found.tenantId == tenantId
            {
                return found
            }
        }
        return nil
    }
}

/// Google's answers about voided purchases, kept for ``lifetime`` (by the injected clock): the voided
/// list of a package (every page read, as a set of tokens) and whether a known one-time purchase reads
/// cancelled. A void Google reports after the list was read is found by the next read a minute later,
/// or by the periodic voided sweep.
final class VoidAnswers: Sendable {
    static let lifetime: TimeInterval = 60
    /// Most entries kept; past it, the expired ones are dropped, then everything.
    static let capacity = 10_000

    private struct State {
        var lists: [String: (at: Date, tokens: Set<String>)] = [:]
        var purchases: [String: (at: Date, cancelled: Bool)] = [:]
    }

    private let state = Mutex(State())

    func voidedTokens(_ key: String, now: Date) -> Set<String>? {
        state.withLock { state in
            guard let entry = state.lists[key], Self.fresh(entry.at, now) else { return nil }
            return entry.tokens
        }
    }

    func keep(voidedTokens tokens: Set<String>, _ key: String, now: Date) {
        state.withLock { state in
            if state.lists.count >= Self.capacity { state.lists = state.lists.filter { Self.fresh($0.value.at, now) } }
            if state.lists.count >= Self.capacity { state.lists = [:] }
            state.lists[key] = (now, tokens)
        }
    }

    func purchaseCancelled(_ key: String, now: Date) -> Bool? {
        state.withLock { state in
            guard let entry = state.purchases[key], Self.fresh(entry.at, now) else { return nil }
            return entry.cancelled
        }
    }

    func keep(purchaseCancelled cancelled: Bool, _ key: String, now: Date) {
        state.withLock { state in
            if state.purchases.count >= Self.capacity { state.purchases = state.purchases.filter { Self.fresh($0.value.at, now) } }
            if state.purchases.count >= Self.capacity { state.purchases = [:] }
            state.purchases[key] = (now, cancelled)
        }
    }

    private static func fresh(_ at: Date, _ now: Date) -> Bool {
        let age = now.timeIntervalSince(at)
        return age >= 0 && age < lifetime
    }
}

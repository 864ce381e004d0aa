import AppleSignedData
import AppStoreAPI
import Crypto
import Domain
import Foundation
import Logging

/// Subscriptions as accounts and the apps' backends see them: entitlements, listings, the link
/// policy, memberships paid elsewhere, refreshes from Apple and receipts.
public struct Subscriptions: Sendable {
    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    public var now: Date { clock.now() }

    /// A subscription with whether its owner uses it as its membership.
    public struct Listed: Sendable {
        public var subscription: Subscription
        public var inUse: Bool

        public init(subscription: Subscription, inUse: Bool) {
            self.subscription = subscription
            self.inUse = inUse
        }
    }

    // MARK: Reading

    public func list(runtime: TenantRuntime, userId: String, page: Page, environment: String? = nil) async throws -> (items: [Listed], total: Int) {
        let tenantId = runtime.id
        return try await store.read { tx in
            let membership = try tx.subscriptions.membership(tenantId: tenantId, userId: userId)
            let (items, total) = try tx.subscriptions.owned(tenantId: tenantId, userId: userId, page: page)
            return (items.map { Listed(subscription: $0, inUse: membership?.originalTransactionId == $0.originalTransactionId) }, total)
        }
    }

    /// One subscription; with `userId`, only if that account owns it (404 otherwise, whoever owns it).
    public func subscription(runtime: TenantRuntime, originalTransactionId: String, userId: String?) async throws -> Listed {
        let tenantId = runtime.id
        let found: Listed? = try await store.read { tx in
            guard let s = try tx.subscriptions.subscription(tenantId: tenantId, originalTransactionId: originalTransactionId, forUpdate: false) else { return nil }
            if let userId, s.userId != userId { return nil }
            let membership = try tx.subscriptions.membership(tenantId: tenantId, originalTransactionId: originalTransactionId)
            return Listed(subscription: s, inUse: membership != nil && membership?.userId == s.userId)
        }
        guard let found else { throw Self.notFound(originalTransactionId) }
        return found
    }

    public func receipt(runtime: TenantRuntime, originalTransactionId: String) async throws -> (Listed, String?) {
        let listed = try await subscription(runtime: runtime, originalTransactionId: originalTransactionId, userId: nil)
        let tenantId = runtime.id
        let receipt = try await store.read { try $0.subscriptions.receipt(tenantId: tenantId, originalTransactionId: originalTransactionId) }
        return (listed, receipt)
    }

    static func notFound(_ id: String) -> DomainError {
        DomainError(.notFound, .subscriptionNotFound, "no subscription \(id) is known", field: "originalTransactionId")
    }

    // MARK: Link policy

    /// How a caller may name the subscription to link or unlink.
    public enum LinkAuthority: Sendable {
        /// The app's backend (a server key): by its original transaction id alone.
        case byId
        /// Anyone else (a user's token, a client key): only with a proof from the store that this
        /// device holds the subscription (a JWS, a receipt, or an id whose transaction carries the
        /// user's appAccountToken).
        case proof(PurchaseProof?)
    }

    /// Checks the proof a user-initiated link or unlink must carry: it verifies for the app, names
    /// the same subscription, and was bought by this account where the app ties purchases to accounts.
    public func authorize(_ authority: LinkAuthority, runtime: TenantRuntime, userId: String, originalTransactionId: String) async throws {
        guard case .proof(let proof) = authority else { return }
        guard let proof else {
            throw DomainError(.forbidden, .proofRequired,
                              "linking or unlinking from the app needs the store's proof: send jwsRepresentation, receipt or transactionId with it (bare ids are for the app's backend)",
                              field: "jwsRepresentation")
        }
        let proven = try await PurchaseProver(logger: logger).prove(proof, productId: nil, userId: userId, runtime: runtime)
        guard proven.originalTransactionId == originalTransactionId else {
            throw DomainError(.unprocessable, .transactionMismatch, "the proof is of subscription \(proven.originalTransactionId), not \(originalTransactionId)",
                              field: "originalTransactionId")
        }
        try PurchaseChecks.buyer(proven, userId: userId, policy: runtime.purchasePolicy)
    }

    public enum LinkResult: Sendable {
        case linked(Membership, initial: Bool)
        case refused(LinkPolicy.Refusal)
    }

    /// Links an Apple subscription Berth knows to an account, by the link policy; a refused claim of
    /// another account's subscription is recorded as a cheat attempt (and the refusal thrown).
    public func link(runtime: TenantRuntime, userId: String, originalTransactionId: String, force: Bool, actor: Actor, source: String = "link") async throws -> Membership {
        let tenant = runtime.tenant, now = clock.now(), emitsEvents = runtime.webhook != nil
        let result: LinkResult = try await store.write { tx in
            guard let subscription = try tx.subscriptions.subscription(tenantId: tenant.id, originalTransactionId: originalTransactionId, forUpdate: true) else {
                throw Self.notFound(originalTransactionId)
            }
            let account = try tx.subscriptions.membership(tenantId: tenant.id, userId: userId)
            let appleSide = try tx.subscriptions.membership(tenantId: tenant.id, originalTransactionId: originalTransactionId)
            switch LinkPolicy.decide(userId: userId, subscription: subscription, accountMembership: account, appleSideMembership: appleSide, force: force, now: now) {
            case .refuse(let refusal):
                if refusal.cheat { try SubscriptionWrites.recordCheat(tx, tenantId: tenant.id, userId: userId, subscription: subscription, source: source, now: now) }
                return .refused(refusal)
            case .sync(let membership):
                if membership != account { try tx.subscriptions.save(membership) }
                return .linked(membership, initial: false)
            case .link(let membership, let initial):
                var owned = subscription
                if owned.userId == nil {
                    owned.userId = userId
                    owned.updatedAt = now
                    try tx.subscriptions.save(owned)
                    if emitsEvents { try tx.outbox.enqueue([SubscriptionRules.event(owned, now: now, reason: "linked")], tenantId: tenant.id, now: now) }
                }
                try tx.subscriptions.save(membership)
                try tx.audit.append(AuditRecord(tenantId: tenant.id, actor: actor, action: .subscriptionLinked, bookingId: nil, purchaseId: nil,
                                                detail: ["originalTransactionId": originalTransactionId, "userId": userId, "force": String(force),
                                                         "replaced": account?.originalTransactionId ?? account?.payMethod ?? "none"], at: now))
                return .linked(membership, initial: initial)
            }
        }
        switch result {
        case .linked(let membership, _): return membership
        case .refused(let refusal): throw DomainError(.unprocessable, refusal.code, refusal.message, field: refusal.field)
        }
    }

    /// Unlinks an Apple subscription from the account that owns it: the subscription keeps its state
    /// but no owner; the membership made from it, if any, is removed and archived.
    public func unlink(runtime: TenantRuntime, userId: String, originalTransactionId: String, actor: Actor) async throws {
        let tenant = runtime.tenant, now = clock.now(), emitsEvents = runtime.webhook != nil
        try await store.write { tx in
            guard var subscription = try tx.subscriptions.subscription(tenantId: tenant.id, originalTransactionId: originalTransactionId, forUpdate: true) else {
                throw Self.notFound(originalTransactionId)
            }
            guard subscription.userId == userId else {
                throw DomainError(.unprocessable, .invalid, "this Apple subscription is not linked to the account", field: "userId")
            }
            var snapshot: String?
            if let membership = try tx.subscriptions.membership(tenantId: tenant.id, originalTransactionId: originalTransactionId) {
                guard membership.userId == userId else {
                    throw DomainError(.unprocessable, .invalid, "this Apple subscription is not linked to the account", field: "userId")
                }
                snapshot = Self.snapshot(membership)
                try tx.subscriptions.deleteMembership(tenantId: tenant.id, userId: userId)
            }
            subscription.userId = nil
            subscription.updatedAt = now
            try tx.subscriptions.save(subscription)
            try tx.subscriptions.insert(UnlinkArchive(id: RecordID.next(), tenantId: tenant.id, userId: userId, originalTransactionId: originalTransactionId,
                                                      actor: actor.rawValue, membershipSnapshot: snapshot, at: now))
            try tx.audit.append(AuditRecord(tenantId: tenant.id, actor: actor, action: .subscriptionUnlinked, bookingId: nil, purchaseId: nil,
                                            detail: ["originalTransactionId": originalTransactionId, "userId": userId], at: now))
            if emitsEvents {
                var event = SubscriptionRules.event(subscription, now: now, reason: "unlinked")
                event.data["previousUserId"] = userId
                try tx.outbox.enqueue([event], tenantId: tenant.id, now: now)
            }
        }
    }

    static func snapshot(_ m: Membership) -> String {
        var fields: [String: String] = ["userId": m.userId, "autoRenew": String(m.autoRenew), "updatedAt": BerthJSON.timestamp(m.updatedAt)]
        if let v = m.originalTransactionId { fields["originalTransactionId"] = v }
        if let v = m.payMethod { fields["payMethod"] = v }
        if let v = m.tier { fields["tier"] = v }
        if let v = m.cycle { fields["cycle"] = v }
        if let v = m.expiresAt { fields["expiresAt"] = BerthJSON.timestamp(v) }
        return String(decoding: (try? BerthJSON.shared.encode(fields)) ?? Data(), as: UTF8.self)
    }

    // MARK: Memberships paid elsewhere

    public func membership(runtime: TenantRuntime, userId: String) async throws -> Membership? {
        let tenantId = runtime.id
        return try await store.read { try $0.subscriptions.membership(tenantId: tenantId, userId: userId) }
    }

    /// Records (or, with nil `expiresAt` and `payMethod`, replaces) the membership an account has
    /// outside the App Store, so that the link policy sees it. An account using an Apple subscription
    /// keeps it unless `replaceApple`.
    public func recordMembership(runtime: TenantRuntime, userId: String, payMethod: String?, tier: String?, cycle: String?, expiresAt: Date?,
                                 autoRenew: Bool, actor: Actor) async throws -> Membership {
        let tenantId = runtime.id, now = clock.now()
        let membership = Membership(tenantId: tenantId, userId: userId, originalTransactionId: nil, payMethod: payMethod, tier: tier, cycle: cycle,
                                    expiresAt: expiresAt, autoRenew: autoRenew, updatedAt: now)
        try await store.write { tx in
            if let current = try tx.subscriptions.membership(tenantId: tenantId, userId: userId), current.isApple {
                throw DomainError(.conflict, .linkedToOtherIAP, "the account uses Apple subscription \(current.originalTransactionId ?? ""); unlink it first",
                                  field: "userId")
            }
            try tx.subscriptions.save(membership)
            try tx.audit.append(AuditRecord(tenantId: tenantId, actor: actor, action: .membershipRecorded, bookingId: nil, purchaseId: nil,
                                            detail: ["userId": userId, "payMethod": payMethod ?? "none",
                                                     "expiresAt": expiresAt.map(BerthJSON.timestamp) ?? "none"], at: now))
        }
        return membership
    }

    // MARK: Apple sources

    /// What a receipt told Berth.
    public struct ReceiptResult: Sendable {
        public var subscriptions: [Subscription]
        /// Subscriptions of the receipt that belong to another account (a cheat attempt was recorded).
        public var ownedByOthers: [Subscription]
        public var environment: String
        public var receiptSHA256: String
        /// Apple's verifyReceipt answer, when Berth asked Apple.
        public var appleResponse: Data?
        public var verified: VerifiedReceipt
    }

    /// Verifies a receipt (offline; then with Apple's verifyReceipt when the tenant has a shared
    /// secret, falling back to the offline result), applies every subscription it shows and attaches
    /// them to `userId`. Keeps the receipt for tenants that opted in.
    public func applyReceipt(_ base64: String, runtime: TenantRuntime, userId: String?, actor: Actor, source: String,
                             environment required: String? = nil) async throws -> ReceiptResult {
        let verified: VerifiedReceipt
        do {
            verified = try await runtime.receiptVerifier.verify(base64: base64, expecting: runtime.expectations)
        } catch {
            throw DomainError(error, field: "receiptData", messagePrefix: "the receipt did not verify: ")
        }
        let accepted = runtime.tenant.apple.environments
        guard let environment = verified.receipt.environment?.rawValue ?? (accepted.count == 1 ? accepted.first : nil) ?? required else {
            throw DomainError(.unprocessable, .wrongEnvironment, "the receipt does not say whether it is Production or Sandbox", field: "receiptData")
        }
        if let required, environment != required {
            throw DomainError(.unprocessable, .wrongEnvironment, "this is a \(environment) receipt; send it to the \(environment) base", field: "receiptData")
        }
        let now = clock.now()
        var facts = SubscriptionFactsReading.facts(receipt: verified.receipt, environment: environment, signedAt: verified.receipt.creationDate?.date ?? now,
                                                   source: source)
        var appleResponse: Data?
        if let client = runtime.verifyReceiptClient {
            do {
                let response = try await client.verify(receiptData: base64, excludeOldTransactions: false)
                let online = SubscriptionFactsReading.facts(verifyReceipt: response, signedAt: now)
                if !online.isEmpty { facts = online }
                appleResponse = response.raw
            } catch {
                logger.warning("verifyReceipt not reachable or refused; using the offline result", metadata: ["code": .string(error.code.rawValue)])
            }
        }
        let tenant = runtime.tenant, emitsEvents = runtime.webhook != nil, keep = tenant.subscriptions?.keepReceipts == true
        let knownProducts = Set(tenant.products.filter { $0.kind == .subscription }.map(\.id))
        let relevant = facts.filter { knownProducts.isEmpty || knownProducts.contains($0.transaction?.productId ?? "") }
        let outcomes = try await store.write { tx in
            try relevant.map { fact -> SubscriptionWrites.Outcome in
                let outcome = try SubscriptionWrites.apply(tx, facts: fact, tenant: tenant, userId: userId, source: source, actor: actor, emitsEvents: emitsEvents, now: now)
                if keep, case .applied = outcome {
                    try tx.subscriptions.saveReceipt(tenantId: tenant.id, originalTransactionId: fact.originalTransactionId, environment: environment, receipt: base64, at: now)
                }
                return outcome
            }
        }
        var result = ReceiptResult(subscriptions: [], ownedByOthers: [], environment: environment, receiptSHA256: verified.sha256, appleResponse: appleResponse,
                                   verified: verified)
        for outcome in outcomes {
            switch outcome {
            case .applied(let s, _): result.subscriptions.append(s)
            case .ownedByOther(let s): result.ownedByOthers.append(s)
            case .nothing: break
            }
        }
        return result
    }

    /// Refreshes a subscription from Apple: Get All Subscription Statuses when the tenant has an App
    /// Store Server API key, else its kept receipt; 422 `refresh_unavailable` when neither exists.
    public func refresh(runtime: TenantRuntime, originalTransactionId: String, userId: String?, actor: Actor) async throws -> Listed {
        let current = try await subscription(runtime: runtime, originalTransactionId: originalTransactionId, userId: userId)
        let tenant = runtime.tenant, now = clock.now(), emitsEvents = runtime.webhook != nil
        if let api = runtime.serverAPI {
            let statuses: [(status: Int?, transaction: VerifiedTransaction?, renewalInfo: VerifiedRenewalInfo?)]
            do {
                statuses = try await api.subscriptionStatuses(originalTransactionId)
            } catch let error as AppStoreAPIError {
                throw DomainError(error.retryable ? .unavailable : .unprocessable, ErrorCode(rawValue: error.code.rawValue), "Apple could not be asked: \(error.reason)",
                                  retryAfter: error.retryable ? 5 : nil)
            } catch let error as SignedDataError {
                throw DomainError(error, field: "originalTransactionId", messagePrefix: "Apple's answer did not verify: ")
            }
            let facts = statuses.compactMap { item in
                SubscriptionFactsReading.facts(transaction: item.transaction?.payload, renewal: item.renewalInfo?.payload, signedAt: now, source: "server_api")
            }.filter { $0.originalTransactionId == originalTransactionId }
            try await store.write { tx in
                for fact in facts {
                    _ = try SubscriptionWrites.apply(tx, facts: fact, tenant: tenant, userId: nil, source: "server_api", actor: actor, emitsEvents: emitsEvents, now: now)
                }
            }
        } else if tenant.subscriptions?.keepReceipts == true,
                  let receipt = try await store.read({ try $0.subscriptions.receipt(tenantId: tenant.id, originalTransactionId: originalTransactionId) }) {
            _ = try await applyReceipt(receipt, runtime: runtime, userId: nil, actor: actor, source: "stored_receipt")
        } else {
            throw DomainError(.unprocessable, .refreshUnavailable,
                              "this app has no App Store Server API key and keeps no receipts; send the device's receipt instead", field: "originalTransactionId")
        }
        _ = current
        return try await subscription(runtime: runtime, originalTransactionId: originalTransactionId, userId: userId)
    }
}

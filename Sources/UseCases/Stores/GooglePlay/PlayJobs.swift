import Domain
import Foundation
import GooglePlayAPI
import Logging

/// Google Play's background work, safe on every instance at once: the acknowledgements and
/// consumptions Berth owes (each leased to one instance at a time, retried with backoff until
/// Google says done; a purchase Google voided meanwhile owes nothing), and each package's
/// voided-purchases sweep, which catches refunds whose push was lost.
public struct PlayJobs: Sendable {
    let store: any Store
    public let tenants: TenantRegistry
    let receive: ReceivePlayNotification
    public let clock: any BerthClock
    let logger: Logger
    /// This process, as the owner of its leases.
    let owner: String

    public init(
        store: any Store,
        tenants: TenantRegistry,
        receive: ReceivePlayNotification,
        clock: any BerthClock,
        logger: Logger,
        owner: String = "play-" + UUID().uuidString
    ) {
        self.store = store
        self.tenants = tenants
        self.receive = receive
        self.clock = clock
        self.logger = logger
        self.owner = owner
    }

    /// Whether any tenant sells on Google Play (the worker runs only then).
    public var hasWork: Bool { tenants.ordered.contains { $0.play != nil } }

    /// One round of acknowledgements: those due, leased for a minute. Returns how many were tried.
    @discardableResult
    public func acknowledgeDue(limit: Int = 20) async -> Int {
        let now = clock.now()
        let owner = self.owner
        let due: [PlayAcknowledgement]
        do {
            due = try await store.write { try $0.play.claimDue(now: now, limit: limit, owner: owner, leaseUntil: now.addingTimeInterval(60)) }
        } catch {
            logger.error("google play acknowledgements not read: \(error)")
            return 0
        }
        for acknowledgement in due { await attempt(acknowledgement) }
        return due.count
    }

    /// Asks Google for one acknowledgement or consumption and records the answer.
    public func attempt(_ a: PlayAcknowledgement) async {
        let status: PlayAcknowledgement.Status
        var failure: String?
        if let play = tenants.tenant(id: a.tenantId)?.play {
            (status, failure) = await send(a, client: play.client)
        } else {
            (status, failure) = (.pending, "Google Play is off for this tenant (no service account)")
        }
        let now = clock.now()
        let next = now.addingTimeInterval(PlayAcknowledgement.retryDelay(afterAttempts: a.attempts + 1))
        do {
            try await store.write { [failure] in try $0.play.record(a, status: status, error: failure, nextAttemptAt: next, now: now) }
        } catch {
            logger.error("google play acknowledgement not recorded: \(error)")
        }
        if let failure {
            logger.warning(
                "google play \(a.action.rawValue) not done",
                metadata: [
                    "tenant": .string(a.tenantId), "attempts": .stringConvertible(a.attempts + 1),
                    "status": .string(status.rawValue), "error": .string(failure),
                ]
            )
        } else {
            logger.info("google play \(a.action.rawValue) done", metadata: ["tenant": .string(a.tenantId)])
        }
    }

    private func send(_ a: PlayAcknowledgement, client: PlayClient) async -> (PlayAcknowledgement.Status, String?) {
        do {
            switch a.action {
            case .consume: try await client.consumeProduct(package: a.packageName, productId: a.googleProductId, token: a.purchaseToken)
            case .acknowledgeProduct:
                try await client.acknowledgeProduct(package: a.packageName, productId: a.googleProductId, token: a.purchaseToken)
            case .acknowledgeSubscription:
                try await client.acknowledgeSubscription(package: a.packageName, subscriptionId: a.googleProductId, token: a.purchaseToken)
            }
            return (.done, nil)
        } catch {
            if error.isTransient { return (.pending, error.description) }
            // Google refused: it may already be done (a lost answer), or the purchase is gone.
            return (await settled(a, client: client) ?? .pending, error.description)
        }
    }

    /// What Google's state says of a refused acknowledgement: done already, nothing owed any more, or nil (try again later).
    private func settled(_ a: PlayAcknowledgement, client: PlayClient) async -> PlayAcknowledgement.Status? {
        do {
            switch a.action {
            case .consume, .acknowledgeProduct:
                let p = try await client.productPurchase(package: a.packageName, productId: a.googleProductId, token: a.purchaseToken)
                if a.action == .consume ? p.consumptionState == 1 : p.acknowledgementState == 1 { return .done }
                return p.purchaseState == 1 ? .gone : nil
            case .acknowledgeSubscription:
                let s = try await client.subscriptionPurchase(package: a.packageName, token: a.purchaseToken)
                if s.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" { return .done }
                return s.subscriptionState == "SUBSCRIPTION_STATE_EXPIRED" ? .gone : nil
            }
        } catch {
            return error.isUnknownPurchase ? .gone : nil
        }
    }

    /// The voided-purchases sweep of every package whose interval has passed: each voided purchase
    /// is applied like its push would be (once: `google_play:voided:<token hash>`). Returns how many it applied.
    @discardableResult
    public func sweepVoided(force: Bool = false) async -> Int {
        var applied = 0
        for runtime in tenants.ordered {
            guard let play = runtime.play else { continue }
            for package in play.settings.packageNames {
                applied += await sweep(package, runtime: runtime, play: play, force: force)
            }
        }
        return applied
    }

    private func sweep(_ package: String, runtime: TenantRuntime, play: PlayRuntime, force: Bool) async -> Int {
        let now = clock.now()
        let tenantId = runtime.id
        do {
            let mark = try await store.read { try $0.play.sweep(tenantId: tenantId, packageName: package) }
            if !force, let mark, mark.sweptAt.addingTimeInterval(play.settings.sweepInterval) > now { return 0 }
            // Google keeps 30 days of voided purchases; an overlap of an hour catches late entries.
            let since = max(mark?.voidedSince.addingTimeInterval(-3600) ?? .distantPast, now.addingTimeInterval(-30 * 86_400))
            var newest = mark?.voidedSince ?? since
            var pageToken: String?
            var applied = 0
            var pages = 0
            repeat {
                let page = try await play.client.voidedPurchases(package: package, since: since, pageToken: pageToken)
                for voided in page.voidedPurchases ?? [] {
                    guard let token = voided.purchaseToken, !token.isEmpty else { continue }
                    // A subscription's renewals are voided one by one: a renewal's order id (`..N`) tells them apart
                    // (other voids keep the token's own key, as recorded before renewals had rows).
                    let renewalOrder = voided.orderId.flatMap { $0.contains("..") ? "|" + $0 : nil } ?? ""
                    let uuid = "google_play:voided:" + PlayProofs.proofHash(token + renewalOrder).prefix(32)
                    let result = try await receive.void(
                        token: token,
                        orderId: voided.orderId,
                        uuid: uuid,
                        package: package,
                        subscription: false,
                        runtime: runtime,
                        play: play,
                        now: now
                    )
                    if !result.duplicate { applied += 1 }
                    if let at = voided.voidedAt, at > newest { newest = at }
                }
                pageToken = page.tokenPagination?.nextPageToken
                pages += 1
            } while pageToken != nil && pages < 50
            try await store.write { [newest] in try $0.play.setSweep(tenantId: tenantId, packageName: package, voidedSince: newest, sweptAt: now) }
            if applied > 0 {
                logger.info("google play voided purchases applied", metadata: ["tenant": .string(tenantId), "count": .stringConvertible(applied)])
            }
            return applied
        } catch {
            logger.warning("google play voided sweep failed: \(error)", metadata: ["tenant": .string(tenantId)])
            return 0
        }
    }

    /// Pending acknowledgements per tenant, and those older than the tenant's alert age (the metric).
    public func pendingSummary() async throws -> [(tenantId: String, pending: Int, overdue: Int, oldest: Date?)] {
        let now = clock.now()
        let alert = tenants.ordered.compactMap { $0.play?.settings.alertAfter }.min() ?? 24 * 3600
        return try await store.read { try $0.play.pendingSummary(alertBefore: now.addingTimeInterval(-alert)) }
    }
}

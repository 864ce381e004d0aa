import Domain
import Foundation
import Logging
import ServiceLifecycle
import UseCases

/// Runs the webhook outbox's delivery (``DeliverWebhooks``: claims, order, signatures, retries)
/// until the application stops. Each tenant with a webhook has its own delivery loop with its own
/// claims (S7): a black-holed receiver delays only its own tenant's events, never another's.
/// Because the outbox is written in the same transaction as the change, an event committed before
/// a crash is delivered after the restart.
public struct WebhookDeliverer: Service, CustomStringConvertible {
    let tenants: TenantRegistry
    let logger: Logger
    let interval: Duration
    /// Messages a tenant's loop claims at once: with the 10 s send timeout, a claim of a dead
    /// receiver's messages ends well within its lease.
    let claimSize = 8
    let delivery: DeliverWebhooks

    public init(
        store: any Store,
        tenants: TenantRegistry,
        client: WebhookHTTPClient,
        clock: any BerthClock,
        logger: Logger,
        metrics: (any WorkerMetrics)? = nil,
        interval: Duration = .milliseconds(500),
        concurrency: Int = 16,
        retry: JobRetry = .webhooks
    ) {
        self.tenants = tenants
        self.logger = logger
        self.interval = interval
        delivery = DeliverWebhooks(
            store: store,
            tenants: tenants,
            sender: client,
            clock: clock,
            logger: logger,
            retry: retry,
            owner: "deliverer-\(UUID().uuidString)",
            concurrency: concurrency,
            attempted: { delivered in metrics?.count("berth_webhook_attempts_total", [("result", delivered ? "delivered" : "failed")], by: 1) }
        )
    }

    /// What the service runner logs: the name, not the stored tenants.
    public var description: String { "WebhookDeliverer" }

    public func run() async throws {
        let receiving = tenants.tenants.values.filter { $0.webhook != nil }.map(\.id).sorted()
        // Messages of a tenant whose webhook was removed from the catalog are marked skipped once.
        for tenantId in tenants.tenants.keys.sorted() where !receiving.contains(tenantId) {
            // A service stopped while it starts leaves the rest for the next start.
            if Task.isCancelled || Task.isShuttingDownGracefully { break }
            do {
                try await deliverDue(tenantId: tenantId, limit: 1000)
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully || error is StoreClosed { break }
                logger.error("webhook outbox of \(tenantId) not skipped: \(error)")
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for tenantId in receiving {
                group.addTask { await loop(tenantId: tenantId) }
            }
        }
        // With no tenant to serve, the service still runs until shutdown (a service that returns
        // early stops the application).
        try? await gracefulShutdown()
    }

    /// One tenant's deliveries, until shutdown: another claim at once while there is work, else a
    /// pause of `interval`.
    private func loop(tenantId: String) async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            // A shutdown cancels a delivery to a receiver that does not answer, and the wait: a
            // delivery cut short is attempted again (receivers de-duplicate by the event's id).
            try? await cancelWhenGracefulShutdown {
                var attempted = 0
                do {
                    attempted = try await self.deliverDue(tenantId: tenantId, limit: self.claimSize)
                } catch  where !Task.isCancelled {
                    self.logger.error("webhook delivery of \(tenantId) failed: \(String(reflecting: error))")
                }
                if attempted == 0 { try await Task.sleep(for: self.interval) }
            }
        }
    }

    /// One pass over the messages due now, of one tenant or of all (``DeliverWebhooks/deliverDue(tenantId:limit:)``).
    @discardableResult
    public func deliverDue(tenantId: String? = nil, limit: Int = 100) async throws -> Int {
        try await delivery.deliverDue(tenantId: tenantId, limit: limit)
    }
}

extension WebhookHTTPClient: WebhookSending {
    public func send(_ body: String, headers: [(String, String)], to webhook: Tenant.Webhook) async -> WebhookAttempt {
        let outcome = await post(body, headers: headers, to: webhook)
        return WebhookAttempt(statusCode: outcome.statusCode, failure: outcome.failure?.rawValue)
    }
}

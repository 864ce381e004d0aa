import Domain
import Foundation
import Logging
import ServiceLifecycle
import UseCases

/// Runs the webhook outbox's delivery (``DeliverWebhooks``: claims, order, signatures, retries)
/// until the application stops. Each tenant with a webhook has its own delivery loop with its own
/// claims (S7): a black-holed receiver delays only its own tenant's events, never another's.
/// Within a tenant, up to ``DeliverWebhooks/perTenant`` subjects are in flight at once, each in
/// order; as one ends, more is claimed, so one slow subject never holds the others back.
/// Because the outbox is written in the same transaction as the change, an event committed before
/// a crash is delivered after the restart.
public struct WebhookDeliverer: Service, CustomStringConvertible {
    let tenants: TenantRegistry
    let logger: Logger
    let interval: Duration
    /// Messages a tenant's loop claims in one unit of work, at most. Claimed runs wait for a free
    /// slot in the loop's queue: with the 10 s send timeout, at most `perTenant` + 32 runs queued and
    /// `perTenant` in flight, a run to a dead receiver is sent, or released, well within its 120 s lease.
    let claimSize = 32
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
        perTenant: Int = DeliverWebhooks.defaultPerTenant,
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
            perTenant: perTenant,
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

    /// One tenant's deliveries, until shutdown. Claimed runs wait in a queue of this loop and up to
    /// ``DeliverWebhooks/perTenant`` of them are in flight; when fewer than that wait, up to
    /// `claimSize` more messages are claimed in one unit of work (a claim per batch, not per run that
    /// ends). With nothing due, the loop waits for a run to end, or `interval`. A subject's later
    /// message is not claimed while an earlier one is leased (queued or in flight), so each subject
    /// stays in order. A shutdown cancels the runs in flight, a delivery to a receiver that does not
    /// answer among them (a delivery cut short is attempted again once its lease ends: receivers
    /// de-duplicate by the delivery's id), and gives the queued runs back.
    private func loop(tenantId: String) async {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Bool.self) { group in
                let slots = delivery.perTenant
                var queued: [[OutboxMessage]] = []
                var inFlight = 0
                var pausing = false
                while !Task.isCancelled {
                    var claimed = 0
                    if queued.count < slots {
                        do {
                            let messages = try await delivery.claim(tenantId: tenantId, limit: claimSize)
                            claimed = messages.count
                            queued += DeliverWebhooks.runs(of: messages)
                        } catch {
                            if Task.isCancelled || error is StoreClosed { break }
                            logger.error("webhook claim of \(tenantId) failed: \(String(reflecting: error))")
                        }
                    }
                    while inFlight < slots, !queued.isEmpty {
                        let run = queued.removeFirst()
                        inFlight += 1
                        group.addTask { await self.deliver(run: run, tenantId: tenantId) }
                    }
                    // A full batch: more may be due, and there is room in the queue.
                    if claimed == claimSize && queued.count < slots { continue }
                    if !pausing && inFlight < slots {
                        pausing = true
                        group.addTask {
                            try? await Task.sleep(for: interval)
                            return false
                        }
                    }
                    // true: a run ended; false (or nothing left to wait for): the pause ended.
                    if await group.next() == true { inFlight -= 1 } else { pausing = false }
                }
                group.cancelAll()
                // Runs claimed but not started go back now, not when their lease ends (best effort:
                // the store may be closing; then the lease's end frees them).
                try? await delivery.release(queued.flatMap { $0 })
            }
        }
    }

    /// One run of a tenant's messages (``DeliverWebhooks/deliver(run:tenantId:)``); a failure to
    /// record is logged, and the run's messages are claimed again once their lease ends.
    private func deliver(run: [OutboxMessage], tenantId: String) async -> Bool {
        do {
            _ = try await delivery.deliver(run: run, tenantId: tenantId)
        } catch  where !Task.isCancelled && !(error is StoreClosed) {
            logger.error("webhook delivery of \(tenantId) failed: \(String(reflecting: error))")
        } catch {}
        return true
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

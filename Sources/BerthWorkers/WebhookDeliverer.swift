import AsyncHTTPClient
import Crypto
import Domain
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import UseCases

/// Delivers the webhook outbox to each tenant's backend: signed with HMAC-SHA256 over
/// "<timestamp>.<body>" (header `Berth-Signature: t=<unix seconds>,v1=<hex>`, the timestamp taken
/// when each attempt is sent), retried by ``JobRetry/webhooks`` (5 s doubling, at most 1 h) until a
/// 2xx or its last attempt (then the message is a dead letter, kept until an operator re-sends it),
/// every attempt logged with a coarse error class. Each tenant with a webhook has its own delivery
/// loop with its own claims (S7): a black-holed receiver delays only its own tenant's events, never
/// another's. Within a tenant, events of one booking go out in the order they happened. Because
/// the outbox is written in the same transaction as the change, an event committed before a crash
/// is delivered after the restart.
public struct WebhookDeliverer: Service, CustomStringConvertible {
    let store: any Store
    let tenants: TenantRegistry
    let client: WebhookHTTPClient
    let clock: any BerthClock
    let logger: Logger
    let interval: Duration
    let concurrency: Int
    /// This deliverer's name in the outbox leases (one per process).
    let owner = "deliverer-\(UUID().uuidString)"
    /// How long a claimed message stays this deliverer's; a deliverer that dies releases it by expiry.
    let lease: TimeInterval = 120

    let metrics: (any WorkerMetrics)?
    /// When a failed delivery is tried again, and how many attempts before a dead letter.
    let retry: JobRetry
    /// Messages a tenant's loop claims at once: with the 10 s send timeout, a claim of a dead
    /// receiver's messages ends well within its lease.
    let claimSize = 8

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
        self.metrics = metrics
        self.retry = retry
        self.store = store
        self.tenants = tenants
        self.client = client
        self.clock = clock
        self.logger = logger
        self.interval = interval
        self.concurrency = max(1, concurrency)
    }

    /// What the service runner logs: the name, not the stored tenants.
    public var description: String { "WebhookDeliverer" }

    public func run() async throws {
        let receiving = tenants.tenants.values.filter { $0.webhook != nil }.map(\.id).sorted()
        // Messages of a tenant whose webhook was removed from the catalog are marked skipped once.
        for tenantId in tenants.tenants.keys.sorted() where !receiving.contains(tenantId) {
            do { try await deliverDue(tenantId: tenantId, limit: 1000) } catch { logger.error("webhook outbox of \(tenantId) not skipped: \(error)") }
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

    /// One pass over the messages due now, of one tenant or of all (side by side); returns how many
    /// were attempted.
    @discardableResult
    public func deliverDue(tenantId: String? = nil, limit: Int = 100) async throws -> Int {
        let now = clock.now(), owner = self.owner, until = now.addingTimeInterval(lease)
        let due = try await store.write { try $0.outbox.claimDue(tenantId: tenantId, now: now, limit: limit, owner: owner, leaseUntil: until) }
        let byTenant = Dictionary(grouping: due, by: \.tenantId)
        return try await withThrowingTaskGroup(of: Int.self) { group in
            var attempted = 0
            var running = 0
            for (tenantId, messages) in byTenant {
                if running == concurrency {
                    attempted += try await group.next() ?? 0
                    running -= 1
                }
                group.addTask { try await deliver(messages, tenantId: tenantId) }
                running += 1
            }
            for try await count in group { attempted += count }
            return attempted
        }
    }

    /// One tenant's messages in order; after a failure, the rest of that subject waits for the retry.
    private func deliver(_ messages: [OutboxMessage], tenantId: String) async throws -> Int {
        guard let webhook = tenants.tenant(id: tenantId)?.webhook else {
            try await store.write { tx in for message in messages { try tx.outbox.skip(message) } }
            return 0
        }
        var held = Set<String>()
        var attempted = 0
        for message in messages {
            if let subject = message.subject, held.contains(subject) {
                try await store.write { try $0.outbox.release(message) }
                continue
            }
            let sentAt = clock.now()
            let outcome = await client.post(
                message.payload,
                headers: Self.headers(for: message, secret: webhook.secret.value, at: sentAt),
                to: webhook.configuration
            )
            let delivered = outcome.failure == nil
            metrics?.count("berth_webhook_attempts_total", [("result", delivered ? "delivered" : "failed")], by: 1)
            if !delivered, let subject = message.subject { held.insert(subject) }
            let attempts = message.attempts + 1
            let now = clock.now()
            // nil after the last allowed attempt: the message becomes a dead letter.
            let next: Date? =
                delivered || !retry.triesAgain(afterAttempts: attempts) ? nil : now.addingTimeInterval(retry.delay(afterAttempts: attempts))
            if !delivered && next == nil {
                logger.warning(
                    "webhook gave up",
                    metadata: [
                        "event": .string(message.eventType), "outbox_id": .stringConvertible(message.id),
                        "attempts": .stringConvertible(attempts),
                    ]
                )
            }
            try await store.write {
                try $0.outbox.recordAttempt(
                    message,
                    statusCode: outcome.statusCode,
                    error: outcome.failure?.rawValue,
                    delivered: delivered,
                    nextAttemptAt: next,
                    now: now
                )
            }
            logger.info(
                "webhook",
                metadata: [
                    "event": .string(message.eventType), "delivered": .stringConvertible(delivered),
                    "attempt": .stringConvertible(message.attempts + 1), "failure": .string(outcome.failure?.rawValue ?? "none"),
                ]
            )
            attempted += 1
        }
        return attempted
    }

    /// The headers of one delivery, the signature included.
    public static func headers(for message: OutboxMessage, secret: String, at date: Date) -> [(String, String)] {
        let timestamp = String(Int64(date.timeIntervalSince1970))
        return [
            ("Content-Type", "application/json"),
            ("Berth-Event", message.eventType),
            ("Berth-Delivery", String(message.id)),
            ("Berth-Signature", "t=\(timestamp),v1=\(signature(secret: secret, timestamp: timestamp, body: message.payload))"),
        ]
    }

    /// Hex HMAC-SHA256 of "<timestamp>.<body>" with the tenant's secret: what receivers recompute.
    public static func signature(secret: String, timestamp: String, body: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(timestamp).\(body)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return mac.hexString
    }
}

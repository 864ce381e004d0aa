import Crypto
import Domain
import Foundation
import Logging

/// What sends one webhook (the worker's HTTP client, which vets the receiver's address).
public protocol WebhookSending: Sendable {
    /// POSTs `body` with `headers` to the tenant's receiver; a coarse failure class when it was not a 2xx.
    func send(_ body: String, headers: [(String, String)], to webhook: Tenant.Webhook) async -> WebhookAttempt
}

/// How one attempt ended: the receiver's status, and why it failed (a coarse class shown to admins).
public struct WebhookAttempt: Sendable {
    public var statusCode: Int?
    public var failure: String?

    public init(statusCode: Int? = nil, failure: String? = nil) {
        self.statusCode = statusCode
        self.failure = failure
    }
}

/// The webhook outbox's delivery policy: claim what is due (one lease per message), send each
/// subject's messages in order — after a failure, the rest of that subject waits for the retry —
/// and up to ``perTenant`` subjects of a tenant side by side (a slow receiver for one subject does
/// not hold the others back), signed with HMAC-SHA256 over "<timestamp>.<body>" (the timestamp
/// taken when each attempt is sent), record every attempt (in batches with the attempts that end
/// beside it, ``AttemptRecorder``), and retry by ``JobRetry`` until a 2xx or
/// the last attempt (then the message is a dead letter an operator can send again).
public struct DeliverWebhooks: Sendable {
    let store: any Store
    let tenants: TenantRegistry
    let sender: any WebhookSending
    let clock: any BerthClock
    let logger: Logger
    let retry: JobRetry
    /// This process's name in the outbox leases.
    let owner: String
    /// How long a claimed message stays this owner's; an owner that dies releases it by expiry.
    let lease: TimeInterval
    /// Tenants sent to side by side in one pass.
    let concurrency: Int
    /// Subjects of one tenant sent to side by side (`BERTH_WEBHOOK_PARALLEL`); each subject's
    /// messages one after another, in order.
    public let perTenant: Int
    /// Each attempt, delivered or not (metrics).
    let attempted: @Sendable (_ delivered: Bool) -> Void
    /// Where attempts are recorded: batched with the attempts that end beside them.
    let recorder: AttemptRecorder

    public init(
        store: any Store,
        tenants: TenantRegistry,
        sender: any WebhookSending,
        clock: any BerthClock,
        logger: Logger,
        retry: JobRetry = .webhooks,
        owner: String,
        lease: TimeInterval = 120,
        concurrency: Int = 16,
        perTenant: Int = DeliverWebhooks.defaultPerTenant,
        attempted: @escaping @Sendable (_ delivered: Bool) -> Void = { _ in }
    ) {
        self.store = store
        self.tenants = tenants
        self.sender = sender
        self.clock = clock
        self.logger = logger
        self.retry = retry
        self.owner = owner
        self.lease = lease
        self.concurrency = max(1, concurrency)
        self.perTenant = max(1, perTenant)
        self.attempted = attempted
        recorder = AttemptRecorder(store: store)
    }

    /// Subjects of one tenant in flight at once when `BERTH_WEBHOOK_PARALLEL` is not set.
    public static let defaultPerTenant = 8

    /// One pass over the messages due now, of one tenant or of all (side by side); returns how many
    /// were attempted.
    @discardableResult
    public func deliverDue(tenantId: String? = nil, limit: Int = 100) async throws -> Int {
        let due = try await claim(tenantId: tenantId, limit: limit)
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

    /// Leases up to `limit` messages due now, of one tenant or of all, oldest first: a subject's
    /// message is never claimed while an earlier one of it waits for a retry or is leased.
    public func claim(tenantId: String?, limit: Int) async throws -> [OutboxMessage] {
        let now = clock.now(), owner = self.owner, until = now.addingTimeInterval(lease)
        return try await store.write { try $0.outbox.claimDue(tenantId: tenantId, now: now, limit: limit, owner: owner, leaseUntil: until) }
    }

    /// Gives claimed messages back unattempted (their leases end now): the next claim, of any
    /// instance, may take them.
    public func release(_ messages: [OutboxMessage]) async throws {
        guard !messages.isEmpty else { return }
        try await store.write { tx in for message in messages { try tx.outbox.release(message) } }
    }

    /// Claimed messages as runs that may go side by side: each subject's messages in their order,
    /// and each message without a subject alone.
    public static func runs(of messages: [OutboxMessage]) -> [[OutboxMessage]] {
        var runs: [[OutboxMessage]] = []
        var runOfSubject: [String: Int] = [:]
        for message in messages {
            guard let subject = message.subject else {
                runs.append([message])
                continue
            }
            if let index = runOfSubject[subject] {
                runs[index].append(message)
            } else {
                runOfSubject[subject] = runs.count
                runs.append([message])
            }
        }
        return runs
    }

    /// One tenant's claimed messages: up to ``perTenant`` runs (``runs(of:)``) side by side.
    private func deliver(_ messages: [OutboxMessage], tenantId: String) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            var attempted = 0
            var running = 0
            for run in Self.runs(of: messages) {
                if running == perTenant {
                    attempted += try await group.next() ?? 0
                    running -= 1
                }
                group.addTask { try await deliver(run: run, tenantId: tenantId) }
                running += 1
            }
            for try await count in group { attempted += count }
            return attempted
        }
    }

    /// One run of a tenant's messages (one subject's, in order, or one message): after a failure the
    /// rest of the run is released, to wait for the retry behind it. Messages of a tenant that has no
    /// webhook (any more) are marked skipped. Returns how many were attempted.
    public func deliver(run messages: [OutboxMessage], tenantId: String) async throws -> Int {
        guard let webhook = tenants.tenant(id: tenantId)?.webhook else {
            try await store.write { tx in for message in messages { try tx.outbox.skip(message) } }
            return 0
        }
        var held = false
        var attempted = 0
        for message in messages {
            if held {
                try await store.write { try $0.outbox.release(message) }
                continue
            }
            let sentAt = clock.now()
            let outcome = await sender.send(
                message.payload,
                headers: Self.headers(for: message, secret: webhook.secret.value, at: sentAt),
                to: webhook.configuration
            )
            let delivered = outcome.failure == nil
            self.attempted(delivered)
            if !delivered { held = true }
            let attempts = message.attempts + 1
            let now = clock.now()
            // nil after the last allowed attempt: the message becomes a dead letter.
            let next: Date? =
                delivered || !retry.triesAgain(afterAttempts: attempts) ? nil : now.addingTimeInterval(retry.delay(afterAttempts: attempts))
            if !delivered && next == nil {
                logger.warning(
                    "webhook gave up",
                    metadata: [
                        "event": .string(message.eventType), "outbox_id": .stringConvertible(message.id), "attempts": .stringConvertible(attempts),
                    ]
                )
            }
            try await recorder.record(
                .init(message: message, statusCode: outcome.statusCode, error: outcome.failure, delivered: delivered, nextAttemptAt: next, now: now)
            )
            logger.info(
                "webhook",
                metadata: [
                    "event": .string(message.eventType), "delivered": .stringConvertible(delivered), "attempt": .stringConvertible(attempts),
                    "failure": .string(outcome.failure ?? "none"),
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

import AsyncHTTPClient
import Crypto
import Domain
import Foundation
import Logging
import NIOCore
import ServiceLifecycle

/// Delivers the webhook outbox to each tenant's backend: signed with HMAC-SHA256 over
/// "<timestamp>.<body>" (header `Berth-Signature: t=<unix seconds>,v1=<hex>`), retried with
/// exponential backoff (5 s doubling, at most 1 h) until a 2xx, every attempt logged. Because the
/// outbox is written in the same transaction as the change, an event committed before a crash is
/// delivered after the restart.
public struct WebhookDeliverer: Service {
    let store: any WebhookStore
    let tenants: TenantRegistry
    let client: HTTPClient
    let clock: any BerthClock
    let logger: Logger
    let interval: Duration

    public init(store: any WebhookStore, tenants: TenantRegistry, client: HTTPClient = .shared, clock: any BerthClock, logger: Logger, interval: Duration = .milliseconds(500)) {
        self.store = store
        self.tenants = tenants
        self.client = client
        self.clock = clock
        self.logger = logger
        self.interval = interval
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                _ = try await deliverDue()
            } catch {
                logger.error("webhook delivery pass failed: \(String(reflecting: error))")
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// One pass over the messages due now; returns how many were attempted.
    @discardableResult
    public func deliverDue(limit: Int = 100) async throws -> Int {
        let now = clock.now()
        let due = try await store.dueMessages(now: now, limit: limit)
        for message in due {
            guard let webhook = tenants.tenant(id: message.tenantId)?.webhook else {
                try await store.skip(message, now: now)
                continue
            }
            var statusCode: Int?
            var failure: String?
            do {
                var request = HTTPClientRequest(url: webhook.url)
                request.method = .POST
                for (name, value) in Self.headers(for: message, secret: webhook.secret, at: now) { request.headers.add(name: name, value: value) }
                request.body = .bytes(ByteBuffer(string: message.payload))
                let response = try await client.execute(request, timeout: .seconds(10))
                _ = try? await response.body.collect(upTo: 64 * 1024)
                statusCode = Int(response.status.code)
                if !(200..<300).contains(Int(response.status.code)) { failure = "HTTP \(response.status.code)" }
            } catch {
                failure = "\(error)"
            }
            let delivered = failure == nil
            let backoff = min(5 * pow(2, Double(message.attempts)), 3600)
            try await store.recordAttempt(message, statusCode: statusCode, error: failure, delivered: delivered,
                                          nextAttemptAt: delivered ? nil : now.addingTimeInterval(backoff), now: now)
            logger.info("webhook", metadata: ["event": .string(message.eventType), "delivered": .stringConvertible(delivered), "attempt": .stringConvertible(message.attempts + 1)])
        }
        return due.count
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
        return mac.map { String(format: "%02x", $0) }.joined()
    }
}

import Domain
import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization
import UseCases

/// What keeps the service up: `GET /healthz` (the process answers), `GET /readyz` (its database
/// answers and has every migration the code expects) and `GET /metrics` (Prometheus).
struct OperationsRoutes {
    let health: ServiceHealth
    let metrics: BerthMetrics
    let metricsToken: Secret?
    let queueDepth = Refresh(every: .seconds(10))
    /// The same document every time: encoded once (a liveness probe's answer is the HTTP stack's cost).
    let alive = try? JSONCoding.encoder.encode(HealthResponse())

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<BerthRequestContext> {
        let router = RouteCollection(context: BerthRequestContext.self)
        router.get("/healthz", use: getHealthz)
        // A load balancer stops sending traffic while this answers 503.
        router.get("/readyz", use: getReadyz)
        router.get("/metrics", use: getMetrics)
        return router
    }

    /// `GET /healthz`
    func getHealthz(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        guard let alive else { return try JSONCoding.response(HealthResponse()) }
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: alive))
        )
    }

    /// `GET /readyz`
    func getReadyz(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        let pending: Set<String>
        do {
            pending = try await health.pendingMigrations()
        } catch {
            context.logger.warning("not ready: the database does not answer: \(String(describing: type(of: error)))")
            return try Self.unavailable(ReadinessResponse(status: "unavailable", database: "unreachable"))
        }
        guard pending.isEmpty else {
            context.logger.warning("not ready: migrations not applied: \(pending.sorted().joined(separator: ", "))")
            return try Self.unavailable(ReadinessResponse(status: "unavailable", database: "reachable", migrations: "pending"))
        }
        return try JSONCoding.response(ReadinessResponse(status: "ready", database: "reachable", migrations: "applied"))
    }

    /// `GET /metrics`
    func getMetrics(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        if let metricsToken {
            let given = request.headers[.authorization].map { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : "" } ?? ""
            guard Self.same(given, metricsToken.value) else {
                return APIError.unauthenticated("/metrics needs Authorization: Bearer <BERTH_METRICS_TOKEN>").response()
            }
        } else if !context.arrivedOnLoopback {
            // Listening beyond this machine: the metrics (routes, volumes, outcomes) are not for anyone who asks.
            return APIError(.forbidden, .forbidden, "/metrics answers off loopback only with BERTH_METRICS_TOKEN set").response()
        } else if Self.forwarded(request) {
            // On loopback, but from a proxy on this machine that forwards someone else's request (V12).
            return APIError(.forbidden, .forbidden, "/metrics answers a request forwarded by a proxy only with BERTH_METRICS_TOKEN set")
                .response()
        }
        // The queue depth is counted at most every 10 s, however often /metrics is scraped.
        if queueDepth.due(), let depth = try? await health.webhookQueueDepth() {
            metrics.gauge("berth_webhook_queue_depth", [], Double(depth))
        }
        ProcessStats.read().record(in: metrics)
        for (name, value) in health.engineGauges() where value.isFinite { metrics.gauge(name, [], value) }
        metrics.gauge("berth_build_info", [("version", BuildInfo.version), ("commit", BuildInfo.commit)], 1)
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: metrics.render()))
        )
    }

    /// Whether a proxy says it forwards the request for another client (`X-Forwarded-For`,
    /// `Forwarded`, `X-Real-IP`): a scraper on the same machine sends none of them.
    static func forwarded(_ request: Request) -> Bool {
        request.headers[.xForwardedFor] != nil || request.headers[.forwarded] != nil || request.headers[.xRealIP] != nil
    }

    static func unavailable(_ body: ReadinessResponse) throws -> Response {
        var response = try JSONCoding.response(body, status: .serviceUnavailable)
        response.headers[.retryAfter] = "1"
        return response
    }

    /// Compares in time independent of where the first difference is.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Lets something run at most once per interval.
final class Refresh: Sendable {
    let interval: Duration
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    init(every interval: Duration) { self.interval = interval }

    /// True at most once per interval (the first call included).
    func due() -> Bool {
        let now = ContinuousClock.now
        return last.withLock { last in
            if let previous = last, now - previous < interval { return false }
            last = now
            return true
        }
    }
}

// MARK: - Request and answer types of these routes

struct HealthResponse: Codable {
    var status = "ok"
}

struct ReadinessResponse: Codable {
    /// `ready`, or `unavailable` (HTTP 503).
    var status: String
    /// `reachable` or `unreachable`.
    var database: String
    /// `applied`, or `pending` while a migration the code expects is not applied (omitted while the
    /// database is unreachable).
    var migrations: String?
}

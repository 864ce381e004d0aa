import Domain
import Foundation
import Hummingbird
import NIOCore

/// What keeps the service up: `GET /healthz` (the process answers), `GET /readyz` (its database
/// answers and has every migration the code expects) and `GET /metrics` (Prometheus).
struct OperationsRoutes {
    let store: any Store
    let metrics: BerthMetrics
    let metricsToken: String?
    let expectedMigrations: Set<String>

    func register(on router: PublicRoutes) {
        router.get("/healthz") { _, _ in try JSONCoding.response(HealthResponse()) }
        // A load balancer stops sending traffic while this answers 503.
        router.get("/readyz") { _, context in
            let applied: Set<String>
            do {
                applied = try await store.read { tx in try tx.schema.appliedMigrations() }
            } catch {
                context.logger.warning("not ready: the database does not answer: \(String(describing: type(of: error)))")
                return try Self.unavailable(ReadinessResponse(status: "unavailable", database: "unreachable"))
            }
            let pending = expectedMigrations.subtracting(applied)
            guard pending.isEmpty else {
                context.logger.warning("not ready: migrations not applied: \(pending.sorted().joined(separator: ", "))")
                return try Self.unavailable(ReadinessResponse(status: "unavailable", database: "reachable", migrations: "pending"))
            }
            return try JSONCoding.response(ReadinessResponse(status: "ready", database: "reachable", migrations: "applied"))
        }
        router.get("/metrics") { request, _ in
            if let metricsToken {
                let given = request.headers[.authorization].map { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : "" } ?? ""
                guard Self.same(given, metricsToken) else {
                    return APIError.unauthenticated("/metrics needs Authorization: Bearer <BERTH_METRICS_TOKEN>").response()
                }
            }
            if let depth = try? await store.read({ tx in try tx.outbox.pendingCount() }) {
                metrics.gauge("berth_webhook_queue_depth", [], Double(depth))
            }
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                            body: .init(byteBuffer: ByteBuffer(string: metrics.render())))
        }
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

import CoreMetrics
import Dispatch
import Domain
import Foundation
import Hummingbird
import NIOCore
import Prometheus
import Synchronization

/// Berth's metrics: swift-metrics handlers made by a Prometheus factory over this instance's own
/// registry (no global state, so every application, and every test, counts its own), rendered
/// by `GET /metrics` in Prometheus' text format.
public final class BerthMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .seconds(2), .seconds(5),
        ]
        self.factory = factory
    }

    /// A series: the metric's name and its label values in order (label names are fixed per metric).
    private struct Series: Hashable {
        var name: String
        var labels: [String]
        init(_ name: String, _ labels: [(String, String)]) {
            self.name = name
            self.labels = labels.map { $0.0 + "=" + $0.1 }
        }
    }

    /// Handles already made: the factory sanitizes names and looks the series up in the registry
    /// under its lock on every call, which every request paid two or three times. Series are bounded
    /// (route patterns, methods, statuses, codes), so the map is too.
    private let counters = Mutex<[Series: any CounterHandler]>([:])
    private let timers = Mutex<[Series: any TimerHandler]>([:])

    public func count(_ name: String, _ labels: [(String, String)] = [], by amount: Int64 = 1) {
        Self.handle(in: counters, Series(name, labels)) { factory.makeCounter(label: name, dimensions: labels) }.increment(by: amount)
    }

    func time(_ name: String, _ labels: [(String, String)] = [], nanoseconds: UInt64) {
        Self.handle(in: timers, Series(name, labels)) { factory.makeTimer(label: name, dimensions: labels) }
            .recordNanoseconds(Int64(clamping: nanoseconds))
    }

    /// The series' handle, made by `make` the first time.
    private static func handle<Handle: Sendable>(in made: borrowing Mutex<[Series: Handle]>, _ series: Series, make: () -> Handle) -> Handle {
        made.withLock { made in
            if let handle = made[series] { return handle }
            let handle = make()
            made[series] = handle
            return handle
        }
    }

    /// One answered request's series (`berth_http_requests_total` and
    /// `berth_http_request_duration_seconds`), by its route, method and status as they are: no
    /// label text is built per request (building each ``Series``' label strings was most of the
    /// middleware's cost).
    private struct RequestSeries: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private let requestSeries = Mutex<[RequestSeries: (count: any CounterHandler, time: any TimerHandler)]>([:])

    func answered(route: String, method: String, status: Int, nanoseconds: UInt64) {
        let key = RequestSeries(route: route, method: method, status: status)
        let handles = requestSeries.withLock { made in
            if let handles = made[key] { return handles }
            let handles = (
                count: factory.makeCounter(
                    label: "berth_http_requests_total",
                    dimensions: [("route", route), ("method", method), ("status", String(status))]
                ),
                time: factory.makeTimer(label: "berth_http_request_duration_seconds", dimensions: [("route", route), ("method", method)])
            )
            made[key] = handles
            return handles
        }
        handles.count.increment(by: 1)
        handles.time.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    public func gauge(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        factory.makeRecorder(label: name, dimensions: labels, aggregate: false).record(value)
    }

    /// The text exposition format.
    public func render() -> String {
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: What Berth counts

    /// A claim's outcome (`verify-purchase` or the validator): `berth_verifications_total{outcome}`
    /// (`applied`, `repeated` or the refusal's code) and, where a purchase is known,
    /// `berth_purchases_total{kind,result}`; replays also count in `berth_replays_total`.
    func verification(_ outcome: PurchaseOutcome) {
        switch outcome {
        case .applied(let purchase): verification("applied", purchase: purchase, result: "applied")
        case .repeated(let purchase): verification("repeated", purchase: purchase, result: "repeated")
        case .needsRefund(let purchase, let code, _): verification(code.rawValue, purchase: purchase, result: "refused")
        case .replay:
            verification(ErrorCode.transactionAlreadyUsed.rawValue, purchase: nil, result: "refused")
            count("berth_replays_total")
        case .refused(let code, _): verification(code.rawValue, purchase: nil, result: "refused")
        }
    }

    /// A verification that ended in an error before any claim (a proof refused, a product unknown…).
    func verificationFailed(_ error: any Error) {
        count("berth_verifications_total", [("outcome", Self.errorCode(error))])
    }

    private func verification(_ outcome: String, purchase: Purchase?, result: String) {
        count("berth_verifications_total", [("outcome", outcome)])
        guard let purchase else { return }
        let kind = purchase.kind?.rawValue ?? "unknown"
        count("berth_purchases_total", [("kind", kind), ("result", result)])
    }

    /// The stable code of an error, as metrics label it.
    static func errorCode(_ error: any Error) -> String {
        switch error {
        case let error as APIError: error.code.rawValue
        case let error as DomainError: error.code.rawValue
        case is StoreUnavailable: ErrorCode.temporarilyUnavailable.rawValue
        default: ErrorCode.internalError.rawValue
        }
    }

    func notification(type: String, outcome: String) {
        count("berth_notifications_total", [("type", type), ("outcome", outcome)])
    }

    /// Attempts to answer Apple's consumption requests: `sent`, `failed` (tried again within Apple's
    /// 12-hour window), `expired` (the window closed first), `no_consent`, `not_configured`:
    /// `berth_consumption_answers_total{tenant,outcome}`.
    func consumptionAnswer(tenant: String, outcome: String) {
        count("berth_consumption_answers_total", [("tenant", tenant), ("outcome", outcome)])
    }

}

extension BerthMetrics {
    /// `store`, timing its units of work in these metrics (the composition root wraps the store with it).
    public func measuring(_ store: any Store) -> any Store { MeasuredStore(store: store, metrics: self) }
}

/// A store that times its units of work (`berth_store_transaction_duration_seconds{kind}`).
struct MeasuredStore: Store {
    let store: any Store
    let metrics: BerthMetrics

    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await measured("read") { try await store.read(body) }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await measured("write") { try await store.write(body) }
    }

    func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await measured("read") { try await store.readStatement(body) }
    }

    func engineGauges() -> [(name: String, value: Double)] { store.engineGauges() }

    private func measured<T>(_ kind: String, _ body: () async throws -> T) async throws -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        defer {
            metrics.time("berth_store_transaction_duration_seconds", [("kind", kind)], nanoseconds: DispatchTime.now().uptimeNanoseconds - start)
        }
        return try await body()
    }
}

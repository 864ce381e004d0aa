// Microbenchmarks (ordo-one/benchmark): the verifier, the hot route's coders, and whole requests
// through Berth's router in process (authentication, the use case, a SQLite unit of work, the answer),
// without sockets. Allocation counts (and instruction counts, on machines whose perf counts them) are
// checked against benchmarks/thresholds/ by scripts/bench-check (release) and against
// benchmarks/thresholds-debug.json by scripts/bench-check --debug, which CI runs.
//
//     swift package benchmark                          # every benchmark, a table
//     scripts/bench-check                              # the counts against the checked-in thresholds
//     scripts/bench-check --update                     # write new thresholds (after a deliberate change)
import AppleSignedData
import AsyncHTTPClient
import Benchmark
import BerthApp
import Domain
import Foundation
@_spi(Benchmarks) import HTTPAPI
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import SQLStore
import Synchronization
import TestKit
import UseCases

let benchmarks: @Sendable () -> Void = {
    // Counts are what the thresholds hold: allocations always, instructions where the kernel counts them
    // (`perf stat -e instructions true`); wall clock and throughput only for reading.
    let counted: [BenchmarkMetric] = [.mallocCountTotal, .instructions]
    let metrics = counted + [.wallClock, .throughput]
    // A p90 allocation count may grow by 5 % (or 2 allocations) before the check calls it a regression.
    let tolerances: [BenchmarkMetric: BenchmarkThresholds] = [
        .mallocCountTotal: .init(relative: [.p90: 5.0], absolute: [.p90: 2]),
        .instructions: .init(relative: [.p90: 5.0]),
    ]
    func configuration(iterations: Int) -> Benchmark.Configuration {
        .init(metrics: metrics, warmupIterations: 5, maxDuration: .seconds(20), maxIterations: iterations, thresholds: tolerances)
    }

    Benchmark("verifier.jws-cached-chain", configuration: configuration(iterations: 2_000)) { benchmark, fixture in
        for _ in benchmark.scaledIterations {
            blackHole(try await fixture.verifier.verifyTransaction(fixture.signedTransaction, expecting: fixture.expectations))
        }
    } setup: {
        try await VerifierFixture.make()
    }

    Benchmark("coders.verify-purchase-request", configuration: configuration(iterations: 5_000)) { benchmark, fixture in
        for _ in benchmark.scaledIterations {
            blackHole(try fixture.coders.decodeRequest(fixture.requestBody))
        }
    } setup: {
        try await CodersFixture.shared()
    }

    Benchmark("coders.verify-purchase-answer", configuration: configuration(iterations: 5_000)) { benchmark, fixture in
        for _ in benchmark.scaledIterations {
            blackHole(try fixture.coders.encodeAnswer())
        }
    } setup: {
        try await CodersFixture.shared()
    }

    // A unit of work end to end: a new purchase of a pending booking (verification, claim, the SQLite
    // write transaction with its audit and outbox rows, the answer). Each iteration uses its own booking.
    Benchmark("request.verify-purchase-first-time", configuration: configuration(iterations: AppFixture.firstTimePurchases - 10)) { benchmark, app in
        for _ in benchmark.scaledIterations {
            let (user, body) = try app.nextPendingPurchase()
            let status = try await app.send(.post, "/api/verify-purchase", user: user, body: body)
            guard status == .ok else { throw BenchmarkFailure("first-time verify-purchase answered \(status)") }
        }
    } setup: {
        try await AppFixture.shared()
    }

    Benchmark("request.verify-purchase-replay", configuration: configuration(iterations: 2_000)) { benchmark, app in
        for _ in benchmark.scaledIterations {
            let status = try await app.send(.post, "/api/verify-purchase", user: app.replay.user, body: app.replay.body)
            guard status == .ok else { throw BenchmarkFailure("replayed verify-purchase answered \(status)") }
        }
    } setup: {
        try await AppFixture.shared()
    }

    Benchmark("request.entitlements", configuration: configuration(iterations: 5_000)) { benchmark, app in
        for _ in benchmark.scaledIterations {
            let (status, answer) = try await app.exchange(.get, "/api/entitlements", user: "reader", body: nil)
            guard status == .ok else { throw BenchmarkFailure("entitlements answered \(status): \(String(buffer: answer))") }
        }
    } setup: {
        try await AppFixture.shared()
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One TestKit CA, one signed transaction, a verifier whose chain cache has already seen its leaf.
struct VerifierFixture: Sendable {
    let verifier: SignedDataVerifier
    let signedTransaction: String
    let expectations: AppExpectations

    static func make() async throws -> VerifierFixture {
        let ca = try TestCA.generate()
        let expectations = try AppExpectations(bundleId: AppFixture.bundleId, appAppleId: nil, environment: .sandbox)
        let jws = try ca.signTransaction(.testPurchase(bundleId: AppFixture.bundleId, productId: AppFixture.productId))
        let verifier = SignedDataVerifier(roots: ca.trustedRoots)
        _ = try await verifier.verifyTransaction(jws, expecting: expectations)
        return VerifierFixture(verifier: verifier, signedTransaction: jws, expectations: expectations)
    }
}

/// A real request body and the answer Berth gave to it.
struct CodersFixture: Sendable {
    let coders: VerifyPurchaseCoders
    let requestBody: Data

    private static let made = Mutex<CodersFixture?>(nil)

    static func shared() async throws -> CodersFixture {
        if let fixture = made.withLock({ $0 }) { return fixture }
        let app = try await AppFixture.shared()
        let fixture = CodersFixture(coders: try VerifyPurchaseCoders(answer: app.replay.answer), requestBody: Data(app.replay.body.utf8))
        made.withLock { $0 = fixture }
        return fixture
    }
}

/// Berth as `berth serve` builds it (a benchmark tenant, a SQLite file in a temporary folder), driven
/// through its router's responder: what a request costs without the socket and HTTP parsing.
final class AppFixture: Sendable {
    static let bundleId = "it.seaboo.app"
    static let productId = "it.seaboo.rental.basic"
    /// Pending bookings made for the first-time benchmark (one per iteration, warm-up included);
    /// BERTH_MICRO_BOOKINGS=20 shortens the set-up when profiling the other benchmarks.
    static let firstTimePurchases = ProcessInfo.processInfo.environment["BERTH_MICRO_BOOKINGS"].flatMap(Int.init).map { max($0, 20) } ?? 600

    let directory: URL
    let store: SQLiteStore
    let responder: RouterResponder<BerthRequestContext>
    let serverKey: String
    let logger: Logger
    /// The connection every request arrives on (a server makes one per connection, not per request).
    let channel = EmbeddedChannel()
    let replay: (user: String, body: String, answer: Data)
    /// Whether this instance closes the store and removes the folder when it goes (the one made during set-up does not).
    private let ownsStore: Bool
    private let pending: Mutex<[(user: String, body: String)]>

    private static let made = Mutex<AppFixture?>(nil)

    static func shared() async throws -> AppFixture {
        if let fixture = made.withLock({ $0 }) { return fixture }
        let fixture = try await make()
        made.withLock { $0 = fixture }
        return fixture
    }

    private init(
        directory: URL,
        store: SQLiteStore,
        responder: RouterResponder<BerthRequestContext>,
        serverKey: String,
        logger: Logger,
        replay: (user: String, body: String, answer: Data),
        pending: [(user: String, body: String)],
        ownsStore: Bool
    ) {
        self.directory = directory
        self.store = store
        self.responder = responder
        self.serverKey = serverKey
        self.logger = logger
        self.replay = replay
        self.pending = Mutex(pending)
        self.ownsStore = ownsStore
    }

    deinit {
        guard ownsStore else { return }
        try? store.close()
        try? FileManager.default.removeItem(at: directory)
    }

    func nextPendingPurchase() throws -> (user: String, body: String) {
        guard let next = pending.withLock({ $0.popLast() }) else {
            throw BenchmarkFailure("the first-time benchmark ran more iterations than the \(Self.firstTimePurchases) bookings it prepared")
        }
        return next
    }

    /// One request through the router; the answer's status (its body is read and dropped).
    func send(_ method: HTTPRequest.Method, _ path: String, user: String?, body: String?) async throws -> HTTPResponse.Status {
        try await exchange(method, path, user: user, body: body).status
    }

    func exchange(
        _ method: HTTPRequest.Method,
        _ path: String,
        user: String?,
        body: String?
    ) async throws -> (status: HTTPResponse.Status, body: ByteBuffer) {
        var headers: HTTPFields = [.authorization: "Bearer \(serverKey)"]
        if let user { headers[Self.userHeader] = user }
        var requestBody = RequestBody(buffer: ByteBuffer())
        if let body {
            headers[.contentType] = "application/json"
            headers[.contentLength] = String(body.utf8.count)
            requestBody = RequestBody(buffer: ByteBuffer(string: body))
        }
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1", path: path, headerFields: headers),
            body: requestBody
        )
        let context = BerthRequestContext(source: .init(channel: channel, logger: logger))
        let response = try await responder.respond(to: request, context: context)
        let collector = BodyCollector()
        try await response.body.write(collector)
        return (response.status, collector.body.withLock { $0 })
    }

    private static let userHeader = HTTPField.Name("X-User-Id")!

    private static func make() async throws -> AppFixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-micro-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ca = try TestCA.generate()
        try ca.write(to: directory.appendingPathComponent("ca"))
        try FileManager.default.copyItem(at: catalogURL, to: directory.appendingPathComponent("products.json"))
        var logger = Logger(label: "berth.micro")
        logger.logLevel = .error
        let setup = BerthSetup(
            catalogURL: directory.appendingPathComponent("products.json"),
            databasePath: directory.appendingPathComponent("berth.sqlite").path,
            environment: ["BENCH_JWT_SECRET": "microbenchmark-secret-of-32-bytes-or-more"]
        )
        let (catalog, store) = try await setup.prepareStore(logger: logger, now: Date())
        let services = try await setup.services(catalog: catalog, store: store, httpClient: .shared, logger: logger)
        let serverKey = APIKeys.generate(tenantId: "bench")
        _ = try await CreateAPIKey(store: store)(tenantId: "bench", role: .server, hash: APIKeys.hash(serverKey), now: Date())
        let responder = buildRouter(services: services).buildResponder()
        let maker = AppFixture(
            directory: directory,
            store: store,
            responder: responder,
            serverKey: serverKey,
            logger: logger,
            replay: ("", "", Data()),
            pending: [],
            ownsStore: false
        )

        // Pending bookings, each with its own signed transaction; one of them is bought now for the replay benchmark.
        let start = Date().addingTimeInterval(7 * 86_400)
        let span = #""start":"\#(BerthJSON.timestamp(start))","end":"\#(BerthJSON.timestamp(start.addingTimeInterval(3600)))""#
        var purchases: [(user: String, body: String)] = []
        for index in 0...firstTimePurchases {
            let user = "buyer-\(index)"
            let (status, answer) = try await maker.exchange(.post, "/api/bookings", user: user, body: #"{"resourceId":"fleet",\#(span)}"#)
            guard status == .created,
                let object = try JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any],
                let booking = object["booking"] as? [String: Any], let id = booking["id"] as? Int
            else { throw BenchmarkFailure("a booking was refused (\(status)): \(String(buffer: answer))") }
            let jws = try ca.signTransaction(.testPurchase(bundleId: bundleId, productId: productId))
            purchases.append((user, #"{"bookingId":\#(id),"productId":"\#(productId)","jwsRepresentation":"\#(jws)"}"#))
        }
        let replayed = purchases.removeLast()
        let (status, answer) = try await maker.exchange(.post, "/api/verify-purchase", user: replayed.user, body: replayed.body)
        guard status == .ok else { throw BenchmarkFailure("the replay benchmark's purchase was refused (\(status)): \(String(buffer: answer))") }
        return AppFixture(
            directory: directory,
            store: store,
            responder: responder,
            serverKey: serverKey,
            logger: logger,
            replay: (replayed.user, replayed.body, Data(answer.readableBytesView)),
            pending: purchases,
            ownsStore: true
        )
    }

    /// The benchmark tenant every benchmark uses (benchmarks/catalog.json): rentals of a large fleet,
    /// a credit pack and a subscription, limits lifted.
    private static let catalogURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("benchmarks/catalog.json")
}

/// Collects a response body (the router's answers are small and whole).
final class BodyCollector: ResponseBodyWriter, Sendable {
    let body = Mutex(ByteBuffer())
    func write(_ buffer: ByteBuffer) async throws { body.withLock { _ = $0.writeImmutableBuffer(buffer) } }
    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

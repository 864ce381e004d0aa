import Domain
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// The routes the router holds, by path pattern, so that a known path called with a method it
/// does not serve answers 405 with `Allow` (not 404). Filled once the routes are registered.
final class RouteTable: Sendable {
    private struct Pattern: Sendable {
        let segments: [Substring?]  // nil: a `{parameter}`
        let methods: [String]
    }

    private let patterns = Mutex<[Pattern]>([])

    func load(_ routes: [(path: String, method: String)]) {
        var byPath: [String: [String]] = [:]
        for route in routes { byPath[route.path, default: []].append(route.method) }
        patterns.withLock {
            $0 = byPath.map { path, methods in
                Pattern(
                    segments: path.split(separator: "/").map { $0.hasPrefix("{") || $0.hasPrefix(":") ? nil : $0 },
                    methods: methods.sorted()
                )
            }
        }
    }

    /// The methods served at `path` (empty when no route matches it).
    func methods(at path: String) -> [String] {
        let parts = path.split(separator: "/")
        return patterns.withLock { patterns in
            // As the router does: the pattern with the most literal segments wins
            // (`/api/subscriptions/link` over `/api/subscriptions/{id}`).
            var found: Set<String> = [], best = -1
            for pattern in patterns where pattern.segments.count == parts.count {
                guard zip(pattern.segments, parts).allSatisfy({ $0.0 == nil || $0.0 == $0.1 }) else { continue }
                let literal = pattern.segments.count { $0 != nil }
                if literal > best {
                    best = literal
                    found = []
                }
                if literal == best { found.formUnion(pattern.methods) }
            }
            return found.sorted()
        }
    }
}

/// What every request gets on its way in and out, in one middleware (the outermost): an id, its
/// language, its metrics and its access log line. They were four middlewares; each level of
/// Hummingbird's chain is an async call with a copy of the request context, and the chain of eight
/// cost about 9 µs of a `GET /healthz`'s 42–48 µs (the bare stack's 32–37; perf, and a build without
/// them).
///
/// - **Id**: the caller's `X-Request-Id` when it is a plain token (up to 64 letters, digits, `-`,
///   `_`, `.`), else a new one. It is in every log line of the request (`request_id`, through
///   ``RequestLog``) and echoed in the response's `X-Request-Id`, errors included.
/// - **Language**: the request's ``RequestLanguage`` is bound around everything after it (refusals
///   rendered by the error middlewares included), and `Content-Language` says which language a
///   refusal was answered in.
/// - **Metrics**: requests by route pattern, method and status, with their latency. Outside the
///   error middleware, so refusals count with the status the client saw.
/// - **Access log**: one line per request at `debug` (`BERTH_LOG_LEVEL=debug`): method, path without
///   its query (queries carry user ids), status, milliseconds, and the request id. At the default
///   level it costs a level check: swift-log evaluates nothing it will not write.
struct RequestScope: RouterMiddleware {
    typealias Context = BerthRequestContext
    static let header = HTTPField.Name("X-Request-Id")!
    let metrics: BerthMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let id = request.headers[Self.header].flatMap(Self.acceptable) ?? Self.generate()
        let language = RequestLanguage(acceptLanguage: request.headers[.acceptLanguage])
        // The id in a task-local value that the loggers' metadata provider reads when a line is written
        // (``RequestLog``), not in the logger's metadata: setting that copied the logger's storage and
        // dictionary for every request (5 % of a `GET /healthz`'s CPU, by perf), mostly to log nothing.
        return try await RequestLog.$requestId.withValue(id) {
            var response = try await RequestLanguage.$current.withValue(language) { try await next(request, context) }
            if let answered = language.answered.withLock({ $0 }), response.headers[.contentLanguage] == nil {
                response.headers[.contentLanguage] = answered
            }
            let elapsed = DispatchTime.now().uptimeNanoseconds &- start
            // Unmatched paths share one label, so that scanners cannot grow the series without bound.
            let route = context.endpointPath ?? "unmatched"
            let method = request.method.rawValue.count <= 10 ? request.method.rawValue : "other"
            metrics.answered(route: route, method: method, status: response.status.code, nanoseconds: elapsed)
            context.logger.debug(
                "request",
                metadata: [
                    "method": .string(request.method.rawValue),
                    "path": .string(request.uri.path),
                    "status": .stringConvertible(response.status.code),
                    "duration_ms": .string(String(format: "%.1f", Double(elapsed) / 1_000_000)),
                ]
            )
            response.headers[Self.header] = id
            return response
        }
    }

    static func acceptable(_ value: String) -> String? {
        let utf8 = value.utf8
        guard (1...64).contains(utf8.count),
            utf8.allSatisfy({ byte in
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    true
                default: false
                }
            })
        else { return nil }
        return value
    }

    /// A new id in a version 4 UUID's form, lowercase. Unique without a system call per request:
    /// 64 random bits drawn once per process, then a counter from a random start (Hummingbird's own
    /// request ids are made the same way). Foundation's `UUID()` opened, read and closed
    /// `/dev/urandom` for each one (6 % of a `GET /healthz`'s CPU, by perf). Ids are for finding a
    /// request's log lines, not secrets.
    private static let digits = Array("0123456789abcdef".utf8)
    private static let processBits = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    static func generate() -> String {
        let sequence = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        var bytes = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: (processBits.bigEndian, sequence.bigEndian)) { bytes = Array($0) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40  // version 4
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant (the counter's top two bits)
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            for (position, byte) in bytes.enumerated() {
                if position == 4 || position == 6 || position == 8 || position == 10 {
                    buffer[index] = UInt8(ascii: "-")
                    index += 1
                }
                buffer[index] = Self.digits[Int(byte >> 4)]
                buffer[index + 1] = Self.digits[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }
}

/// The id of the request the current task serves, in every log line written while it does
/// (`request_id`): `berth serve` gives its loggers ``metadataProvider``.
public enum RequestLog {
    @TaskLocal public static var requestId: String?

    public static let metadataProvider = Logger.MetadataProvider {
        guard let id = requestId else { return [:] }
        return ["request_id": .string(id)]
    }
}

import Foundation
import Testing

/// `BERTH_LOG_FORMAT=json` as an operator's log shipper sees it: `berth serve`'s standard error is
/// one JSON object per line, and a caller's `X-Request-Id` can be found in the lines of its request.
@Suite("Logs with request ids, JSON and text", .serialized)
struct LogFormatTests {
    @Test("every line is a JSON object; the caller's request id is echoed and logged with method, path and status; a bad one is replaced")
    func jsonLinesCarryTheRequestId() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let log = server.directory.appendingPathComponent("stderr.log")
        try await server.start(environment: ["BERTH_LOG_FORMAT": "json", "BERTH_LOG_LEVEL": "debug"], errorLog: log)

        let traced = try await server.request(
            "GET",
            "/api/products?userId=someone",
            headers: ["X-Request-Id": "support-ticket-4711", "Authorization": "Bearer berth_not_a_key"]
        )
        #expect(traced.status == 401)
        #expect(traced.headers["x-request-id"] == "support-ticket-4711")
        let replaced = try await server.request("GET", "/healthz", headers: ["X-Request-Id": "has spaces; and = signs"])
        let newId = try #require(replaced.headers["x-request-id"])
        #expect(newId != "has spaces; and = signs" && UUID(uuidString: newId) != nil, "a new id: \(newId)")
        server.stop()

        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        #expect(!lines.isEmpty)
        var objects: [[String: Any]] = []
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "not a JSON object: \(line)")
            guard let object else { continue }
            for field in ["time", "level", "label", "message"] { #expect(object[field] is String, "\(field) missing in \(line)") }
            objects.append(object)
        }
        let request = objects.first { $0["request_id"] as? String == "support-ticket-4711" && $0["message"] as? String == "request" }
        #expect(request?["method"] as? String == "GET")
        #expect(request?["path"] as? String == "/api/products", "the query (user ids) is not logged")
        #expect(request?["status"] as? String == "401")
        #expect(request?["level"] as? String == "debug")
        #expect(objects.contains { $0["request_id"] as? String == newId && $0["path"] as? String == "/healthz" })
        #expect(!lines.contains { $0.contains("someone") }, "the query string stays out of the logs")
    }

    @Test("the default text lines carry the request id too (the loggers' metadata provider reads the request's id)")
    func textLinesCarryTheRequestId() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let log = server.directory.appendingPathComponent("stderr.log")
        try await server.start(environment: ["BERTH_LOG_LEVEL": "debug"], errorLog: log)
        let traced = try await server.request("GET", "/healthz", headers: ["X-Request-Id": "support-ticket-4712"])
        #expect(traced.headers["x-request-id"] == "support-ticket-4712")
        server.stop()
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        #expect(
            lines.contains {
                // The logger's own metadata (Hummingbird's `hb.request.id`, set per request) is written too.
                $0.contains("request_id=support-ticket-4712") && $0.contains("path=/healthz") && $0.contains("hb.request.id=")
            },
            "\(lines.suffix(5).joined(separator: "\n"))"
        )
        #expect(!lines.contains { $0.contains("migrat") && $0.contains("request_id=") }, "lines outside a request carry no id")
    }
}

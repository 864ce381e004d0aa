import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import Yams

/// Issue 24's extremes test: every integer or number parameter (path and query) and every numeric
/// field of every request body in the OpenAPI document gets Int64.min, Int64.max, -1, 0, a huge
/// number and an overflowing literal, and every body field a deeply nested value. Each answer must
/// be below 500 (or 503, storage trouble, which a real SQLite file here does not have), and the
/// service must keep answering afterwards. A trap would end the test process itself.
@Suite("Extremes: every numeric parameter and field of the API document")
struct ExtremesTests {
    static let extremes: [(name: String, json: String)] = [
        ("Int64.min", "-9223372036854775808"), ("Int64.max", "9223372036854775807"), ("-1", "-1"), ("0", "0"),
        ("huge", "1e308"), ("overflowing", "99999999999999999999999999"), ("fraction", "0.5"),
    ]
    static let nested = String(repeating: "[", count: 2000) + String(repeating: "]", count: 2000)

    struct Operation {
        var method: String
        var path: String
        var parameters: [JSON]
        var body: JSON?
    }

    static func document() throws -> JSON {
        let text = try String(contentsOf: Harness.repository.appendingPathComponent("Sources/HTTPAPI/Resources/openapi.yaml"), encoding: .utf8)
        return try #require(try Yams.load(yaml: text).flatMap(JSON.init(foundation:))?.object)
    }

    /// Follows `$ref`s within the document.
    static func resolve(_ value: JSON?, in document: JSON) -> JSON? {
        guard var object = value?.object else { return nil }
        var hops = 0
        while let ref = object["$ref"].string, hops < 10 {
            var node = document
            for part in ref.dropFirst(2).split(separator: "/") { node = node[String(part)] }
            guard let next = node.object else { return nil }
            object = next
            hops += 1
        }
        return object
    }

    static func isNumeric(_ schema: JSON?) -> Bool {
        ["integer", "number"].contains(schema?["type"].string ?? "")
    }

    /// A minimal valid-looking value for a schema (so that the extreme is the only odd member).
    static func placeholder(_ schema: JSON?, in document: JSON) -> String {
        guard let schema else { return "\"x\"" }
        if let values = schema["enum"].array, let first = values.first { return first.text }
        switch schema["type"].string {
        case "integer", "number": return "1"
        case "boolean": return "true"
        case "array": return "[]"
        case "object": return "{}"
        default: return schema["format"].string == "date-time" ? "\"2030-01-01T10:00:00Z\"" : "\"x1\""
        }
    }

    @Test(
        "Int64.min, Int64.max, -1, 0, huge and overflowing numbers and deep nesting in every numeric parameter and body field: 4xx, never a trap or a 500"
    )
    func everyNumericInput() async throws {
        let document = try Self.document()
        let paths = try #require(document["paths"].members)
        var operations: [Operation] = []
        for (path, item) in paths {
            guard item.members != nil else { continue }
            for method in ["get", "post", "put", "delete", "patch"] {
                guard let operation = item[method].object else { continue }
                let parameters = ((operation["parameters"].array) ?? []).compactMap { Self.resolve($0, in: document) }
                let content = Self.resolve(operation["requestBody"], in: document)?["content"].object
                let body = Self.resolve(content?["application/json"]["schema"], in: document)
                operations.append(Operation(method: method.uppercased(), path: path, parameters: parameters, body: body))
            }
        }
        #expect(operations.count > 50, "the document lists the API (\(operations.count) operations)")

        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await CreditsTests.Keys.make(harness)
        let ftc = (server: try await harness.apiKey("ftchinese-test", .server), admin: try await harness.apiKey("ftchinese-test", .admin))
        /// The key of an app that serves the route (credits: the AI stylist; FT Chinese's and
        /// subscriptions: FT Chinese; the rest: Seaboo), admin keys for admin routes.
        func key(for path: String) -> String {
            let admin = path.hasPrefix("/api/admin")
            if path.contains("credits") { return admin ? keys.stylistAdmin : keys.stylist }
            if path.contains("subscription") || path.contains("membership") || path.contains("/apple/") || path.contains("entitlements") {
                return admin ? ftc.admin : ftc.server
            }
            return admin ? harness.adminKey : harness.serverKey
        }

        // Every request, built before sending: (method, uri, body, key).
        var requests: [(method: String, uri: String, body: String?, key: String)] = []
        for operation in operations {
            // Path and query parameters.
            for parameter in operation.parameters where Self.isNumeric(Self.resolve(parameter["schema"], in: document)) {
                guard let name = parameter["name"].string, let place = parameter["in"].string else { continue }
                for (_, value) in Self.extremes {
                    let path = operation.path.replacingOccurrences(of: "{\(name)}", with: value)
                        .replacingOccurrences(of: #"\{[A-Za-z]+\}"#, with: "1", options: .regularExpression)
                    let uri = place == "query" ? "\(path)?\(name)=\(value)" : path
                    requests.append((operation.method, uri, operation.body == nil ? nil : "{}", key(for: uri)))
                }
            }
            // Body fields: each numeric one gets every extreme; every field gets deep nesting.
            guard let body = operation.body, let properties = body["properties"].members else { continue }
            let path = operation.path.replacingOccurrences(of: #"\{[A-Za-z]+\}"#, with: "1", options: .regularExpression)
            let required = Set((body["required"].strings) ?? [])
            for (field, schema) in properties {
                let resolved = Self.resolve(schema, in: document)
                let others = properties.keys.filter { $0 != field && required.contains($0) }.sorted()
                    .map { "\"\($0)\": \(Self.placeholder(Self.resolve(properties[$0], in: document), in: document))" }
                var values = [Self.nested]
                if Self.isNumeric(resolved) { values += Self.extremes.map(\.json) }
                for value in values {
                    requests.append(
                        (operation.method, path, "{" + (others + ["\"\(field)\": \(value)"]).joined(separator: ", ") + "}", key(for: path))
                    )
                }
            }
        }
        let planned = requests
        let (sent, reachedHandler, failures, healthy) = try await harness.app().test(.router) { client in
            var sent = 0, reachedHandler = 0
            var failures: [String] = []
            for request in planned {
                var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(request.key)"]
                headers[HTTPField.Name("X-User-Id")!] = "extreme-user"
                headers[HTTPField.Name("X-Ftc-Id")!] = "extreme-user"
                let status = try await client.execute(
                    uri: request.uri,
                    method: HTTPRequest.Method(request.method)!,
                    headers: headers,
                    body: request.body.map { ByteBuffer(string: $0) }
                ) { $0.status }
                sent += 1
                if status != .unauthorized && status != .forbidden { reachedHandler += 1 }
                if status.code >= 500 && status != .serviceUnavailable {
                    failures.append("\(request.method) \(request.uri) \(request.body?.prefix(80) ?? "") → \(status.code)")
                }
            }
            let healthy = try await client.execute(uri: "/healthz", method: .get) { $0.status } == .ok
            return (sent, reachedHandler, failures, healthy)
        }
        #expect(healthy, "still serving")
        #expect(failures.isEmpty, "\(failures.count) answers of 500: \(failures.prefix(20))")
        #expect(sent > 300, "requests sent: \(sent)")
        #expect(
            Double(reachedHandler) > Double(sent) * 0.8,
            "most requests passed authentication and reached their route: \(reachedHandler) of \(sent)"
        )
    }
}

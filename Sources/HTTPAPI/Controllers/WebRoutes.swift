import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Yams

/// The pages people open in a browser: `/` leads to `/admin` (the admin web page, a static page
/// calling the JSON API), `/openapi.yaml` (the contract as the server answers it) and `/docs`
/// (the same contract, readable, rendered here without any asset from the internet).
struct WebRoutes {
    let assets: WebAssets

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<BerthRequestContext> {
        let router = RouteCollection(context: BerthRequestContext.self)
        router.get("/", use: get)
        router.get("/admin", use: getAdmin)
        router.get("/admin/admin.js", use: getAdminAdminJs)
        router.get("/admin/admin.css", use: getAdminAdminCss)
        router.get("/openapi.yaml", use: getOpenapiYaml)
        router.get("/docs", use: getDocs)
        return router
    }

    /// `GET /`
    func get(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        Response(status: .found, headers: [.location: "/admin", .cacheControl: "no-store"])
    }

    /// `GET /admin`
    func getAdmin(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        assets.page("admin.html", type: "text/html; charset=utf-8")
    }

    /// `GET /admin/admin.js`
    func getAdminAdminJs(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        assets.page("admin.js", type: "text/javascript; charset=utf-8")
    }

    /// `GET /admin/admin.css`
    func getAdminAdminCss(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        assets.page("admin.css", type: "text/css; charset=utf-8")
    }

    /// `GET /openapi.yaml`
    func getOpenapiYaml(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        Response(
            status: .ok,
            headers: [.contentType: "application/yaml; charset=utf-8", .cacheControl: "no-cache"],
            body: .init(byteBuffer: assets.openAPIBytes)
        )
    }

    /// `GET /docs`
    func getDocs(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        Response(
            status: .ok,
            headers: WebAssets.pageHeaders(type: "text/html; charset=utf-8"),
            body: .init(byteBuffer: assets.docsBytes)
        )
    }
}

/// The files behind ``WebRoutes``, compiled into the binary (SwiftPM's embedInCode), so that
/// `berth` serves them from wherever it is installed, with no resource bundle beside it.
///
/// Each answer's bytes are made once and shared by every answer (a `ByteBuffer` is copied on write
/// only): an answer waiting to be sent to a client that does not read costs no copy of its own
/// (V2 of the security review: 40 pipelined `GET /openapi.yaml` pinned 650 KB per connection when
/// each answer was its own 256 KB buffer).
public struct WebAssets: Sendable {
    let files: [String: ByteBuffer]
    let openAPI: String
    let docs: String
    let openAPIBytes: ByteBuffer
    let docsBytes: ByteBuffer

    /// Built once; the docs page is rendered from the embedded document (a malformed document
    /// fails the test suite, and here falls back to a page saying so rather than stopping the server).
    public static let shared = WebAssets()

    init() {
        files = [
            "admin.html": ByteBuffer(bytes: PackageResources.admin_html),
            "admin.js": ByteBuffer(bytes: PackageResources.admin_js),
            "admin.css": ByteBuffer(bytes: PackageResources.admin_css),
        ]
        openAPI = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
        docs = Self.docsPage(openAPI)
        openAPIBytes = ByteBuffer(string: openAPI)
        docsBytes = ByteBuffer(string: docs)
    }

    /// The rendered document, or a page pointing to the raw one when it cannot be rendered.
    static func docsPage(_ openAPI: String) -> String {
        do {
            return try APIDocsPage.render(openAPI)
        } catch {
            return
                "<!doctype html><title>Berth API</title><p>The API document could not be rendered: \(APIDocsPage.escape(String(describing: error))). "
                + "It is served as it is at <a href=\"/openapi.yaml\">/openapi.yaml</a>.</p>\n"
        }
    }

    /// What every page answers with: no framing by other sites, scripts and styles from this
    /// server only, no referrer leaking the admin's URL.
    static func pageHeaders(type: String) -> HTTPFields {
        [
            .contentType: type, .cacheControl: "no-cache",
            .contentSecurityPolicy:
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            .xContentTypeOptions: "nosniff", HTTPField.Name("Referrer-Policy")!: "no-referrer", HTTPField.Name("X-Frame-Options")!: "DENY",
        ]
    }

    func page(_ name: String, type: String) -> Response {
        Response(status: .ok, headers: Self.pageHeaders(type: type), body: .init(byteBuffer: files[name] ?? ByteBuffer()))
    }
}

/// `/docs`: the OpenAPI document as one HTML page (operations by path with their parameters,
/// request bodies and every status they answer, then the schemas), escaped, without scripts.
enum APIDocsPage {
    static func render(_ yaml: String) throws -> String {
        guard let document = try Yams.load(yaml: yaml) as? [String: Any] else { throw CocoaError(.fileReadCorruptFile) }
        let info = document["info"] as? [String: Any] ?? [:]
        let title = escape(info["title"] as? String ?? "API"), version = escape(info["version"].map { "\($0)" } ?? "")
        let description = escape(info["description"] as? String ?? "")
        var html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) API</title><link rel="stylesheet" href="/admin/admin.css"></head>
            <body class="docs"><header><h1>\(title) API <small>\(version)</small></h1>
            <nav><a href="/admin">Admin</a> · <a href="/openapi.yaml">openapi.yaml</a></nav></header><main>
            <p class="description">\(description)</p>
            """
        let paths = document["paths"] as? [String: Any] ?? [:]
        html += "<h2>Operations</h2><ul class=\"toc\">"
        let methods = ["get", "post", "put", "patch", "delete"]
        for path in paths.keys.sorted() {
            guard let item = paths[path] as? [String: Any] else { continue }
            for method in methods where item[method] != nil {
                html += "<li><a href=\"#\(anchor(method, path))\"><code>\(method.uppercased()) \(escape(path))</code></a></li>"
            }
        }
        html += "</ul>"
        for path in paths.keys.sorted() {
            guard let item = paths[path] as? [String: Any] else { continue }
            let shared = item["parameters"] as? [Any] ?? []
            for method in methods {
                guard let operation = item[method] as? [String: Any] else { continue }
                html += "<section class=\"operation\" id=\"\(anchor(method, path))\"><h3><code>\(method.uppercased()) \(escape(path))</code></h3>"
                if let summary = operation["summary"] as? String { html += "<p><strong>\(escape(summary))</strong></p>" }
                if let description = operation["description"] as? String { html += "<p class=\"description\">\(escape(description))</p>" }
                if let security = operation["security"] as? [[String: Any]] {
                    let schemes = security.flatMap(\.keys)
                    html += "<p>Authentication: \(schemes.isEmpty ? "none" : schemes.map(escape).joined(separator: " or "))</p>"
                }
                let parameters = shared + (operation["parameters"] as? [Any] ?? [])
                if !parameters.isEmpty {
                    html += "<table><tr><th>Parameter</th><th>In</th><th>Schema</th><th>Description</th></tr>"
                    for case let parameter as [String: Any] in parameters.map({ resolve($0, in: document) }) {
                        let required = parameter["required"] as? Bool == true ? " (required)" : ""
                        html +=
                            "<tr><td><code>\(escape(parameter["name"] as? String ?? ""))</code>\(required)</td><td>\(escape(parameter["in"] as? String ?? ""))</td>"
                            + "<td>\(schemaName(parameter["schema"]))</td><td>\(escape(parameter["description"] as? String ?? ""))</td></tr>"
                    }
                    html += "</table>"
                }
                if let body = operation["requestBody"] as? [String: Any] {
                    html += "<p>Request body: \(contentSummary(body["content"]))</p>"
                }
                if let responses = operation["responses"] as? [String: Any] {
                    html += "<table><tr><th>Status</th><th>Description</th><th>Body</th></tr>"
                    for status in responses.keys.sorted() {
                        let response = resolve(responses[status] as Any, in: document) as? [String: Any] ?? [:]
                        html +=
                            "<tr><td>\(escape(status))</td><td>\(escape(response["description"] as? String ?? ""))</td><td>\(contentSummary(response["content"]))</td></tr>"
                    }
                    html += "</table>"
                }
                html += "</section>"
            }
        }
        let schemas = (document["components"] as? [String: Any])?["schemas"] as? [String: Any] ?? [:]
        html += "<h2>Schemas</h2>"
        for name in schemas.keys.sorted() {
            let yamlText = (try? Yams.dump(object: schemas[name] as Any, width: 120, sortKeys: true)) ?? ""
            html += "<section class=\"schema\" id=\"schema-\(escape(name))\"><h3>\(escape(name))</h3><pre>\(escape(yamlText))</pre></section>"
        }
        return html + "</main></body></html>\n"
    }

    private static func resolve(_ value: Any, in document: [String: Any]) -> Any {
        guard let object = value as? [String: Any], let ref = object["$ref"] as? String, ref.hasPrefix("#/") else { return value }
        var current: Any = document
        for part in ref.dropFirst(2).split(separator: "/") {
            guard let next = (current as? [String: Any])?[String(part)] else { return value }
            current = next
        }
        return current
    }

    private static func schemaName(_ schema: Any?) -> String {
        guard let schema = schema as? [String: Any] else { return "" }
        if let ref = schema["$ref"] as? String, let name = ref.split(separator: "/").last {
            return "<a href=\"#schema-\(escape(String(name)))\">\(escape(String(name)))</a>"
        }
        if let type = schema["type"] as? String {
            if type == "array" { return "array of " + schemaName(schema["items"]) }
            if let values = schema["enum"] as? [Any] { return escape(values.map { "\($0)" }.joined(separator: " | ")) }
            return escape(type)
        }
        if let options = schema["oneOf"] as? [Any] ?? schema["anyOf"] as? [Any] { return options.map(schemaName).joined(separator: " or ") }
        return "object"
    }

    private static func contentSummary(_ content: Any?) -> String {
        guard let content = content as? [String: Any] else { return "" }
        return content.keys.sorted().map { type in
            "<code>\(escape(type))</code> " + schemaName((content[type] as? [String: Any])?["schema"])
        }.joined(separator: "<br>")
    }

    private static func anchor(_ method: String, _ path: String) -> String {
        method + "-" + String(path.map { $0.isLetter || $0.isNumber ? $0 : "-" })
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }
}

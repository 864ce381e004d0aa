import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// CORS per tenant, as the browser in a WebView meets it (the headless-Chromium run in
/// Tests/browser checks what the browser makes of these headers).
@Suite("CORS: apps in WebViews call Berth from other origins")
struct CrossOriginTests {
    static func send(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        origin: String?,
        auth: String? = nil,
        user: String? = nil,
        extra: HTTPFields = [:]
    ) async throws -> Reply {
        var headers = extra
        if let origin { headers[HTTPField.Name("Origin")!] = origin }
        if let auth { headers[.authorization] = "Bearer \(auth)" }
        if let user { headers[HTTPField.Name("X-User-Id")!] = user }
        return try await client.execute(uri: uri, method: method, headers: headers, body: nil) { response in
            Reply(status: response.status, data: Data(response.body.readableBytesView), headers: response.headers)
        }
    }

    static func preflight(_ client: some TestClientProtocol, _ uri: String, origin: String, method: String = "POST") async throws -> Reply {
        try await send(
            client,
            .options,
            uri,
            origin: origin,
            extra: [
                HTTPField.Name("Access-Control-Request-Method")!: method,
                HTTPField.Name("Access-Control-Request-Headers")!: "authorization, content-type, x-user-id, x-berth-nonce",
            ]
        )
    }

    static func header(_ reply: Reply, _ name: String) -> String? { reply.headers[HTTPField.Name(name)!] }

    @Test(
        "a preflight from an app's origin is answered 204 with the origin, the route's methods and the headers apps send; the platforms' origins all work"
    )
    func preflights() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            for origin in [
                "capacitor://localhost", "https://localhost", "http://localhost", "ionic://localhost", "app://localhost", "http://localhost:5173",
            ] {
                let reply = try await Self.preflight(client, "/api/verify-purchase", origin: origin)
                #expect(reply.status == .noContent, "\(origin)")
                #expect(Self.header(reply, "Access-Control-Allow-Origin") == origin)
                #expect(Self.header(reply, "Access-Control-Allow-Methods")?.contains("POST") == true)
                let allowed = Self.header(reply, "Access-Control-Allow-Headers")?.lowercased() ?? ""
                for name in ["authorization", "content-type", "x-user-id", "x-berth-nonce", "accept-language"] {
                    #expect(allowed.contains(name), "\(name) in \(allowed)")
                }
                #expect(Self.header(reply, "Access-Control-Max-Age") != nil && Self.header(reply, "Vary")?.contains("Origin") == true)
                #expect(Self.header(reply, "Access-Control-Allow-Origin") != "*")
            }
            let get = try await Self.preflight(client, "/api/entitlements", origin: "capacitor://localhost", method: "GET")
            #expect(Self.header(get, "Access-Control-Allow-Methods")?.contains("GET") == true)
        }
    }

    @Test("an origin no tenant allows, an admin route and an admin key get no Access-Control-Allow-Origin: the browser refuses them")
    func refusals() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let client = try await harness.apiKey("aistylist-test", .client)
        try await harness.app().test(.router) { http in
            for origin in ["https://evil.example", "http://localhost.evil.example", "null", "capacitor://localhost.evil"] {
                let reply = try await Self.preflight(http, "/api/verify-purchase", origin: origin)
                #expect(Self.header(reply, "Access-Control-Allow-Origin") == nil, "\(origin)")
                let real = try await Self.send(http, .get, "/api/credits", origin: origin, auth: client, user: "ana")
                #expect(real.status == .ok && Self.header(real, "Access-Control-Allow-Origin") == nil, "\(origin)")
            }
            let admin = try await Self.preflight(http, "/api/admin/keys", origin: "capacitor://localhost", method: "GET")
            #expect(Self.header(admin, "Access-Control-Allow-Origin") == nil)
            let adminCall = try await Self.send(http, .get, "/api/admin/keys", origin: "capacitor://localhost", auth: harness.adminKey)
            #expect(adminCall.status == .ok && Self.header(adminCall, "Access-Control-Allow-Origin") == nil)
            // Other spellings the router answers as the same routes (V7): judged by the path's components.
            for path in ["//api/admin/keys", "/api//admin/keys", "/api/admin/keys/"] {
                let preflight = try await Self.preflight(http, path, origin: "capacitor://localhost", method: "GET")
                #expect(Self.header(preflight, "Access-Control-Allow-Origin") == nil, "\(path)")
            }
            for path in ["/metrics", "//metrics", "/metrics/"] {
                let metrics = try await Self.send(http, .get, path, origin: "capacitor://localhost")
                #expect(Self.header(metrics, "Access-Control-Allow-Origin") == nil, "\(path): \(metrics.status)")
            }
            let memberships = try await Self.send(http, .put, "//api/admin/memberships/u1", origin: "capacitor://localhost", auth: client)
            #expect(Self.header(memberships, "Access-Control-Allow-Origin") == nil)
            let adminKeyElsewhere = try await Self.send(http, .get, "/api/products", origin: "capacitor://localhost", auth: harness.adminKey)
            #expect(Self.header(adminKeyElsewhere, "Access-Control-Allow-Origin") == nil, "an operator's key never answers cross-origin")
            // A tenant that allows no origin (the shipped `seaboo`): its callers get no CORS, whatever other tenants allow.
            let production = try await Self.send(
                http,
                .get,
                "/api/bookings",
                origin: "capacitor://localhost",
                auth: harness.otherServerKey,
                user: "ana"
            )
            #expect(production.status == .ok && Self.header(production, "Access-Control-Allow-Origin") == nil)
        }
    }

    @Test("answers to an allowed origin carry it and expose the signature, request-id, retry and language headers; so do refusals")
    func answers() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let client = try await harness.apiKey("aistylist-test", .client)
        try await harness.app().test(.router) { http in
            let reply = try await Self.send(http, .get, "/api/credits", origin: "capacitor://localhost", auth: client, user: "ana")
            #expect(reply.status == .ok)
            #expect(Self.header(reply, "Access-Control-Allow-Origin") == "capacitor://localhost")
            let exposed = Self.header(reply, "Access-Control-Expose-Headers") ?? ""
            for name in [
                "X-Berth-Signature", "X-Berth-Signed-At", "X-Berth-Key-Id", "X-Berth-Nonce", "X-Request-Id", "Retry-After", "Content-Language",
            ] {
                #expect(exposed.contains(name), "\(name) in \(exposed)")
            }
            #expect(Self.header(reply, "Vary")?.contains("Origin") == true)
            let unauthenticated = try await Self.send(http, .get, "/api/credits", origin: "https://localhost")
            #expect(unauthenticated.status == .unauthorized && Self.header(unauthenticated, "Access-Control-Allow-Origin") == "https://localhost")
            let badKey = try await Self.send(http, .get, "/api/credits", origin: "https://localhost", auth: "berth_nope_x", user: "ana")
            #expect(badKey.status == .unauthorized && Self.header(badKey, "Access-Control-Allow-Origin") == "https://localhost")
            let noOrigin = try await Self.send(http, .get, "/api/credits", origin: nil, auth: client, user: "ana")
            #expect(Self.header(noOrigin, "Access-Control-Allow-Origin") == nil)
        }
    }

    @Test("HEAD answers on every GET route: the GET's status and headers, no body")
    func head() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { http in
            let health = try await Self.send(http, .head, "/healthz", origin: nil)
            #expect(health.status == .ok && health.data.isEmpty)
            let get = try await Self.send(http, .get, "/healthz", origin: nil)
            #expect(Self.header(health, "Content-Length") == String(get.data.count))
            let products = try await Self.send(http, .head, "/api/products", origin: nil, auth: harness.serverKey)
            #expect(products.status == .ok && products.data.isEmpty)
            #expect(try await Self.send(http, .head, "/api/verify-purchase", origin: nil).status == .methodNotAllowed)
        }
    }

    @Test("allowedOrigins holds origins only: no *, no path, no query; a port or * for any port")
    func catalogValidation() throws {
        #expect(AllowedOrigin("capacitor://localhost")?.matches("capacitor://localhost") == true)
        #expect(AllowedOrigin("http://localhost:*")?.matches("http://localhost:8100") == true)
        #expect(AllowedOrigin("http://localhost:*")?.matches("https://localhost:8100") == false)
        #expect(AllowedOrigin("https://app.example:8443")?.matches("https://app.example:8443") == true)
        #expect(AllowedOrigin("https://app.example:8443")?.matches("https://app.example") == false)
        #expect(AllowedOrigin("HTTPS://App.Example")?.matches("https://app.example") == true)
        for bad in [
            "*", "https://*", "https://app.example/", "https://app.example/path", "app.example", "https://app.example?x", "null",
            "https://u@app.example",
            "https://app.example:0", "https://app.example:99999", "",
        ] {
            #expect(AllowedOrigin(bad) == nil, "\(bad)")
        }
        var catalog = try JSONDecoder().decode(Catalog.self, from: Data(contentsOf: Harness.repository.appendingPathComponent("products.json")))
        #expect(throws: Never.self) { try catalog.validate() }
        catalog.tenants[0].allowedOrigins = ["*"]
        #expect(throws: CatalogError.self) { try catalog.validate() }
    }
}

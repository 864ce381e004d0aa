import BerthApp
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import UseCases

@testable import HTTPAPI

/// Who may call what, checked against the route table itself: every route the router holds must
/// have been registered through a guarded group, and every kind of caller gets in exactly where
/// that group says, no further.
@Suite("Access: roles per route, generated from the route table")
struct AccessTests {
    /// A caller of one kind, for a route's tenant.
    struct Credentials {
        var auth: String?
        var user: String?
    }

    @Test("every route is in the access table; each kind of caller is admitted exactly where the table says")
    func matrix() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let router = buildRouter(services: harness.services)
        let table = harness.services.routeAccess
        let routes = router.routes.map { (method: $0.method.rawValue, path: $0.path.description) }
        #expect(routes.count > 60)
        for route in routes {
            let entry = table.entry(method: route.method, path: route.path)
            #expect(entry != nil, "\(route.method) \(route.path) was registered outside a guarded group")
            // Every key role a group admits holds the scope the group asks for.
            for role in APIKeyRole.allCases where entry?.admits.contains(Self.kind(role)) == true {
                if let scope = entry?.scope {
                    #expect(role.scopes.contains(scope), "\(route.method) \(route.path) admits \(role) keys, which never hold \(scope)")
                }
            }
        }
        // FT Chinese's prefixed routes belong to the tenant that lists the prefix.
        var prefixes: [(String, String)] = []
        for runtime in harness.services.tenants.tenants.values {
            for ftc in runtime.tenant.subscriptions?.ftcRoutes ?? [] { prefixes.append((ftc.prefix + "/", runtime.id)) }
        }

        // Keys of both the bookings tenant and FT Chinese's (whose prefixed routes take its keys).
        var keys: [String: [PrincipalKind: Credentials]] = [:]
        for tenant in Set(["seaboo-test"] + prefixes.map(\.1)) {
            keys[tenant] = [
                .anonymous: Credentials(),
                .clientKey: Credentials(auth: try await harness.apiKey(tenant, .client), user: "u1"),
                .serverKey: Credentials(auth: try await harness.apiKey(tenant, .server), user: "u1"),
                .adminKey: Credentials(auth: try await harness.apiKey(tenant, .admin)),
                // seaboo-test's issuer; for FT Chinese's routes a user token is a user token of another app.
                .userToken: Credentials(auth: try await harness.userToken("u1")),
            ]
        }
        let credentials = keys, ftcPrefixes = prefixes
        let checked = try await harness.app().test(.router) { client in
            var checked = 0
            for route in routes {
                guard let entry = table.entry(method: route.method, path: route.path), entry.admits != PublicAccess.admits else { continue }
                let tenant = ftcPrefixes.first { route.path.hasPrefix($0.0) }?.1 ?? "seaboo-test"
                let uri = Self.concrete(route.path, tenant: tenant)
                for kind in PrincipalKind.allCases {
                    guard let credentials = credentials[tenant]?[kind] else { continue }
                    let reply = try await client.call(
                        HTTPRequest.Method(route.method) ?? .get,
                        uri,
                        auth: credentials.auth,
                        user: credentials.user,
                        json: [:] as JSON
                    )
                    let refused = Self.refusedAccess(reply)
                    let admitted = entry.admits.contains(kind)
                    #expect(
                        refused == !admitted,
                        "\(route.method) \(route.path) with \(kind): \(reply.status) \(String(decoding: reply.data, as: UTF8.self).prefix(200))"
                    )
                    checked += 1
                }
            }
            return checked
        }
        #expect(checked > 250, "\(checked) route × caller pairs checked")
    }

    /// docs/access.md: every route with who may call it, rendered from the route table (a route
    /// added without updating it fails here; `BERTH_WRITE_ACCESS_TABLE=1` rewrites it).
    @Test("docs/access.md lists every route with the callers it admits, as the route table says")
    func accessDocument() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let router = buildRouter(services: harness.services)
        let table = harness.services.routeAccess
        let kinds: [PrincipalKind] = [.clientKey, .userToken, .serverKey, .adminKey]
        var lines = [
            "# Who may call what",
            "",
            "Generated from Berth's route table by `AccessTests` (`BERTH_WRITE_ACCESS_TABLE=1 swift test --filter AccessTests` rewrites it;",
            "the test fails while it differs). ✔ admitted; — refused with 401/403 before the handler runs. \"user\": keys must name the",
            "user in `X-User-Id` (a user token is its subject). FT Chinese's routes are listed once, under `{prefix}`.",
            "",
            "| method | path | client key | user token | server key | admin key | user | key scope |",
            "|---|---|---|---|---|---|---|---|",
        ]
        var prefixes: [String] = []
        for runtime in harness.services.tenants.tenants.values {
            for ftc in runtime.tenant.subscriptions?.ftcRoutes ?? [] { prefixes.append(ftc.prefix) }
        }
        var seen = Set<String>()
        for route in router.routes.map({ (method: $0.method.rawValue, path: $0.path.description) }) {
            let entry = try #require(table.entry(method: route.method, path: route.path))
            var path = route.path
            if let prefix = prefixes.first(where: { path.hasPrefix($0 + "/") }) { path = "{prefix}" + path.dropFirst(prefix.count) }
            let row =
                "| \(route.method) | `\(path)` | "
                + kinds.map { entry.admits.contains($0) ? "✔" : (entry.admits == PublicAccess.admits ? "✔" : "—") }
                .joined(separator: " | ")
                + " | \(entry.admits == PublicAccess.admits ? "public" : entry.namesUser ? "user" : "") | \(entry.scope?.rawValue ?? "")"
                + (entry.note.map { " (\($0))" } ?? "") + " |"
            if seen.insert(row).inserted { lines.append(row) }
        }
        let header = lines.prefix(8),
            rows = lines.dropFirst(8).sorted { $0.split(separator: "|")[1...2].joined() < $1.split(separator: "|")[1...2].joined() }
        let text = (header + rows).joined(separator: "\n") + "\n"
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/access.md")
        if ProcessInfo.processInfo.environment["BERTH_WRITE_ACCESS_TABLE"] == "1" { try Data(text.utf8).write(to: url) }
        let document = try String(contentsOf: url, encoding: .utf8)
        #expect(document == text, "docs/access.md is not the route table's; rerun with BERTH_WRITE_ACCESS_TABLE=1")
    }

    @Test("a client key: proofs and the named user's reads, never value without proof, never another app")
    func clientKey() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let client = try await harness.apiKey("seaboo-test", .client)
        let other = try await harness.apiKey("seaboo", .client)
        try await harness.app().test(.router) { http in
            // Reads of the named user.
            #expect(try await http.call(.get, "/api/bookings", auth: client, user: "ana").status == .ok)
            #expect(try await http.call(.get, "/api/resources", auth: client).status == .ok)
            // Moving value without a store's proof.
            #expect(try await http.call(.post, "/api/credits/reservations", auth: client, user: "ana", json: ["amount": 1]).status == .forbidden)
            #expect(
                try await http.call(.post, "/api/bookings", auth: client, user: "ana", json: ["resourceId": "gozzo-5m"]).status == .forbidden,
                "bookings need the tenant's clientKeys.createBookings"
            )
            let link = try await http.call(
                .post,
                "/api/subscriptions/link",
                auth: client,
                user: "ana",
                json: ["originalTransactionId": "2000000000000001"]
            )
            #expect(link.status == .forbidden && link.errorCode == "proof_required", "\(link.json)")
            #expect(
                try await http.call(
                    .put,
                    "/api/admin/memberships/ana",
                    auth: client,
                    json: ["payMethod": "stripe", "expiresAt": "2099-01-01T00:00:00Z"]
                )
                .status == .forbidden
            )
            #expect(try await http.call(.get, "/api/admin/bookings", auth: client).status == .forbidden)
            // A purchase proven by the store goes through, for the named user.
            let day = Calendar(identifier: .gregorian).startOfDay(for: harness.clock.now().addingTimeInterval(9 * 86_400))
            let start = ISO8601DateFormatter().string(from: day.addingTimeInterval(8 * 3600)),
                end = ISO8601DateFormatter().string(from: day.addingTimeInterval(18 * 3600))
            let booking = try await http.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "ana",
                json: ["resourceId": "gozzo-5m", "start": .string(start), "end": .string(end)]
            )
            #expect(booking.status == .created, "\(booking.json)")
            let id = try #require(
                booking.json["booking"]["id"].int64
                    ?? booking.json["booking"]["id"].int64
            )
            let jws = try harness.purchase("it.seaboo.rental.basic")
            let paid = try await http.call(
                .post,
                "/api/verify-purchase",
                auth: client,
                user: "ana",
                json: ["bookingId": .int(id), "productId": "it.seaboo.rental.basic", "jwsRepresentation": .string(jws)]
            )
            #expect(paid.status == .ok, "\(paid.json)")
            // Another app's client key reads nothing of this app.
            #expect(try await http.call(.get, "/api/bookings/\(id)", auth: other, user: "ana").status == .notFound)
            // Keys travel in a validator URL only if they are client keys.
            let viaURL = try await http.call(.post, "/api/validator/seaboo-test?key=\(harness.serverKey)", auth: nil, json: ["id": "x"])
            #expect(viaURL.status == .ok && viaURL.json["ok"].bool == false && viaURL.json["status"].int == 403, "\(viaURL.json)")
        }
    }

    @Test("a user's token speaks only for its subject: the validator's applicationUsername and verify-receipt's userId must be that user")
    func tokenSubject() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let token = try await harness.userToken("mia")
        try await harness.app().test(.router) { http in
            let jws = try harness.purchase("it.seaboo.rental.basic")
            let body: JSON = [
                "id": "it.seaboo.app", "type": "application",
                "transaction": ["type": .string("apple-sk2"), "id": .string("it.seaboo.rental.basic"), "jwsRepresentation": .string(jws)],
                "additionalData": ["applicationUsername": "somebody-else"],
            ]
            let validator = try await http.call(.post, "/api/validator/seaboo-test", auth: token, json: body)
            #expect(validator.json["ok"].bool == false && validator.json["status"].int == 403, "\(validator.json)")
            #expect(try await harness.count("purchases") == 0, "nothing was applied to the named user")
            let receipt = try await http.call(.post, "/api/verify-receipt", auth: token, json: ["receiptData": "MIIT", "userId": "somebody-else"])
            #expect(receipt.status == .forbidden && receipt.json["success"].bool == false, "\(receipt.json)")
        }
    }

    @Test("a key narrowed to some scopes is refused the others (insufficient_scope)")
    func scopes() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let issued = try await CreateAPIKey(store: harness.database)(
            tenantId: "seaboo-test",
            role: .server,
            scopes: [.read],
            now: harness.clock.now()
        )
        try await harness.app().test(.router) { http in
            #expect(try await http.call(.get, "/api/bookings", auth: issued.secret, user: "ana").status == .ok)
            let refused = try await http.call(
                .post,
                "/api/verify-purchase",
                auth: issued.secret,
                user: "ana",
                json: ["productId": "x", "transactionId": "1"]
            )
            #expect(refused.status == .forbidden && refused.errorCode == "insufficient_scope", "\(refused.json)")
        }
        await #expect(throws: DomainError.self) {
            _ = try await CreateAPIKey(store: harness.database)(tenantId: "seaboo-test", role: .client, scopes: [.credits], now: harness.clock.now())
        }
    }

    @Test("revoked keys stop working, rotated keys overlap until the old one expires, and both show in the admin listing")
    func lifecycle() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { http in
            let created = try await http.call(.post, "/api/admin/keys", auth: harness.adminKey, json: ["role": "client", "name": "iOS app"])
            #expect(created.status == .created, "\(created.json)")
            let secret = try #require(created.json["secret"].string)
            let id = try #require(created.json["key"]["id"].int)
            #expect(try await http.call(.get, "/api/bookings", auth: secret, user: "ana").status == .ok)

            // Rotation: both work until the old one's expiry.
            let rotated = try await http.call(.post, "/api/admin/keys/\(id)/rotate", auth: harness.adminKey, json: ["overlapSeconds": 3600])
            #expect(rotated.status == .created, "\(rotated.json)")
            let newSecret = try #require(rotated.json["secret"].string)
            #expect(rotated.json["previous"]["status"].string == "expiring")
            #expect(try await http.call(.get, "/api/bookings", auth: secret, user: "ana").status == .ok)
            #expect(try await http.call(.get, "/api/bookings", auth: newSecret, user: "ana").status == .ok)
            // An hour later (the resolver's cache runs on the same clock: nothing waits).
            harness.clock.advance(3601)
            #expect(try await http.call(.get, "/api/bookings", auth: secret, user: "ana").status == .unauthorized, "the old key expired")
            #expect(try await http.call(.get, "/api/bookings", auth: newSecret, user: "ana").status == .ok)

            // Revocation reaches this instance within the resolver's refresh interval.
            let newId = try #require(rotated.json["key"]["id"].int)
            #expect(try await http.call(.post, "/api/admin/keys/\(newId)/revoke", auth: harness.adminKey).status == .ok)
            harness.clock.advance(3)
            #expect(try await http.call(.get, "/api/bookings", auth: newSecret, user: "ana").status == .unauthorized)

            let listing = try await http.call(.get, "/api/admin/keys", auth: harness.adminKey)
            let keys = try #require(listing.json["keys"].array)
            let statuses = Dictionary(
                uniqueKeysWithValues: keys.compactMap { key in (key["id"].int).map { ($0, key["status"].string ?? "") } }
            )
            #expect(statuses[id] == "expired" && statuses[newId] == "revoked", "\(statuses)")
            #expect(keys.allSatisfy { ($0["hint"].string)?.count ?? 99 < 40 }, "listings never show a usable key")
            #expect(keys.first { $0["id"].int == id }?["lastUsedAt"].isNull == false, "last use is recorded")
            // Bad requests are 4xx naming the field; a key that no longer works cannot be rotated.
            for (body, field) in [
                (["role": "root"], "role"), (["role": "client", "scopes": ["credits"]], "scopes"),
                (["role": "server", "scopes": ["everything"]], "scopes"), (["role": "client", "scopes": []], "scopes"),
                (["role": "client", "name": .string(String(repeating: "n", count: 101))], "name"),
            ] as [(JSON, String)] {
                let refused = try await http.call(.post, "/api/admin/keys", auth: harness.adminKey, json: body)
                #expect(refused.status == .badRequest && refused.errorField == field, "\(body): \(refused.json)")
            }
            let tooLong = try await http.call(
                .post,
                "/api/admin/keys/\(id)/rotate",
                auth: harness.adminKey,
                json: ["overlapSeconds": .int(91 * 86_400)]
            )
            #expect(tooLong.status == .badRequest && tooLong.errorField == "overlapSeconds", "\(tooLong.json)")
            let dead = try await http.call(.post, "/api/admin/keys/\(newId)/rotate", auth: harness.adminKey)
            #expect(dead.status == .conflict && dead.errorCode == "invalid_transition", "\(dead.json)")
            let again = try await http.call(.post, "/api/admin/keys/\(newId)/revoke", auth: harness.adminKey)
            #expect(
                again.status == .ok && again.json["key"]["status"].string == "revoked",
                "revoking twice answers the key as it is"
            )
            #expect(try await http.call(.post, "/api/admin/keys/abc/revoke", auth: harness.adminKey).errorCode == "key_not_found")
            // Another app's admin cannot see or revoke this app's keys.
            #expect(try await http.call(.post, "/api/admin/keys/\(id)/revoke", auth: harness.otherAdminKey).status == .notFound)
        }
    }

    static func kind(_ role: APIKeyRole) -> PrincipalKind {
        switch role {
        case .client: .clientKey
        case .server: .serverKey
        case .admin: .adminKey
        }
    }

    /// The route's pattern with its parameters filled in.
    static func concrete(_ path: String, tenant: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            switch segment {
            case "{tenant}": tenant
            case "{userId}": "u1"
            case "{productId}": "com.example.none"
            default: segment.hasPrefix("{") ? "1" : String(segment)
            }
        }.joined(separator: "/")
    }

    /// Whether the answer is a refusal of the caller's credentials (not of the request): 401, or a
    /// 403 `forbidden`/`insufficient_scope`, in whichever shape the route's clients read.
    static func refusedAccess(_ reply: Reply) -> Bool {
        if reply.status == .unauthorized { return true }
        let json = reply.json
        if let ok = json["ok"].bool, !ok, let status = json["status"].int {  // the cordova validator: always HTTP 200
            return status == 401
                || (status == 403
                    && (json["error"]["code"].string).map { ["forbidden", "insufficient_scope"].contains($0) } == true)
        }
        guard reply.status == .forbidden else { return false }
        let code = json["error"]["code"].string
        // FT Chinese's shape has no code on 403: every 403 there is about the credentials.
        return code == nil || code == "forbidden" || code == "insufficient_scope"
    }
}

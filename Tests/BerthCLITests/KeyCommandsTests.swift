import Foundation
import Testing

/// `berth keys create|list|rotate|revoke` against a running `berth serve`: the commands are other
/// processes writing the same database, as an operator's shell or another instance would.
@Suite("berth keys against a running server")
struct KeyCommandsTests {
    @Test("create, list, rotate (both keys work until the old one expires), revoke (refused within 5 s on the running server)")
    func lifecycle() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        try await server.start()
        defer { server.stop() }

        let created = try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", "client", "--name", "iOS app"])
        try #require(created.status == 0, "\(created.stderr)")
        let key = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.hasPrefix("berth_seaboo-test_"))
        let wrongRole = try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", "client", "--scope", "credits"])
        #expect(wrongRole.status != 0 && wrongRole.stderr.contains("cannot hold credits"), "\(wrongRole.stderr)")

        func status(_ key: String) async throws -> Int {
            try await server.request("GET", "/api/bookings", headers: ["Authorization": "Bearer \(key)", "X-User-Id": "ana"]).status
        }
        #expect(try await status(key) == 200)
        #expect(
            try await server.request(
                "POST",
                "/api/credits/reservations",
                headers: ["Authorization": "Bearer \(key)", "X-User-Id": "ana"],
                body: ["amount": 1]
            ).status == 403,
            "a client key moves no value without proof"
        )

        let listed = try await server.berth(["keys", "list", "--tenant", "seaboo-test", "--json"])
        try #require(listed.status == 0, "\(listed.stderr)")
        let entries = try listed.stdout.split(separator: "\n").map { try jsonObject(String($0)) }
        let entry = try #require(entries.first { $0["name"] as? String == "iOS app" })
        let id = try #require(entry["id"] as? Int)
        #expect(entry["role"] as? String == "client" && entry["status"] as? String == "active")
        #expect(!listed.stdout.contains(key), "a listing never shows a key")

        let rotated = try await server.berth(["keys", "rotate", String(id), "--overlap", "1h"])
        try #require(rotated.status == 0, "\(rotated.stderr)")
        let successor = rotated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(successor != key && successor.hasPrefix("berth_seaboo-test_"))
        #expect(try await status(successor) == 200)
        #expect(try await status(key) == 200, "the old key works until the overlap ends")

        let newId = try #require(
            try await server.berth(["keys", "list", "--tenant", "seaboo-test", "--json"]).stdout.split(separator: "\n")
                .map { try jsonObject(String($0)) }.first { $0["rotatedFrom"] as? Int == id }?["id"] as? Int
        )
        let revoked = try await server.berth(["keys", "revoke", String(newId)])
        try #require(revoked.status == 0, "\(revoked.stderr)")
        // A request sent at time t that is still accepted proves the key was live at some moment
        // after t; so revocation is late only if a request sent more than 5 s after the revoke was
        // accepted. (Timing the first refusal instead would charge a loaded machine's slow answers
        // to propagation.)
        let start = ContinuousClock.now
        var lastAccepted: Duration?
        var refused = false
        while !refused, ContinuousClock.now - start < .seconds(15) {
            let sent = ContinuousClock.now - start
            let code = try await status(successor)
            if code == 401 { refused = true } else if code == 200 { lastAccepted = sent }
            if !refused { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(refused, "the revoked key is refused")
        #expect(try await status(successor) == 401)
        #expect((lastAccepted ?? .zero) <= .seconds(5), "a request sent \(lastAccepted ?? .zero) after the revoke was still accepted")

        let after = try await server.berth(["keys", "list", "--tenant", "seaboo-test", "--json"]).stdout.split(separator: "\n").map {
            try jsonObject(String($0))
        }
        let byId = Dictionary(uniqueKeysWithValues: after.compactMap { entry in (entry["id"] as? Int).map { ($0, entry) } })
        #expect(byId[id]?["status"] as? String == "expiring" && byId[id]?["expiresAt"] != nil)
        #expect(byId[newId]?["status"] as? String == "revoked")
        #expect(byId[id]?["lastUsedAt"] != nil, "the server recorded the old key's use")
        #expect(try await server.berth(["keys", "revoke", "12345"]).status != 0, "an unknown id is an error")
    }
}

import Foundation
import Logging
import SQLStore
import StoreTesting
import Testing

/// Two `berth serve` processes on one PostgreSQL database act as one service. Runs when the test
/// command started a PostgreSQL (`BERTH_TEST_POSTGRES_URL`, see scripts/test).
@Suite(
    "two instances on one PostgreSQL",
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["BERTH_TEST_POSTGRES_URL"] != nil,
        "BERTH_TEST_POSTGRES_URL is not set: SKIPPED (run scripts/test)"
    )
)
struct MultiInstanceTests {
    /// Two instances sharing a folder (catalog, test CA) and a new database, with a server and an admin key of `tenant`.
    struct Pair {
        var a: ServerProcess
        var b: ServerProcess
        var key: String
        var admin: String
        /// The database URL both instances share.
        var database: String
        var instances: [ServerProcess] { [a, b] }
    }

    static func withPair(tenant: String, _ body: (Pair) async throws -> Void) async throws {
        let server = try PostgresSettings(url: try #require(ProcessInfo.processInfo.environment["BERTH_TEST_POSTGRES_URL"]), environment: [:])
        let logger = Logger(label: "berth.test")
        let name = "berth_pair_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await PostgresStore.createDatabase(name, settings: server, logger: logger)
        let url = "postgres://\(server.username)@\(server.host):\(server.port)/\(name)?sslmode=disable&pool_size=8"
        let a = try await ServerProcess()
        let b = ServerProcess(sharing: a, name: "second")
        defer {
            b.cleanUp()
            a.cleanUp()
        }
        let key = try await a.berth(["keys", "create", "--tenant", tenant, "--role", "server", "--database", url]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        let admin = try await a.berth(["keys", "create", "--tenant", tenant, "--role", "admin", "--database", url]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        try #require(key.hasPrefix("berth_") && admin.hasPrefix("berth_"), "keys create failed")
        // Both start at once: the migration lock lets one migrate while the other waits.
        async let startA: Void = a.start(environment: ["BERTH_DATABASE": url])
        async let startB: Void = b.start(environment: ["BERTH_DATABASE": url])
        _ = try await (startA, startB)
        do {
            try await body(Pair(a: a, b: b, key: key, admin: admin, database: url))
        } catch {
            b.cleanUp()
            a.cleanUp()
            try? await PostgresStore.dropDatabase(name, settings: server, logger: logger)
            throw error
        }
        b.cleanUp()
        a.cleanUp()
        try await PostgresStore.dropDatabase(name, settings: server, logger: logger)
    }

    @Test("one transaction claimed on both instances at once makes one purchase: its buyer gets 200 each time, other users 409")
    func oneTransactionTwoInstances() async throws {
        try await Self.withPair(tenant: "seaboo-test") { pair in
            let start = Date(timeIntervalSince1970: ((Date().timeIntervalSince1970 / 86_400).rounded(.down) + 3) * 86_400 + 9 * 3600)
            let created = try await pair.a.request(
                "POST",
                "/api/bookings",
                headers: ["Authorization": "Bearer \(pair.key)", "X-User-Id": "buyer"],
                body: ["resourceId": "gozzo-5m", "start": start.formatted(.iso8601), "end": start.addingTimeInterval(3600).formatted(.iso8601)]
            )
            try #require(created.status == 201, "\(String(decoding: created.data, as: UTF8.self))")
            let booking = try #require((created.json["booking"] as? [String: Any])?["id"] as? Int)
            let jws = try await pair.a.berth([
                "testkit", "sign-transaction", "--ca", "berth-ca", "--bundle-id", "it.seaboo.app", "--product", "it.seaboo.rental.basic",
            ])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let body = try JSONSerialization.data(withJSONObject: [
                "bookingId": booking, "productId": "it.seaboo.rental.basic", "jwsRepresentation": jws,
            ])

            // 16 calls, alternating instances: 8 by the buyer, 8 by other users replaying the same transaction.
            let statuses = try await withThrowingTaskGroup(of: (String, Int).self) { group in
                for index in 0..<16 {
                    let instance = pair.instances[index % 2]
                    let user = index % 4 < 2 ? "buyer" : "thief\(index)"
                    group.addTask {
                        let reply = try await instance.request(
                            "POST",
                            "/api/verify-purchase",
                            headers: ["Authorization": "Bearer \(pair.key)", "X-User-Id": user],
                            data: body
                        )
                        return (user, reply.status)
                    }
                }
                var statuses: [(String, Int)] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            let buyer = statuses.filter { $0.0 == "buyer" }.map(\.1)
            let thieves = statuses.filter { $0.0 != "buyer" }.map(\.1)
            #expect(buyer == Array(repeating: 200, count: 8), "the buyer's answers: \(buyer)")
            #expect(thieves.allSatisfy { $0 == 409 || $0 == 404 }, "other users' answers: \(thieves)")

            for instance in pair.instances {
                let purchases = try await instance.request("GET", "/api/admin/purchases", headers: ["Authorization": "Bearer \(pair.admin)"])
                #expect(purchases.json["total"] as? Int == 1, "purchases seen by \(instance.name): \(purchases.json["total"] ?? "none")")
            }
            let replays = try await pair.b.request("GET", "/api/admin/replays?limit=200", headers: ["Authorization": "Bearer \(pair.admin)"])
            #expect(replays.json["total"] as? Int == thieves.filter { $0 == 409 }.count)
        }
    }

    @Test(
        "inventory as data on two instances: a boat added through one is on sale on the other without a restart, retired through the other it is off sale on the first; berth inventory import --dry-run shows the change and writes nothing; a day closed through one is refused by the other at once, reopened through the other it is admitted by the first"
    )
    func inventoryTwoInstances() async throws {
        try await Self.withPair(tenant: "seaboo-test") { pair in
            let admin = ["Authorization": "Bearer \(pair.admin)"], server = ["Authorization": "Bearer \(pair.key)"]
            /// Whether `instance` lists the boat for sale, asked until it does (`want`) or 600 times: the other
            /// process reads the inventory on its own clock, so its answer is the event awaited (returns at once when seen).
            func onSale(_ instance: ServerProcess, _ want: Bool) async throws -> (Bool, Int) {
                for attempt in 1...600 {
                    let listed = try await instance.request("GET", "/api/resources", headers: server)
                    let has = (listed.json["resources"] as? [[String: Any]] ?? []).contains { $0["id"] as? String == "rib-9m" }
                    if has == want { return (has, attempt) }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return (!want, 600)
            }
            #expect(try await onSale(pair.b, false).0 == false)
            let added = try await pair.a.request(
                "POST",
                "/api/admin/resources",
                headers: admin,
                body: ["id": "rib-9m", "kind": "rental", "name": "RIB 9 m", "pricePerDayMinor": 12_000]
            )
            try #require(added.status == 201, "\(String(decoding: added.data, as: UTF8.self))")
            let (seen, asked) = try await onSale(pair.b, true)
            #expect(seen, "the other instance sells the new boat (after \(asked) reads, 50 ms apart)")
            let retired = try await pair.b.request("POST", "/api/admin/resources/rib-9m/retire", headers: admin)
            #expect(retired.status == 200)
            #expect(try await onSale(pair.a, false).0 == false, "retired through the other instance: off sale here too")

            // Inventory as code: the export, a change, its dry run (nothing written), then the import.
            let database = pair.database
            let exported = try await pair.a.berth(["inventory", "export", "--tenant", "seaboo-test", "--database", database])
            try #require(exported.status == 0, "\(exported.stderr)")
            var file = try #require(try JSONSerialization.jsonObject(with: Data(exported.stdout.utf8)) as? [String: Any])
            var tenants = try #require(file["tenants"] as? [[String: Any]])
            var resources = try #require(tenants.first?["resources"] as? [[String: Any]])
            let index = try #require(resources.firstIndex { $0["id"] as? String == "rib-9m" })
            #expect(resources[index]["retired"] as? Bool == true)
            resources[index]["retired"] = nil
            resources[index]["pricePerDayMinor"] = 14_000
            tenants[0]["resources"] = resources
            file["tenants"] = tenants
            let path = pair.a.directory.appendingPathComponent("inventory.json")
            try JSONSerialization.data(withJSONObject: file).write(to: path)
            let dry = try await pair.a.berth(["inventory", "import", path.path, "--dry-run", "--database", database])
            #expect(
                dry.status == 0 && dry.stdout.contains("~ seaboo-test rib-9m: pricePerDayMinor 12000 → 14000, retired 1 → –"),
                "\(dry.stdout) \(dry.stderr)"
            )
            #expect(dry.stdout.contains("not written"), "\(dry.stdout)")
            #expect(try await onSale(pair.a, false).0 == false, "a dry run writes nothing")
            let done = try await pair.a.berth(["inventory", "import", path.path, "--database", database])
            #expect(done.status == 0 && done.stdout.contains("1 change(s) written"), "\(done.stdout) \(done.stderr)")
            #expect(try await onSale(pair.b, true).0, "the running instances see the import")

            // A storm closes a day through one instance: the other refuses a booking inside at once
            // (closures are read in the admission's own unit of work), and admits it again once reopened.
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "Europe/Rome") ?? .current
            let parts = calendar.dateComponents([.year, .month, .day], from: Date().addingTimeInterval(9 * 86_400))
            let day = String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
            let closed = try await pair.a.request("POST", "/api/admin/closures", headers: admin, body: ["from": day, "to": day, "reason": "storm"])
            try #require(closed.status == 201, "\(String(decoding: closed.data, as: UTF8.self))")
            let booking: [String: Any] = ["resourceId": "sunset-cruise", "slot": "\(day)T17:30", "seats": 1]
            let refused = try await pair.b.request("POST", "/api/bookings", headers: server.merging(["X-User-Id": "lena"]) { $1 }, body: booking)
            #expect(refused.status == 409 && (refused.json["error"] as? [String: Any])?["code"] as? String == "resource_closed", "\(refused.json)")
            let closureId = try #require(closed.json["id"] as? Int)
            #expect(try await pair.b.request("DELETE", "/api/admin/closures/\(closureId)", headers: admin).status == 204)
            let admitted = try await pair.a.request("POST", "/api/bookings", headers: server.merging(["X-User-Id": "lena"]) { $1 }, body: booking)
            #expect(admitted.status == 201, "reopened through the other instance: \(admitted.json)")
        }
    }

    @Test("20 reservations of 1 credit split over two instances against a balance of 5 hold exactly 5")
    func reservationsTwoInstances() async throws {
        try await Self.withPair(tenant: "aistylist-test") { pair in
            let user = ["Authorization": "Bearer \(pair.key)", "X-User-Id": "painter"]
            // The first call grants the signup bonus; an adjustment brings the balance to exactly 5.
            let before = try await pair.a.request("GET", "/api/credits", headers: user)
            try #require(before.status == 200, "\(String(decoding: before.data, as: UTF8.self))")
            let balance = try #require(((before.json["credits"] as? [[String: Any]])?.first?["balance"] as? Int) ?? 0 as Int?)
            if balance != 5 {
                let adjusted = try await pair.b.request(
                    "POST",
                    "/api/admin/credits/adjustments",
                    headers: ["Authorization": "Bearer \(pair.admin)"],
                    body: ["userId": "painter", "amount": 5 - balance, "reason": "test balance"]
                )
                try #require(adjusted.status == 201 || adjusted.status == 200, "\(String(decoding: adjusted.data, as: UTF8.self))")
            }

            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<20 {
                    let instance = pair.instances[index % 2]
                    group.addTask {
                        try await instance.request(
                            "POST",
                            "/api/credits/reservations",
                            headers: user,
                            body: ["amount": 1, "reference": "job-\(index)"]
                        ).status
                    }
                }
                var statuses: [Int] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses.filter { $0 == 201 }.count == 5, "answers: \(statuses.sorted())")
            #expect(statuses.filter { $0 != 201 }.allSatisfy { (400..<500).contains($0) }, "refusals are 4xx: \(statuses.sorted())")
            let after = try await pair.b.request("GET", "/api/credits", headers: user)
            let account = try #require((after.json["credits"] as? [[String: Any]])?.first)
            #expect(account["balance"] as? Int == 5)
            #expect(account["held"] as? Int == 5)
            let check = try await pair.a.request("GET", "/api/admin/credits/check", headers: ["Authorization": "Bearer \(pair.admin)"])
            #expect(check.status == 200, "\(String(decoding: check.data, as: UTF8.self))")
        }
    }
}

/// An instance whose PostgreSQL goes away: readiness fails, requests get 503 with Retry-After
/// (never a 500, nothing half-written), and both recover when the database is back. Uses a
/// PostgreSQL server of its own (scripts/postgres-temp), so that stopping it disturbs no other test.
@Suite(
    "an instance whose database goes away",
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["BERTH_TEST_POSTGRES_URL"] != nil,
        "BERTH_TEST_POSTGRES_URL is not set: SKIPPED (run scripts/test)"
    )
)
struct DatabaseOutageTests {
    static func script(_ arguments: [String]) throws -> String {
        // system(3), which waits for the script itself: the server it starts lives on with inherited
        // descriptors, and Foundation's Process did not see the script end while it did.
        let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("postgres-temp-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: outputFile) }
        let script = ServerProcess.repository.appendingPathComponent("scripts/postgres-temp").path
        let command = ([script] + arguments).map { "'\($0)'" }.joined(separator: " ") + " > '\(outputFile.path)' < /dev/null"
        let status = system(command)
        try #require(status == 0, "postgres-temp \(arguments.first ?? "") failed (\(status))")
        return try String(contentsOf: outputFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("readiness 503 and requests 503 + Retry-After while PostgreSQL is down; both recover when it is back")
    func outage() async throws {
        let pg = FileManager.default.temporaryDirectory.appendingPathComponent("berth-outage-\(UUID().uuidString)")
        let url = try Self.script(["start", pg.path])
        defer { _ = try? Self.script(["stop", pg.path]) }
        let database = url + "&acquire_timeout=1&attempts=2"
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let key = try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", "server", "--database", database]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try await server.start(environment: ["BERTH_DATABASE": database])
        let headers = ["Authorization": "Bearer \(key)", "X-User-Id": "sailor"]
        let start = Date(timeIntervalSince1970: ((Date().timeIntervalSince1970 / 86_400).rounded(.down) + 4) * 86_400 + 10 * 3600)
        let booking: [String: Any] = [
            "resourceId": "gozzo-5m", "start": start.formatted(.iso8601), "end": start.addingTimeInterval(3600).formatted(.iso8601),
        ]
        #expect(try await server.request("GET", "/readyz", headers: [:]).status == 200)

        _ = try Self.script(["pause", pg.path])
        let notReady = try await server.request("GET", "/readyz", headers: [:])
        #expect(notReady.status == 503)
        #expect(notReady.json["database"] as? String == "unreachable")
        let refused = try await server.request("POST", "/api/bookings", headers: headers, body: booking)
        #expect(refused.status == 503, "\(String(decoding: refused.data, as: UTF8.self))")
        #expect((refused.json["error"] as? [String: Any])?["code"] as? String == "temporarily_unavailable")
        #expect(refused.headers["retry-after"] == "1")
        #expect(notReady.headers["retry-after"] == "1")
        #expect(try await server.request("GET", "/healthz", headers: [:]).status == 200, "the process itself stays alive")

        _ = try Self.script(["resume", pg.path])
        var ready = 0
        _ = try await eventually(every: .milliseconds(200)) {
            ready = try await server.request("GET", "/readyz", headers: [:]).status
            return ready == 200
        }
        #expect(ready == 200, "ready again once the database is back")
        let created = try await server.request("POST", "/api/bookings", headers: headers, body: booking)
        #expect(created.status == 201, "\(String(decoding: created.data, as: UTF8.self))")
        let mine = try await server.request("GET", "/api/bookings", headers: headers)
        #expect(mine.json["total"] as? Int == 1, "the refused request wrote nothing, the later one wrote one booking")
    }
}

import Foundation
import Testing

/// The SQLite file as operators handle it: stopped and copied, backed up while serving, restored,
/// and a file that is not Berth's refused rather than taken for a new database.
@Suite("The SQLite file: stop, copy, back up, restore")
struct StoreLifecycleTests {
    /// Rows of `table` in the SQLite file at `path`, read by Python's sqlite3 (another program, as an operator's tools are).
    /// Off the test pool (``OffPool``): a launch may wait for a descriptor-heavy test to end.
    static func rows(_ table: String, in path: String) async throws -> Int? {
        try await OffPool.run { try rowsBlocking(table, in: path) }
    }

    private static func rowsBlocking(_ table: String, in path: String) throws -> Int? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM ' + sys.argv[2]).fetchone()[0])",
            path, table,
        ]
        let output = Pipe.forChild()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.runAlone()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test(
        "SIGTERM with the card, Play and webhook workers configured (their services unreachable) leaves one self-contained berth.sqlite: copied alone, it holds every row"
    )
    func stopLeavesSelfContainedFile() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        // Every background worker runs, each against a service that does not answer.
        try await server.start(environment: [
            "SEABOO_TEST_STRIPE_SECRET_KEY": "sk_test_lifecycle", "SEABOO_TEST_STRIPE_WEBHOOK_SECRET": "whsec_lifecycle_0123456789",
            "SEABOO_TEST_STRIPE_API_BASE": "http://127.0.0.1:9",
        ])
        for role in ["client", "server", "admin"] {
            #expect(try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", role]).status == 0)
        }
        let key = try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", "server"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        let day = ISO8601DateFormatter().string(from: Date().addingTimeInterval(5 * 86_400)).prefix(10)
        let booked = try await server.request(
            "POST",
            "/api/bookings",
            headers: ["Authorization": "Bearer \(key)", "X-User-Id": "ana"],
            body: ["resourceId": "gozzo-5m", "start": "\(day)T08:00:00Z", "end": "\(day)T18:00:00Z"]
        )
        #expect(booked.status == 201, "\(booked.json)")
        server.stop()

        let database = server.directory.appendingPathComponent("berth.sqlite").path
        let wal = (try? FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "every page is in the main file after a stop (WAL of \(wal) bytes)")
        let copyDirectory = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: copyDirectory) }
        let copy = copyDirectory.appendingPathComponent("berth.sqlite").path
        try FileManager.default.copyItem(atPath: database, toPath: copy)
        #expect(try await Self.rows("api_keys", in: copy) == 4, "the copy of the file alone holds the keys")
        #expect(try await Self.rows("bookings", in: copy) == 1, "and the booking")
    }

    @Test("berth backup copies the database while the service writes; the copy restores: same rows, and the service runs on it")
    func backupAndRestore() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        try await server.start()
        let key = try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", "server"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        // Writes keep coming while the backup runs.
        let writer = Task {
            for index in 0..<40 {
                _ = try? await server.request("GET", "/api/bookings", headers: ["Authorization": "Bearer \(key)", "X-User-Id": "user-\(index)"])
                _ = try? await server.berth(["keys", "create", "--tenant", "aistylist-test", "--role", "client"])
            }
        }
        let backup = server.directory.appendingPathComponent("backup.sqlite").path
        let made = try await server.berth(["backup", "--to", backup])
        #expect(made.status == 0 && made.stdout.contains("backed up"), "\(made.stdout) \(made.stderr)")
        await writer.value
        let again = try await server.berth(["backup", "--to", backup])
        #expect(again.status != 0 && again.stderr.contains("exists"), "a backup never overwrites: \(again.stderr)")
        // V11: readable by its owner only, whatever the umask (the test process runs with the usual 022).
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: backup)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600, "backup mode \(String(mode, radix: 8))")
        // A dangling symbolic link is refused, not followed; nothing is left beside it.
        let elsewhere = server.directory.appendingPathComponent("elsewhere.sqlite").path
        let link = server.directory.appendingPathComponent("link.sqlite").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: elsewhere)
        let linked = try await server.berth(["backup", "--to", link])
        #expect(linked.status != 0 && linked.stderr.contains("exists"), "\(linked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere), "the link's target was not written")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: server.directory.path).filter { $0.contains(".partial-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        #expect((try await Self.rows("schema_migrations", in: backup) ?? 0) > 10)
        let copied = try #require(try await Self.rows("api_keys", in: backup))
        #expect(copied >= 1 && copied <= 41, "a consistent moment of the writes: \(copied) keys")
        server.stop()

        // Restore: the copy in the database's place, without the old -wal and -shm files.
        let database = server.directory.appendingPathComponent("berth.sqlite").path
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
        try FileManager.default.copyItem(atPath: backup, toPath: database)
        try await server.start()
        #expect(
            try await server.request("GET", "/api/bookings", headers: ["Authorization": "Bearer \(key)", "X-User-Id": "ana"]).status == 200,
            "the key made before the backup works on the restored database"
        )
        server.stop()
        #expect(try await Self.rows("api_keys", in: database) == copied)
    }

    @Test(
        "a file that is there but holds no Berth schema (a copy without its -wal, another program's file) is refused, not migrated as a new database; BERTH_CREATE_DATABASE=1 allows it"
    )
    func foreignFileRefused() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let database = server.directory.appendingPathComponent("berth.sqlite").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 7'); c.commit()", database,
        ]
        try await OffPool.run {
            try process.runAlone()
            process.waitUntilExit()
        }
        #expect((try FileManager.default.attributesOfItem(atPath: database)[.size] as? Int ?? 0) > 0)
        let refused = try await server.berth(["migrate"])
        #expect(refused.status != 0 && refused.stderr.contains("holds no Berth schema"), "\(refused.stderr)")
        #expect(try await Self.rows("schema_migrations", in: database) == nil, "nothing was written into it")
        let allowed = try await server.berth(["migrate"], environment: ["BERTH_CREATE_DATABASE": "1"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
    }

    @Test("BERTH_WEBHOOK_PARALLEL outside 1 to 64 stops the start with the variable named; within it the server starts")
    func webhookParallelChecked() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        for bad in ["0", "65", "eight"] {
            let refused = try await server.berth(["serve", "--port", "0"], environment: ["BERTH_WEBHOOK_PARALLEL": bad])
            #expect(refused.status != 0 && refused.stderr.contains("BERTH_WEBHOOK_PARALLEL must be 1 to 64"), "\(bad): \(refused.stderr)")
        }
        try await server.start(environment: ["BERTH_WEBHOOK_PARALLEL": "2"])
        #expect(try await server.request("GET", "/healthz", headers: [:]).status == 200)
        server.stop()
    }
}

@Suite("A quiet first start")
struct QuietStartTests {
    @Test("the shipped catalog starts with one line naming what is off for want of a setting; BERTH_LOG_LEVEL=debug names each")
    func oneLine() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let log = server.directory.appendingPathComponent("serve.log")
        let quiet = ["SEABOO_JWT_SECRET": "", "SEABOO_TEST_JWT_SECRET": "", "SEABOO_STRIPE_SECRET_KEY": "", "BERTH_LOG_LEVEL": "info"]
        try await server.start(environment: quiet, errorLog: log)
        server.stop()
        let text = try String(contentsOf: log, encoding: .utf8)
        let warnings = text.split(separator: "\n").filter { $0.contains("warning") }
        #expect(warnings.count == 1, "\(warnings.joined(separator: "\n"))")
        #expect(warnings.first?.contains("off for want of a setting: ") == true && warnings.first?.contains("seaboo (3)") == true, "\(warnings)")
        #expect(warnings.first?.contains("expected with the shipped products.json") == true, "a newcomer is told this is expected: \(warnings)")
        try await server.start(environment: quiet.merging(["BERTH_LOG_LEVEL": "debug"]) { $1 }, errorLog: log)
        server.stop()
        let detailed = try String(contentsOf: log, encoding: .utf8)
        #expect(detailed.contains("tenant seaboo: SEABOO_JWT_SECRET is unset"), "each is named at debug level")
        #expect(
            detailed.contains("tenant aistylist: No App Store Server API key (apple.serverAPI): a consumable the app finishes without sending it"),
            "an app selling consumables without the key is told what Berth cannot recover"
        )
        #expect(!detailed.contains("tenant ftchinese: No App Store Server API key"), "subscriptions only: nothing of the kind to lose")
        #expect(detailed.contains("tenant seaboo-test: answers are signed with the test key written in the catalog"))
    }
}

@Suite("Stopping while the outside world does not answer")
struct BoundedShutdownTests {
    /// A TCP listener on 127.0.0.1 that accepts connections and never answers (Python, so that it
    /// shares nothing with the server under test); stopped by `stop()`.
    final class BlackHole: @unchecked Sendable {
        let process = Process()
        let output = Pipe.forChild()
        /// The hole lives until this pipe closes (`stop()`, or the test process gone), or ten minutes
        /// pass without a connection: a slow start of the server under test cannot outlast it.
        let input = Pipe.forChild()
        let port: Int

        init() throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", "-c",
                """
                import os, socket, sys, threading
                s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(256)
                print(s.getsockname()[1], flush=True)
                def orphaned():
                    sys.stdin.read()
                    os._exit(0)
                threading.Thread(target=orphaned, daemon=True).start()
                held = []
                s.settimeout(600)
                while True:
                    held.append(s.accept()[0])
                    print("accepted", flush=True)
                """,
            ]
            process.standardOutput = output
            process.standardInput = input
            try process.runAlone()
            var line = Data()
            while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) { line += byte }
            port = Int(String(decoding: line, as: UTF8.self)) ?? 0
        }

        /// Waits until `count` connections have reached the hole (an event, not a time: the hole
        /// reports each); false if it ended first (ten minutes without a new connection: a bound
        /// against a hang only).
        func waitForConnections(_ count: Int) throws -> Bool {
            var seen = 0
            var line = Data()
            while seen < count {
                guard let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty else { return false }
                if byte == Data("\n".utf8) {
                    if line == Data("accepted".utf8) { seen += 1 }
                    line = Data()
                } else {
                    line += byte
                }
            }
            return true
        }

        /// SIGKILL: the test runner may ignore SIGTERM (signal handling of the services it runs), and its
        /// children inherit that.
        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? input.fileHandleForWriting.close()
        }
    }

    @Test(
        "SIGTERM with Apple (history and consumption), Google Play, Stripe and webhook receivers black-holed: the process exits within 10 s, status 0"
    )
    func stopWithinTenSeconds() async throws {
        let hole = try BlackHole()
        defer { hole.stop() }
        try #require(hole.port > 0)
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let base = "http://127.0.0.1:\(hole.port)"
        // The App Store Server API (notification history read at start), a webhook receiver, Google Play and Stripe: all the black hole.
        let key = try await BerthProcess.run(["testkit", "play", "init", "play"], in: server.directory)
        try #require(key.status == 0, "\(key.stderr)")
        let p8 = Process()
        p8.executableURL = URL(fileURLWithPath: "/bin/sh")
        p8.arguments = ["-c", "openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt > apple.p8"]
        p8.currentDirectoryURL = server.directory
        try await OffPool.run {
            try p8.runAlone()
            p8.waitUntilExit()
        }
        let catalogURL = server.directory.appendingPathComponent("products.json")
        var catalog = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: catalogURL)) as? [String: Any])
        var tenants = try #require(catalog["tenants"] as? [[String: Any]])
        for index in tenants.indices where tenants[index]["id"] as? String == "aistylist-test" {
            var apple = tenants[index]["apple"] as? [String: Any] ?? [:]
            apple["serverAPI"] = ["issuerId": "issuer-1", "keyId": "KEY123", "privateKeyFile": "apple.p8", "productionURL": base, "sandboxURL": base]
            apple["notificationHistoryMinutes"] = 1
            tenants[index]["apple"] = apple
            tenants[index]["webhook"] = ["url": base + "/hooks", "secretEnv": "AIS_WEBHOOK_SECRET", "allowLoopbackHTTP": true]
        }
        catalog["tenants"] = tenants
        try JSONSerialization.data(withJSONObject: catalog).write(to: catalogURL)
        try await server.start(environment: [
            "AIS_WEBHOOK_SECRET": "webhook-secret-0123456789",
            "PLAY_TEST_SERVICE_ACCOUNT": server.directory.appendingPathComponent("play/service-account.json").path,
            "PLAY_TEST_BASE_URL": base, "SEABOO_TEST_STRIPE_SECRET_KEY": "sk_test_shutdown",
            "SEABOO_TEST_STRIPE_WEBHOOK_SECRET": "whsec_shutdown_0123456789", "SEABOO_TEST_STRIPE_API_BASE": base,
        ])
        // Work for the webhook deliverer: an operator's adjustment sends credits.changed to the black hole.
        let admin = try await server.berth(["keys", "create", "--tenant", "aistylist-test", "--role", "admin"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        let adjusted = try await server.request(
            "POST",
            "/api/admin/credits/adjustments",
            headers: ["Authorization": "Bearer \(admin)"],
            body: ["userId": "ana", "amount": 5, "reason": "goodwill"]
        )
        #expect(adjusted.status == 201 || adjusted.status == 200, "\(adjusted.json)")
        // Stop once Apple's history read, Google's token request and the webhook delivery are all waiting on the hole.
        #expect(try hole.waitForConnections(3), "the workers reach the black hole")
        let started = ContinuousClock.now
        let stopped = server.stopAndWait()
        let took = ContinuousClock.now - started
        #expect(stopped == 0, "exit status \(stopped)")
        #expect(took < .seconds(10), "stopping took \(took)")
    }
}

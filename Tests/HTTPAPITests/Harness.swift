import AppleSignedData
import AsyncHTTPClient
import BerthApp
import Domain
import Foundation
import GRDB
import HTTPAPI
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import OutboundHTTP
import SQLStore
import StoreTesting
import Synchronization
import TestKit
import Testing
import UseCases

/// RSA keys are slow to make in debug builds: one receipt CA serves every harness.
let sharedReceiptCA = Result { try TestReceiptCA.generate() }

/// A clock the tests move by hand.
final class TestClock: BerthClock {
    private let current: Mutex<Date>
    init(_ start: Date = Date(epochMilliseconds: Date().epochMilliseconds)) { current = Mutex(start) }
    func now() -> Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// The harnesses made and not closed yet, by folder, with the test that made each: a harness never
/// closed keeps its SQLite files open for the rest of the run (a few descriptors each; the run has a
/// budget, see ProcessLaunch). The process says which at exit.
let openHarnesses: Mutex<[String: String]> = {
    atexit {
        let left = openHarnesses.withLock { $0 }
        guard !left.isEmpty else { return }
        let names = Set(left.values).sorted().joined(separator: "; ")
        FileHandle.standardError.write(Data("Harness: \(left.count) harness(es) never closed (their SQLite files stayed open): \(names)\n".utf8))
    }
    return Mutex([:])
}()

/// The real catalog (products.json), a real SQLite file in a temporary folder, a TestKit CA trusted by
/// the `seaboo-test` tenant, and API keys for both tenants.
struct Harness {
    /// The outbound client the tests' applications share, made as `berth serve` makes its own
    /// (redirects refused); one for the test process, never shut down.
    static let outbound = OutboundClient.make()

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let jwtSecret = "test-secret-for-seaboo-test-tenant"
    static let webhookSecret = "webhook-secret-for-seaboo-test"

    let directory: URL
    let ca: TestCA
    let receiptCA: TestReceiptCA
    let clock: TestClock
    let database: SQLiteStore
    let services: BerthServices
    let serverKey: String
    let adminKey: String
    let otherServerKey: String
    let otherAdminKey: String

    /// - Parameter userPublicKeyPEM: switches the test tenant's user tokens to ES256 with this key.
    /// - Parameter appleStandIn: points the test tenant's App Store Server API at a local stand-in
    ///   (its port and the PEM of the API key it accepts).
    ///
    /// Waits for a place in ``OpenStoreBudget`` first (given back by ``close()``).
    static func make(
        holdMinutes: Int? = nil,
        userPublicKeyPEM: String? = nil,
        appleStandIn: (port: Int, keyPEM: String)? = nil,
        logger customLogger: Logger? = nil,
        webhookURL: String? = nil,
        otherWebhookURL: String? = nil,
        webhookTenants: [String] = ["seaboo-test"],
        customize: ((inout Catalog) -> Void)? = nil,
        environment extraEnvironment: [String: String] = [:],
        clock: TestClock = TestClock()
    ) async throws -> Harness {
        await OpenStoreBudget.shared.enter()
        do {
            return try await admitted(
                holdMinutes: holdMinutes,
                userPublicKeyPEM: userPublicKeyPEM,
                appleStandIn: appleStandIn,
                logger: customLogger,
                webhookURL: webhookURL,
                otherWebhookURL: otherWebhookURL,
                webhookTenants: webhookTenants,
                customize: customize,
                environment: extraEnvironment,
                clock: clock
            )
        } catch {
            OpenStoreBudget.shared.leave()
            throw error
        }
    }

    private static func admitted(
        holdMinutes: Int?,
        userPublicKeyPEM: String?,
        appleStandIn: (port: Int, keyPEM: String)?,
        logger customLogger: Logger?,
        webhookURL: String?,
        otherWebhookURL: String?,
        webhookTenants: [String],
        customize: ((inout Catalog) -> Void)?,
        environment extraEnvironment: [String: String],
        clock: TestClock
    ) async throws -> Harness {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var catalogText = try String(contentsOf: repository.appendingPathComponent("products.json"), encoding: .utf8)
        if let holdMinutes { catalogText = catalogText.replacingOccurrences(of: "\"holdMinutes\": 15", with: "\"holdMinutes\": \(holdMinutes)") }
        if let userPublicKeyPEM {
            try Data(userPublicKeyPEM.utf8).write(to: directory.appendingPathComponent("users.pem"))
            catalogText = catalogText.replacingOccurrences(
                of: "\"algorithm\": \"HS256\",\n        \"issuer\": \"https://auth.seaboo.test\",",
                with: "\"algorithm\": \"ES256\",\n        \"publicKeyFile\": \"users.pem\",\n        \"issuer\": \"https://auth.seaboo.test\","
            )
            precondition(catalogText.contains("users.pem"), "the catalog's test tenant changed shape")
        }
        if webhookURL != nil || otherWebhookURL != nil || customize != nil || appleStandIn != nil {
            var catalog = try JSONDecoder().decode(Catalog.self, from: Data(catalogText.utf8))
            if let appleStandIn {
                // Every tenant that trusts the test CA gets the stand-in's App Store Server API.
                try Data(appleStandIn.keyPEM.utf8).write(to: directory.appendingPathComponent("apple-key.p8"))
                let base = "http://127.0.0.1:\(appleStandIn.port)"
                for index in catalog.tenants.indices where catalog.tenants[index].apple.trustedRootFiles?.contains("berth-ca/root.pem") == true {
                    catalog.tenants[index].apple.serverAPI = ServerAPICredentials(
                        issuerId: "issuer-1",
                        keyId: "KEY123",
                        privateKeyFile: "apple-key.p8",
                        productionURL: base + "/production",
                        sandboxURL: base + "/sandbox"
                    )
                    catalog.tenants[index].apple.answerConsumptionRequests = true
                }
            }
            customize?(&catalog)
            // Receivers in tests listen on loopback over plain http: allowed only by this explicit setting.
            for index in catalog.tenants.indices where webhookTenants.contains(catalog.tenants[index].id) {
                if let webhookURL {
                    catalog.tenants[index].webhook = Tenant.Webhook(url: webhookURL, secretEnv: "SEABOO_TEST_WEBHOOK_SECRET", allowLoopbackHTTP: true)
                }
            }
            if let otherWebhookURL, let index = catalog.tenants.firstIndex(where: { $0.id == "seaboo" }) {
                catalog.tenants[index].webhook = Tenant.Webhook(url: otherWebhookURL, secretEnv: "SEABOO_WEBHOOK_SECRET", allowLoopbackHTTP: true)
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
            catalogText = String(decoding: try encoder.encode(catalog), as: UTF8.self)
        }
        try Data(catalogText.utf8).write(to: directory.appendingPathComponent("products.json"))
        let ca = try TestCA.generate()
        try ca.write(to: directory.appendingPathComponent("berth-ca"))
        let receiptCA = try sharedReceiptCA.get()
        try receiptCA.write(to: directory.appendingPathComponent("berth-ca"))

        let setup = BerthSetup(
            catalogURL: directory.appendingPathComponent("products.json"),
            databasePath: directory.appendingPathComponent("berth.sqlite").path,
            migrationsURL: repository.appendingPathComponent("migrations"),
            environment: [
                "SEABOO_TEST_JWT_SECRET": jwtSecret, "SEABOO_TEST_WEBHOOK_SECRET": webhookSecret, "SEABOO_WEBHOOK_SECRET": webhookSecret,
                "AISTYLIST_TEST_JWT_SECRET": jwtSecret, "ZORYA_TEST_JWT_SECRET": jwtSecret, "FTCHINESE_TEST_JWT_SECRET": jwtSecret,
                "BRAINDUMPSTER_TEST_JWT_SECRET": jwtSecret,
            ].merging(extraEnvironment) { $1 }
        )
        var logger = customLogger ?? Logger(label: "berth.test")
        // Errors only: every harness would otherwise log the shipped catalog's start note (its apps'
        // parts off for want of a real deployment's keys) and every refusal a test provokes on purpose;
        // a test that reads the log passes its own logger.
        if customLogger == nil { logger.logLevel = .error }
        let (catalog, database) = try await setup.prepareStore(logger: logger, now: clock.now())
        var services = try await setup.services(catalog: catalog, store: database, clock: clock, httpClient: Harness.outbound, logger: logger)
        // Tests read Apple's notification history by hand (services.appleHistory), at moments they choose.
        services.appleHistoryTick = nil
        // One instance per test: the inventory it changes is in effect at once (a second instance's
        // reading is tested by calling `manageInventory.refresh()`).
        services.inventoryRefreshInterval = nil
        func key(_ tenant: String, _ role: APIKeyRole) async throws -> String {
            let key = APIKeys.generate(tenantId: tenant)
            _ = try await CreateAPIKey(store: database)(tenantId: tenant, role: role, hash: APIKeys.hash(key), now: clock.now())
            return key
        }
        let test = Test.current.map { $0.displayName ?? $0.name } ?? "?"
        openHarnesses.withLock { $0[directory.path] = test }
        return Harness(
            directory: directory,
            ca: ca,
            receiptCA: receiptCA,
            clock: clock,
            database: database,
            services: services,
            serverKey: try await key("seaboo-test", .server),
            adminKey: try await key("seaboo-test", .admin),
            otherServerKey: try await key("seaboo", .server),
            otherAdminKey: try await key("seaboo", .admin)
        )
    }

    /// A new API key of any tenant of the catalog.
    func apiKey(_ tenant: String, _ role: APIKeyRole) async throws -> String {
        let key = APIKeys.generate(tenantId: tenant)
        _ = try await CreateAPIKey(store: database)(tenantId: tenant, role: role, hash: APIKeys.hash(key), now: clock.now())
        return key
    }

    func app() -> some ApplicationProtocol {
        buildApplication(services: services, server: ServerConfiguration(host: "127.0.0.1", port: 0))
    }

    /// Closes the store and removes the temporary folder (synchronous: `defer { harness.close() }`).
    func close() {
        // A close that fails leaves the file's descriptors open for the rest of the run: said, not swallowed.
        do { try database.close() } catch { FileHandle.standardError.write(Data("Harness.close: the SQLite store did not close: \(error)\n".utf8)) }
        if openHarnesses.withLock({ $0.removeValue(forKey: directory.path) }) != nil { OpenStoreBudget.shared.leave() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// A signed Sandbox transaction for the test tenant's app.
    func purchase(
        _ productId: String,
        transactionId: String = TestIDs.transactionId(),
        bundleId: String = "it.seaboo.app",
        environment: AppStoreEnvironment = .sandbox,
        appAccountToken: UUID? = nil
    ) throws -> String {
        try ca.signTransaction(
            .testPurchase(
                bundleId: bundleId,
                productId: productId,
                transactionId: transactionId,
                environment: environment,
                appAccountToken: appAccountToken,
                signedDate: clock.now()
            )
        )
    }

    /// A base64 Sandbox app receipt for the test tenant's app holding one purchase.
    func receipt(_ productId: String, transactionId: String, bundleId: String = "it.seaboo.app") throws -> String {
        Data(try receiptCA.signReceipt(.testReceipt(bundleId: bundleId, productId: productId, transactionId: transactionId, created: clock.now())))
            .base64EncodedString()
    }

    /// A user token for the test tenant.
    func userToken(
        _ user: String,
        issuer: String = "https://auth.seaboo.test",
        audience: String = "berth",
        expiresIn: TimeInterval = 600
    ) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: Self.jwtSecret), digestAlgorithm: .sha256)
        return try await keys.sign(
            TestUserClaims(
                sub: .init(value: user),
                iss: .init(value: issuer),
                aud: .init(value: [audience]),
                exp: .init(value: Date().addingTimeInterval(expiresIn))
            )
        )
    }

    /// A genuine Apple sample from Tests/Fixtures (one folder for every test target).
    static func fixture(_ name: String) -> URL {
        repository.appendingPathComponent("Tests/Fixtures/\(name)")
    }

    /// Counts rows of a table (to prove that refusals wrote nothing).
    func count(_ table: String) async throws -> Int {
        try await database.withConnection { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0 }
    }

    /// Rows of a query, read straight from the database file, as text (NULL is nil).
    @discardableResult
    func rows(_ query: String, _ arguments: StatementArguments = []) async throws -> [[String: String?]] {
        try await database.withConnection { db in
            try Row.fetchAll(db, sql: query, arguments: arguments).map { row in
                Dictionary(
                    uniqueKeysWithValues: row.map { column, value in
                        (column, value.isNull ? nil : String.fromDatabaseValue(value) ?? value.description)
                    }
                )
            }
        }
    }

    /// The instant it is `hour:minute` in `zone` (the shipped seaboo tenants live in Europe/Rome)
    /// on the calendar day `offset` UTC days after `now`'s: an experience's local slot time.
    static func local(_ offset: Int, hour: Int, minute: Int = 0, zone: String = "Europe/Rome", from now: Date) -> Date {
        let day = day(offset, hour: 0, from: now)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC") ?? .current
        var there = utc
        there.timeZone = TimeZone(identifier: zone) ?? utc.timeZone
        let date = utc.dateComponents([.year, .month, .day], from: day)
        return there.date(from: DateComponents(year: date.year, month: date.month, day: date.day, hour: hour, minute: minute)) ?? day
    }

    static func day(_ offset: Int, hour: Int = 8, from now: Date) -> Date {
        let startOfDay = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
        return startOfDay.addingTimeInterval(TimeInterval(offset * 86_400 + hour * 3600))
    }
}

struct TestUserClaims: JWTPayload {
    var sub: SubjectClaim
    var iss: IssuerClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A decoded HTTP response.
struct Reply: Sendable {
    var status: HTTPResponse.Status
    var data: Data
    var headers: HTTPFields = [:]

    /// The answer as a JSON object. A body that is not one is an issue of the test (an expectation
    /// that a member is absent must not pass on an HTML page or an empty answer).
    var json: JSON {
        guard let answer = try? JSON.parse(data), answer.members != nil else {
            Issue.record("the answer (\(status.code)) is not a JSON object: \(String(decoding: data.prefix(200), as: UTF8.self))")
            return .object([:])
        }
        return answer
    }

    /// The answer decoded into a contract type (fails on anything else).
    func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: data)
    }

    var errorCode: String? { json["error"]["code"].string }
    var errorField: String? { json["error"]["field"].string }
    var booking: JSON? { json["booking"].object }
    var purchase: JSON? { json["purchase"].object }
}

extension TestClientProtocol {
    /// Sends a request with a JSON body (a dictionary, or raw text) and decodes the JSON answer.
    func call(
        _ method: HTTPRequest.Method,
        _ uri: String,
        auth: String?,
        user: String? = nil,
        json: JSON? = nil,
        raw: String? = nil
    ) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let auth { headers[.authorization] = "Bearer \(auth)" }
        if let user { headers[HTTPField.Name("X-User-Id")!] = user }
        var body: ByteBuffer?
        if let json { body = ByteBuffer(bytes: try json.data()) }
        if let raw { body = ByteBuffer(string: raw) }
        return try await execute(uri: uri, method: method, headers: headers, body: body) { response in
            Reply(status: response.status, data: Data(response.body.readableBytesView), headers: response.headers)
        }
    }
}

/// Creates a booking for `user` and returns its JSON (records an issue unless it is 201).
func createBooking(
    _ client: some TestClientProtocol,
    _ harness: Harness,
    user: String,
    body: JSON,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> JSON {
    let reply = try await client.call(.post, "/api/bookings", auth: harness.serverKey, user: user, json: body)
    #expect(reply.status == .created, "\(reply.json)", sourceLocation: sourceLocation)
    return try #require(reply.booking, sourceLocation: sourceLocation)
}

func iso(_ date: Date) -> String { date.formatted(.iso8601) }

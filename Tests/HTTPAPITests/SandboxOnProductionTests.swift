import BerthApp
import Domain
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import Logging
import SQLStore
import Testing
import UseCases

@Suite("Sandbox purchases on a Production tenant (Apple's genuine Sandbox transaction)")
struct SandboxOnProductionTests {
    /// A Production tenant shaped after the app of Apple's genuine Sandbox consumable sample.
    static let catalog = #"""
        { "tenants": [
          { "id": "goodheart", "name": "Good Heart", "currency": "JPY",
            "apple": { "bundleId": "com.goodheartapp", "appAppleId": 6449123456, "environments": ["Production", "Sandbox"],
                       "sandboxTesters": ["tester-1"] },
            "auth": { "algorithm": "HS256", "issuer": "https://goodheart.example", "secretEnv": "GOODHEART_SECRET" },
            "products": [ { "id": "gh_super_good_ticket_1", "kind": "booking", "type": "Consumable", "title": "Ticket" } ],
            "resources": [ { "id": "session", "kind": "experience", "name": "Session", "experienceType": "ticket",
                             "pricePerSeatMinor": 2300, "seatsPerSlot": 10, "slotTimes": ["09:00"], "durationMinutes": 60 } ],
            "bookingRules": { "rentalPriceBands": [], "experienceProducts": { "ticket": "gh_super_good_ticket_1" } } }
        ] }
        """#

    @Test("a Sandbox purchase confirms a Production tenant's booking only for an allow-listed tester")
    func testersOnly() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-sandbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(Self.catalog.utf8).write(to: directory.appendingPathComponent("products.json"))
        let setup = BerthSetup(
            catalogURL: directory.appendingPathComponent("products.json"),
            databasePath: directory.appendingPathComponent("b.sqlite").path,
            migrationsURL: Harness.repository.appendingPathComponent("migrations"),
            environment: [:]
        )
        var logger = Logger(label: "sandbox-on-production")
        logger.logLevel = .warning
        // The sample was signed 2025-02-10T04:29Z; the test runs the day before.
        let clock = TestClock(Date(timeIntervalSince1970: 1_739_100_000))
        let (catalog, database) = try await setup.prepareStore(logger: logger, now: clock.now())
        let services = try await setup.services(catalog: catalog, store: database, clock: clock, httpClient: Harness.outbound, logger: logger)
        let key = APIKeys.generate(tenantId: "goodheart")
        _ = try await CreateAPIKey(store: database)(tenantId: "goodheart", role: .server, hash: APIKeys.hash(key), now: clock.now())
        let jws = try String(contentsOf: Harness.fixture("transaction-sandbox-consumable-2025.jws"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let slot = Harness.day(3, hour: 9, from: clock.now())
        try await Application(router: buildRouter(services: services)).test(.router) { client in
            func bookAndPay(_ user: String) async throws -> (Reply, Int) {
                let booking = try await client.call(
                    .post,
                    "/api/bookings",
                    auth: key,
                    user: user,
                    json: ["resourceId": "session", "slot": .string(iso(slot))]
                )
                #expect(booking.status == .created, "\(booking.json)")
                let id = try #require(booking.booking?["id"].int)
                let reply = try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: key,
                    user: user,
                    json: ["bookingId": .int(id), "productId": "gh_super_good_ticket_1", "jwsRepresentation": .string(jws)]
                )
                return (reply, id)
            }
            let (outsider, outsiderBooking) = try await bookAndPay("customer-7")
            #expect(outsider.status == .unprocessableContent)
            #expect(outsider.errorCode == "sandbox_not_allowed")
            let stillPending = try await client.call(.get, "/api/bookings/\(outsiderBooking)", auth: key, user: "customer-7")
            #expect(stillPending.booking?["status"].string == "pending_payment")

            let (tester, _) = try await bookAndPay("tester-1")
            #expect(tester.status == .ok, "\(tester.json)")
            #expect(tester.booking?["environment"].string == "Sandbox")
            #expect(tester.purchase?["environment"].string == "Sandbox")
            #expect(tester.purchase?["priceMilliunits"].int == 230_000)
            #expect(tester.purchase?["currency"].string == "JPY")
        }
        try database.close()
    }
}

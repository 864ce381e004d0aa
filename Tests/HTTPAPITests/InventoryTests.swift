import BerthApp
import Domain
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdTesting
import Testing
import UseCases

/// Inventory as data (issue "Run the season"): resources added, changed and retired through the
/// admin API while Berth runs, checked as the catalog checks them, in effect at once.
@Suite("Inventory as data")
struct InventoryTests {
    static var rib: JSON { ["id": "rib-9m", "kind": "rental", "name": "RIB 9 m", "pricePerDayMinor": 12_000, "units": 1] }

    @Test(
        "a boat added through the API is bookable at once at its price and product; a price no band covers, a duplicate id, an unknown experience type and a changed id are refused; retired, it keeps its bookings and takes no new one; every change audited"
    )
    func addChangeRetire() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            // products.json's resources are the starting inventory.
            let listed = try await client.call(.get, "/api/admin/resources", auth: harness.adminKey)
            let ids = (listed.json["resources"].array ?? []).compactMap { $0["resource"]["id"].string }
            #expect(ids.contains("gozzo-5m") && ids.contains("sunset-cruise"), "\(ids)")

            let added = try await client.call(.post, "/api/admin/resources", auth: harness.adminKey, json: Self.rib)
            #expect(added.status == .created, "\(added.json)")
            let item = try #require(added.json["resource"].object)
            #expect(item["resource"]["name"].string == "RIB 9 m" && (item["version"].int ?? 0) > 0)
            // On sale at once, on this instance: the public listing and a booking at €120 a day (premium band).
            let resources = try await client.call(.get, "/api/resources", auth: harness.serverKey)
            #expect((resources.json["resources"].array ?? []).contains { $0["id"].string == "rib-9m" })
            let start = Harness.day(3, from: harness.clock.now())
            func book(_ user: String, day: Int = 3) async throws -> Reply {
                let start = Harness.day(day, from: harness.clock.now())
                return try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: user,
                    json: ["resourceId": "rib-9m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(6 * 3600)))]
                )
            }
            let first = try await book("nina")
            #expect(first.status == .created, "\(first.json)")
            #expect(first.booking?["price"].int == 12_000 && first.booking?["requiredProductId"].string == "it.seaboo.rental.premium")
            _ = start

            // Refusals, each naming what is wrong.
            let again = try await client.call(.post, "/api/admin/resources", auth: harness.adminKey, json: Self.rib)
            #expect(again.status == .conflict && again.errorCode == "resource_exists", "\(again.json)")
            var yacht = Self.rib
            yacht["id"] = "yacht-20m"
            yacht["pricePerDayMinor"] = 90_000
            let unpayable = try await client.call(.post, "/api/admin/resources", auth: harness.adminKey, json: yacht)
            #expect(unpayable.status == .unprocessableContent && unpayable.errorCode == "invalid_field", "\(unpayable.json)")
            #expect(unpayable.json["error"]["message"].string ?? "" != "", "\(unpayable.json)")
            let kayak: JSON = [
                "id": "kayak-tour", "kind": "experience", "name": "Kayak tour", "experienceType": "kayak", "pricePerSeatMinor": 3000,
                "seatsPerSlot": 6, "slotTimes": ["09:00"], "durationMinutes": 120,
            ]
            let unsold = try await client.call(.post, "/api/admin/resources", auth: harness.adminKey, json: kayak)
            #expect(unsold.status == .unprocessableContent, "an experience type no product pays for: \(unsold.json)")
            let incomplete = try await client.call(.post, "/api/admin/resources", auth: harness.adminKey, json: ["id": "x", "kind": "rental"])
            #expect(incomplete.status == .badRequest && incomplete.errorCode == "missing_field", "\(incomplete.json)")
            let renamed = try await client.call(.patch, "/api/admin/resources/rib-9m", auth: harness.adminKey, json: ["id": "rib-10m"])
            #expect(renamed.status == .badRequest, "\(renamed.json)")
            let cleared = try await client.call(.patch, "/api/admin/resources/rib-9m", auth: harness.adminKey, json: ["name": JSON.null])
            #expect(cleared.status == .badRequest && cleared.errorCode == "missing_field", "a required member cannot be removed: \(cleared.json)")
            let missing = try await client.call(.patch, "/api/admin/resources/nope", auth: harness.adminKey, json: ["name": "x"])
            #expect(missing.status == .notFound && missing.errorCode == "resource_not_found")

            // August prices: €90 a day, now the basic band; the booking already made keeps its price.
            let cheaper = try await client.call(.patch, "/api/admin/resources/rib-9m", auth: harness.adminKey, json: ["pricePerDayMinor": 9_000])
            #expect(
                cheaper.status == .ok
                    && cheaper.json["resource"]["resource"]["pricePerDayMinor"].int == 9_000
            )
            let second = try await book("otto", day: 4)
            #expect(second.booking?["price"].int == 9_000 && second.booking?["requiredProductId"].string == "it.seaboo.rental.basic")

            // Retired: kept for its bookings, off sale.
            let retired = try await client.call(.post, "/api/admin/resources/rib-9m/retire", auth: harness.adminKey)
            #expect(
                retired.status == .ok && retired.json["resource"]["resource"]["retired"].bool == true
            )
            let refused = try await book("pia", day: 5)
            #expect(refused.status == .conflict && refused.errorCode == "resource_retired", "\(refused.json)")
            let onSale = try await client.call(.get, "/api/resources", auth: harness.serverKey)
            #expect(!(onSale.json["resources"].array ?? []).contains { $0["id"].string == "rib-9m" })
            let kept = try await client.call(.get, "/api/admin/bookings?resourceId=rib-9m", auth: harness.adminKey)
            #expect(kept.json["total"].int == 2, "its bookings stay: \(kept.json)")
            let back = try await client.call(.patch, "/api/admin/resources/rib-9m", auth: harness.adminKey, json: ["retired": false])
            let afterReturn = try await book("pia", day: 5)
            #expect(back.status == .ok && afterReturn.status == .created, "put back in service: \(afterReturn.json)")

            let audit = try await client.call(.get, "/api/admin/audit?limit=50", auth: harness.adminKey)
            let actions = (audit.json["items"].array ?? []).compactMap { $0["action"].string }
            #expect(["resource.created", "resource.updated", "resource.retired"].allSatisfy(actions.contains), "\(actions)")
            // Operators only, and only their own tenant.
            #expect(try await client.call(.get, "/api/admin/resources", auth: harness.serverKey).status == .forbidden)
            let elsewhere = try await client.call(.get, "/api/admin/resources", auth: harness.otherAdminKey)
            #expect(
                !(elsewhere.json["resources"].array ?? []).contains { $0["resource"]["id"].string == "rib-9m" }
            )
        }
    }

    @Test("another instance on the same database sees a resource added, changed and retired at its next read of the inventory")
    func anotherInstanceSeesIt() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        // A second instance: its own tenants (as loaded at its start), the same database.
        let other = try await TenantRegistry.load(
            try Catalog.decode(Data(contentsOf: harness.directory.appendingPathComponent("products.json"))),
            baseDirectory: harness.directory,
            environment: [:],
            clock: harness.clock,
            httpClient: Harness.outbound,
            logger: harness.services.logger
        )
        let otherInventory = ManageInventory(store: harness.database, tenants: other, clock: harness.clock, logger: harness.services.logger)
        try await otherInventory.refresh()
        #expect(other.tenant(id: "seaboo-test")?.tenant.resource(id: "rib-9m") == nil)
        try await harness.app().test(.router) { client in
            let added = try await client.call(.post, "/api/admin/resources", auth: harness.adminKey, json: Self.rib)
            #expect(added.status == .created)
        }
        #expect(other.tenant(id: "seaboo-test")?.tenant.resource(id: "rib-9m") == nil, "not before it reads")
        #expect(try await otherInventory.refresh() == ["seaboo-test"])
        #expect(other.tenant(id: "seaboo-test")?.tenant.resource(id: "rib-9m")?.pricePerDayMinor == 12_000)
        #expect(try await otherInventory.refresh().isEmpty, "nothing new: nothing read again")
        let runtime = try #require(harness.services.tenants.tenant(id: "seaboo-test"))
        _ = try await harness.services.manageInventory.retire(runtime: runtime, id: "rib-9m", actor: .system)
        try await otherInventory.refresh()
        #expect(other.tenant(id: "seaboo-test")?.tenant.resource(id: "rib-9m")?.inService == false)
        #expect(throws: DomainError.self) {
            try other.tenant(id: "seaboo-test")?.tenant.quote(
                BookingRequest(
                    resourceId: "rib-9m",
                    start: Harness.day(3, from: harness.clock.now()),
                    end: Harness.day(3, from: harness.clock.now()).addingTimeInterval(3600)
                ),
                now: harness.clock.now()
            )
        }
    }
}

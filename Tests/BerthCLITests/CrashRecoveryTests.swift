import Foundation
import Testing

@Suite("berth serve on a real socket", .serialized)
struct CrashRecoveryTests {
    @Test("a kill -9 during a burst of verify-purchase calls loses no purchase whose 200 was sent; a restart keeps everything")
    func killDuringBurst() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let key = try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", "server"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        let admin = try await server.berth(["keys", "create", "--tenant", "seaboo-test", "--role", "admin"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        try #require(key.hasPrefix("berth_") && admin.hasPrefix("berth_"))
        try await server.start()

        // Bookings on distinct days, each with its own signed purchase.
        let count = 60
        let today = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400
        var calls: [(booking: Int, body: Data)] = []
        for index in 0..<count {
            let start = Date(timeIntervalSince1970: today + Double(index + 2) * 86_400 + 8 * 3600)
            let created = try await server.request(
                "POST",
                "/api/bookings",
                headers: ["Authorization": "Bearer \(key)", "X-User-Id": "user\(index)"],
                body: ["resourceId": "gozzo-5m", "start": start.formatted(.iso8601), "end": start.addingTimeInterval(3600).formatted(.iso8601)]
            )
            try #require(created.status == 201, "\(String(decoding: created.data, as: UTF8.self))")
            let id = try #require((created.json["booking"] as? [String: Any])?["id"] as? Int)
            let jws = try await server.berth([
                "testkit", "sign-transaction", "--ca", "berth-ca", "--bundle-id", "it.seaboo.app", "--product", "it.seaboo.rental.basic",
            ])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            calls.append(
                (id, try JSONSerialization.data(withJSONObject: ["bookingId": id, "productId": "it.seaboo.rental.basic", "jwsRepresentation": jws]))
            )
        }

        // Fire them all; kill the server once a third have been answered 200.
        let confirmed = ConfirmedSet()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, call) in calls.enumerated() {
                group.addTask {
                    let reply = try? await server.request(
                        "POST",
                        "/api/verify-purchase",
                        headers: ["Authorization": "Bearer \(key)", "X-User-Id": "user\(index)"],
                        data: call.body
                    )
                    if reply?.status == 200 { await confirmed.insert(call.booking) }
                }
            }
            group.addTask {
                while await confirmed.count < count / 3 { try await Task.sleep(for: .milliseconds(1)) }
                server.kill9()
            }
            try await group.waitForAll()
        }
        let acknowledged = await confirmed.all
        #expect(acknowledged.count >= count / 3)

        try await server.start()
        for (index, call) in calls.enumerated() where acknowledged.contains(call.booking) {
            let booking = try await server.request(
                "GET",
                "/api/bookings/\(call.booking)",
                headers: ["Authorization": "Bearer \(key)", "X-User-Id": "user\(index)"]
            )
            let stored = booking.json["booking"] as? [String: Any]
            #expect(stored?["status"] as? String == "confirmed", "booking \(call.booking) was acknowledged but is \(stored?["status"] ?? "missing")")
            #expect(stored?["purchaseId"] is Int)
        }
        let purchases = try await server.request("GET", "/api/admin/purchases?limit=200", headers: ["Authorization": "Bearer \(admin)"])
        let total = try #require(purchases.json["total"] as? Int)
        #expect(total >= acknowledged.count)
        // Whatever was committed is whole: every purchase belongs to a confirmed booking.
        let bookings = try await server.request(
            "GET",
            "/api/admin/bookings?status=confirmed&limit=200",
            headers: ["Authorization": "Bearer \(admin)"]
        )
        #expect(bookings.json["total"] as? Int == total)
        server.stop()
    }
}

actor ConfirmedSet {
    private var ids = Set<Int>()
    func insert(_ id: Int) { ids.insert(id) }
    var count: Int { ids.count }
    var all: Set<Int> { ids }
}

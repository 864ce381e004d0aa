import AppleSignedData
import Crypto
import Domain
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import SQLStore
import Synchronization
import TestKit
import Testing

@testable import HTTPAPI

@Suite("Hardening: what is paid, who may hold inventory, who may call how often")
struct HardeningTests {
    @Test("units the booking needs are paid by one transaction of that quantity or by several adding up to it; what Apple signed as paid is recorded")
    func quantityAndPrice() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let slot = Harness.local(4, hour: 17, minute: 30, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "ann",
                body: ["resourceId": "sunset-cruise", "slot": .string(iso(slot)), "seats": 4]
            )
            #expect(booking["requiredQuantity"].int == 4)
            #expect(booking["remainingQuantity"].int == 4)
            func pay(_ booking: JSON, quantity: Int, id: String) async throws -> Reply {
                let jws = try harness.ca.signTransaction(
                    .testPurchase(
                        bundleId: "it.seaboo.app",
                        productId: "it.seaboo.experience.sunset",
                        transactionId: id,
                        quantity: quantity,
                        price: Int64(quantity) * 44_990,
                        currency: "EUR"
                    )
                )
                return try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: harness.serverKey,
                    user: "ann",
                    json: ["bookingId": booking["id"], "productId": "it.seaboo.experience.sunset", "jwsRepresentation": .string(jws)]
                )
            }
            // One unit of four pays a quarter: applied, the booking still pending with its hold extended.
            harness.clock.advance(600)
            let one = try await pay(booking, quantity: 1, id: "2000000000008001")
            #expect(one.status == .accepted && one.json["success"].bool == false, "\(one.json)")
            #expect(one.booking?["status"].string == "pending_payment")
            #expect(one.booking?["paidQuantity"].int == 1)
            #expect(one.booking?["remainingQuantity"].int == 3)
            let extended = String(iso(harness.clock.now().addingTimeInterval(15 * 60)).dropLast())  // to the second
            #expect((one.booking?["holdExpiresAt"].string)?.hasPrefix(extended) == true, "the hold runs a full hold from the part payment")
            let rest = try await pay(booking, quantity: 3, id: "2000000000008003")
            #expect(rest.booking?["status"].string == "confirmed", "\(rest.json)")
            #expect(rest.booking?["remainingQuantity"].int == 0)
            #expect(try await harness.count("purchases") == 2)

            let other = try await createBooking(
                client,
                harness,
                user: "ann",
                body: ["resourceId": "sunset-cruise", "slot": .string(iso(slot)), "seats": 4]
            )
            let four = try await pay(other, quantity: 4, id: "2000000000008002")
            #expect(four.status == .ok, "\(four.json)")
            #expect(four.booking?["status"].string == "confirmed")
            #expect(four.purchase?["quantity"].int == 4)
            #expect(four.purchase?["priceMilliunits"].int == 179_960)
            #expect(four.purchase?["currency"].string == "EUR")
            #expect(four.booking?["environment"].string == "Sandbox")

            // A rental above the last price band is refused at booking time: nothing pays for it.
            let start = Harness.day(6, from: harness.clock.now())
            let long = try await client.call(
                .post,
                "/api/bookings",
                auth: harness.serverKey,
                user: "ann",
                json: ["resourceId": "rib-7m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(5 * 86_400)))]
            )
            #expect(long.status == .unprocessableContent)
            #expect(long.errorCode == "price_above_limit")
        }
    }

    @Test("a user, and a server key over its users, may hold only so many unpaid bookings")
    func holdCaps() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            func book(_ user: String, day: Int) async throws -> Reply {
                let start = Harness.day(day, from: harness.clock.now())
                return try await client.call(
                    .post,
                    "/api/bookings",
                    auth: harness.serverKey,
                    user: user,
                    json: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(3600)))]
                )
            }
            for day in 1...HoldLimits.defaultPerUser { #expect(try await book("squatter", day: day).status == .created) }
            let refused = try await book("squatter", day: 10)
            #expect(refused.status == .conflict)
            #expect(refused.errorCode == "too_many_pending_bookings")
            #expect(try await harness.count("bookings") == HoldLimits.defaultPerUser)
            // Other users are not affected; once a hold expires the user may book again.
            #expect(try await book("honest", day: 11).status == .created)
            harness.clock.advance(16 * 60)
            #expect(try await book("squatter", day: 12).status == .created)
        }
    }

    @Test("the unauthenticated notification endpoint is rate-limited per tenant and client before any verification")
    func notificationRateLimit() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let junk: JSON = ["signedPayload": "eyJhbGciOiJFUzI1NiJ9.e30.AAAA"]
            var statuses: [Int] = []
            for _ in 0..<(Tenant.defaultNotificationLimit.burst + 5) {
                statuses.append(Int(try await client.call(.post, "/api/apple/notifications/seaboo-test", auth: nil, json: junk).status.code))
            }
            #expect(statuses.prefix(Tenant.defaultNotificationLimit.burst).allSatisfy { $0 != 429 })
            #expect(statuses.suffix(5).allSatisfy { $0 == 429 })
            // Another tenant's endpoint is not affected.
            let other = try await client.call(.post, "/api/apple/notifications/seaboo", auth: nil, json: junk)
            #expect(other.status != .tooManyRequests)
        }
    }

    @Test("pagination offsets are bounded")
    func boundedOffsets() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let far = try await client.call(.get, "/api/admin/notifications?offset=\(Page.maximumOffset + 1)", auth: harness.adminKey)
            #expect(far.status == .badRequest)
            #expect(far.errorCode == "invalid_query")
            #expect(try await client.call(.get, "/api/admin/notifications?offset=\(Page.maximumOffset)", auth: harness.adminKey).status == .ok)
        }
    }

    @Test("S14: a commit that waited for the account's lock past the reservation's expiry is refused (the time is read inside the unit of work)")
    func expiryJudgedUnderTheLock() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await CreditsTests.Keys.make(harness)
        try await harness.app().test(.router) { client in
            let held = try await CreditsTests.reserve(client, key: keys.stylist, user: "ana", body: ["amount": 2])
            #expect(held.status == .created, "\(held.json)")
            harness.clock.advance(9 * 60 + 50)  // 10 s before the 10-minute reservation expires
            // Another unit of work holds the writer; the commit waits behind it while the hold expires.
            // Judged by events, not by time: the holder has the writer, then the commit is queued
            // behind it, and only then does the hold expire.
            let state = Mutex((holding: false, released: false))
            // The holder blocks until the test lets it go (the timeout only bounds a failing run).
            let letGo = DispatchSemaphore(value: 0)
            let holder = Task {
                try await harness.database.write { _ in
                    state.withLock { $0.holding = true }
                    _ = letGo.wait(timeout: .now() + 180)
                    state.withLock { $0.released = true }
                }
            }
            while !state.withLock({ $0.holding }) { await Task.yield() }
            let commit = Task { try await CreditsTests.settle(client, key: keys.stylist, user: "ana", reservation: held, "commit") }
            while harness.database.queuedWrites == 0 { await Task.yield() }
            harness.clock.advance(20)
            letGo.signal()
            _ = try await holder.value
            let committed = try await commit.value
            #expect(
                committed.status == .conflict && committed.errorCode == "reservation_not_held",
                "expired while it waited: \(committed.status) \(committed.json)"
            )
            let balance = try await CreditsTests.balance(client, key: keys.stylist, user: "ana")
            #expect(balance?.balance == 2 && balance?.held == 0, "\(String(describing: balance))")
        }
    }

    @Test("L8: canonically equivalent user ids are one user everywhere: stored in composed form, read the same by SQL and by Swift")
    func oneNormalForm() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await CreditsTests.Keys.make(harness)
        try await harness.app().test(.router) { client in
            let decomposed = "jose\u{0301}", composed = "jos\u{00e9}"
            let held = try await CreditsTests.reserve(client, key: keys.stylist, user: decomposed, body: ["amount": 1])
            #expect(held.status == .created, "\(held.json)")
            let seen = try await CreditsTests.balance(client, key: keys.stylist, user: composed)
            #expect(seen?.held == 1, "the composed spelling sees the decomposed one's hold: \(String(describing: seen))")
            let stored = try await harness.rows("SELECT DISTINCT hex(user_id) AS id FROM credit_reservations").map { $0["id"] ?? nil }
            #expect(stored == [Data(composed.utf8).map { String(format: "%02X", $0) }.joined()], "stored in NFC: \(stored)")
        }
    }

    @Test("L9: an admin's confirm or cancel reason is bounded (500 characters) like an adjustment's")
    func boundedReasons() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let long = String(repeating: "r", count: 501)
            for action in ["confirm", "cancel"] {
                let reply = try await client.call(.post, "/api/admin/bookings/1/\(action)", auth: harness.adminKey, json: ["reason": .string(long)])
                #expect(reply.status == .badRequest && reply.errorField == "reason", "\(action): \(reply.status) \(reply.json)")
            }
        }
    }

    @Test("a user token whose JSON names a member twice (sub read one way, another way elsewhere) is refused")
    func duplicateClaims() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let good = try await harness.userToken("alice")
            #expect(try await client.call(.get, "/api/bookings", auth: good).status == .ok)
            // The same claims with a second "sub", signed with the tenant's secret.
            let parts = good.split(separator: ".").map(String.init)
            let claims = String(decoding: try #require(Base64URL.decode(parts[1][...])), as: UTF8.self)
            let doubled = "{\"sub\":\"mallory\"," + claims.dropFirst()
            let input = parts[0] + "." + Base64URL.encode(Data(doubled.utf8))
            let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(Harness.jwtSecret.utf8)))
            let forged = input + "." + Base64URL.encode(Data(mac))
            let reply = try await client.call(.get, "/api/bookings", auth: forged)
            #expect(reply.status == .unauthorized, "\(reply.status) \(reply.json)")
        }
    }

    @Test("admin listings run beside a busy writer, not behind it")
    func listingsBesideWriter() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        // Hold a write transaction (BEGIN IMMEDIATE) open on GRDB's writer queue until the listings
        // are done (at most 180 s, only reached when they wait for it: the failure). Judged by
        // order, not by a deadline: on a loaded machine the listings may be slow (CI once took over
        // 15 s), but they must finish while the writer still holds its transaction. The hold blocks
        // the writer's own dispatch queue, not a thread of Swift's cooperative pool (a unit written
        // through `write` runs on its caller's thread: blocking it left the listings one thread of
        // two, which the tests running beside could take).
        let state = Mutex((holding: false, released: false))
        // The holder blocks until the listings are done (the timeout only bounds a failing run).
        let letGo = DispatchSemaphore(value: 0)
        let holder = Task {
            try await harness.database.migrationUnit { _ in
                state.withLock { $0.holding = true }
                _ = letGo.wait(timeout: .now() + 180)
                state.withLock { $0.released = true }
            }
        }
        // The listings start once the writer is held (an event, not a head start in time).
        while !state.withLock({ $0.holding }) { await Task.yield() }
        _ = try await harness.database.read { session in
            _ = try session.notifications.notifications(tenantId: "seaboo-test", page: Page())
            _ = try session.purchases.unclaimed(tenantId: "seaboo-test", page: Page())
            _ = try session.outbox.deliveries(tenantId: "seaboo-test", page: Page())
            _ = try session.purchases.purchases(tenantId: "seaboo-test", page: Page())
        }
        let listed = state.withLock { !$0.released }
        letGo.signal()
        _ = try await holder.value
        #expect(listed, "the listings waited for the writer")
    }
}

@Suite("Rate limiter")
struct RateLimiterTests {
    @Test("memory is bounded per tenant; one tenant's churn never resets another's buckets")
    func boundedPerTenant() {
        let clock = TestClock()
        let limiter = RateLimiter(clock: clock, capacityPerTenant: 100)
        let tight = Tenant.RateLimit(burst: 2, perSecond: 0.001)
        #expect(limiter.take(tenant: "a", scope: .verification, principals: [("user:alice", tight)]) == nil)
        #expect(limiter.take(tenant: "a", scope: .verification, principals: [("user:alice", tight)]) == nil)
        #expect(limiter.take(tenant: "a", scope: .verification, principals: [("user:alice", tight)]) != nil)
        for index in 0..<10_000 {
            _ = limiter.take(tenant: "b", scope: .verification, principals: [("user:\(index)", tight)])
        }
        #expect(limiter.bucketCount(tenant: "b") <= 100)
        #expect(limiter.take(tenant: "a", scope: .verification, principals: [("user:alice", tight)]) != nil, "tenant b's churn reset tenant a")
    }

    @Test("a refused request takes nothing from the other buckets it names")
    func allOrNothing() {
        let clock = TestClock()
        let limiter = RateLimiter(clock: clock)
        let one = Tenant.RateLimit(burst: 1, perSecond: 0.001)
        let many = Tenant.RateLimit(burst: 5, perSecond: 0.001)
        #expect(limiter.take(tenant: "a", scope: .booking, principals: [("server:1", many), ("server:1/user:x", one)]) == nil)
        for _ in 0..<3 {
            #expect(limiter.take(tenant: "a", scope: .booking, principals: [("server:1", many), ("server:1/user:x", one)]) != nil)
        }
        // The key's own bucket lost only the one accepted request: four users still get through.
        for user in ["a", "b", "c", "d"] {
            #expect(limiter.take(tenant: "a", scope: .booking, principals: [("server:1", many), ("server:1/user:\(user)", one)]) == nil)
        }
        #expect(limiter.take(tenant: "a", scope: .booking, principals: [("server:1", many), ("server:1/user:e", one)]) != nil)
    }
}

import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import HTTPAPI

/// The lows of the security review of af00a96 that live in the HTTP API: retried creations (V5)
/// and booking references as an existence oracle (V9).
@Suite("Trust boundary IV: idempotent creations, booking lookups")
struct TrustBoundaryIVTests {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!

    static func post(
        _ client: some TestClientProtocol,
        _ uri: String,
        auth: String,
        user: String,
        key: String?,
        json: JSON
    ) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(auth)"]
        headers[HTTPField.Name("X-User-Id")!] = user
        if let key { headers[idempotencyKey] = key }
        return try await client.execute(
            uri: uri,
            method: .post,
            headers: headers,
            body: ByteBuffer(bytes: try json.data())
        ) { response in
            Reply(status: response.status, data: Data(response.body.readableBytesView), headers: response.headers)
        }
    }

    static func error(_ reply: Reply) -> JSON { reply.json["error"] }

    @Test("V5: POST /api/bookings repeated with one Idempotency-Key answers the first booking; the key for another booking is refused")
    func bookingIdempotency() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(6, from: harness.clock.now())
            let body: JSON = ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(8 * 3600)))]
            let first = try await Self.post(client, "/api/bookings", auth: harness.serverKey, user: "ana", key: "k-1f2e3d", json: body)
            #expect(first.status == .created, "\(first.json)")
            let id = try #require(first.json["booking"]["id"].int64)
            let again = try await Self.post(client, "/api/bookings", auth: harness.serverKey, user: "ana", key: "k-1f2e3d", json: body)
            #expect(again.status == .created && again.json["booking"]["id"].int64 == id, "\(again.json)")
            #expect(again.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            let mine = try await client.call(.get, "/api/bookings", auth: harness.serverKey, user: "ana")
            #expect(mine.json["total"].int == 1, "one hold for one call: \(mine.json)")

            // The same key for another day: refused, nothing held.
            let other = start.addingTimeInterval(86_400)
            let reused = try await Self.post(
                client,
                "/api/bookings",
                auth: harness.serverKey,
                user: "ana",
                key: "k-1f2e3d",
                json: ["resourceId": "gozzo-5m", "start": .string(iso(other)), "end": .string(iso(other.addingTimeInterval(8 * 3600)))]
            )
            #expect(reused.status == .conflict && reused.errorCode == "reference_in_use", "\(reused.json)")
            // Another user's same key is another booking (the key is the caller's own).
            let bob = try await Self.post(client, "/api/bookings", auth: harness.serverKey, user: "bob", key: "k-1f2e3d", json: body)
            #expect(bob.status == .conflict && bob.json["booking"] == nil, "the boat is Ana's that day, Bob's key makes his own request: \(bob.json)")
            // A key that is not visible ASCII, or too long, is a 400.
            for bad in ["", String(repeating: "k", count: 201), "with space"] {
                let refused = try await Self.post(client, "/api/bookings", auth: harness.serverKey, user: "ana", key: bad, json: body)
                #expect(refused.status == .badRequest && Self.error(refused)["field"].string == "Idempotency-Key", "'\(bad.prefix(12))'")
            }
            // Without a key, two calls are two bookings, as before.
            let day2 = start.addingTimeInterval(2 * 86_400)
            let plain: JSON = ["resourceId": "gozzo-5m", "start": .string(iso(day2)), "end": .string(iso(day2.addingTimeInterval(8 * 3600)))]
            #expect(try await Self.post(client, "/api/bookings", auth: harness.serverKey, user: "cai", key: nil, json: plain).status == .created)
        }
    }

    @Test("V5: racing requests with one Idempotency-Key make one booking")
    func bookingIdempotencyRace() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(9, from: harness.clock.now())
            let (from, to) = (iso(start), iso(start.addingTimeInterval(8 * 3600)))
            let ids = try await withThrowingTaskGroup(of: Int64?.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        let reply = try await Self.post(
                            client,
                            "/api/bookings",
                            auth: harness.serverKey,
                            user: "dia",
                            key: "race-7",
                            json: ["resourceId": "rib-7m", "start": .string(from), "end": .string(to)]
                        )
                        return reply.json["booking"]["id"].int64
                    }
                }
                return try await group.reduce(into: [Int64?]()) { $0.append($1) }
            }
            #expect(ids.allSatisfy { $0 != nil } && Set(ids.compactMap { $0 }).count == 1, "\(ids)")
            let mine = try await client.call(.get, "/api/bookings", auth: harness.serverKey, user: "dia")
            #expect(mine.json["total"].int == 1)
        }
    }

    @Test("V9: a reference that is someone else's and one that does not exist get one answer naming what was sent; guessing is limited")
    func bookingReferencesTellNothing() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(4, from: harness.clock.now())
            let booking = try await createBooking(
                client,
                harness,
                user: "alice",
                body: ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(8 * 3600)))]
            )
            let reference = try #require(booking["reference"].string)
            let id = try #require(booking["id"].int64)
            let client_ = try await harness.apiKey("seaboo-test", .client)
            let foreign = try await client.call(.get, "/api/bookings/\(reference)", auth: client_, user: "mallory")
            let unknown = try await client.call(.get, "/api/bookings/ZZZZZZZ", auth: client_, user: "mallory")
            #expect(foreign.status == .notFound && unknown.status == .notFound)
            let foreignMessage = Self.error(foreign)["message"].string ?? ""
            #expect(foreignMessage == "no booking \(reference) for this user", "\(foreignMessage)")
            #expect(!foreignMessage.contains(String(id)), "the internal id is not told")
            #expect(Self.error(unknown)["message"].string == "no booking ZZZZZZZ for this user")
            let payment = try await client.call(.post, "/api/bookings/\(reference)/card-payment", auth: client_, user: "mallory")
            #expect(payment.status != .ok && !(Self.error(payment)["message"].string ?? "").contains(String(id)), "\(payment.json)")
            // The owner still reads it by reference.
            #expect(try await client.call(.get, "/api/bookings/\(reference)", auth: client_, user: "alice").status == .ok)
            // Guessing under one key, whatever users it names, runs out of budget.
            var statuses: [HTTPResponse.Status] = []
            for n in 0..<80 {
                statuses.append(try await client.call(.get, "/api/bookings/QQQQ\(n % 10)\(n / 10 % 10)Q", auth: client_, user: "guess\(n)").status)
            }
            #expect(statuses.contains(.tooManyRequests), "\(statuses.map(\.code))")
        }
    }
}

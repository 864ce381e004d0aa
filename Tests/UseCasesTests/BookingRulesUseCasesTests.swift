import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import Testing
import UseCases

/// What a booking request may ask for, and what the operator's and the customer's later changes may
/// do, through the use cases on every backend: a boat by the day and a sunset cruise by the seat.
@Suite("Booking rules through the use cases, on every backend")
struct BookingRulesUseCasesTests {
    static func runtime() async throws -> TenantRuntime {
        let json = """
            {"id": "a", "name": "A", "currency": "EUR", "timeZone": "Europe/Rome", "holdMinutes": 30,
             "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "credits": {"types": ["c"], "reservationMinutes": 10},
             "products": [{"id": "rental.day", "kind": "booking", "type": "Consumable", "title": "Rental"},
                          {"id": "trip.seat", "kind": "booking", "type": "Consumable", "title": "Trip"}],
             "resources": [
               {"id": "boat", "kind": "rental", "name": "Gozzo", "pricePerDayMinor": 5000, "units": 1},
               {"id": "sunset", "kind": "experience", "name": "Sunset cruise", "experienceType": "cruise", "pricePerSeatMinor": 4500,
                "seatsPerSlot": 4, "slotTimes": ["17:30"], "durationMinutes": 120}
             ],
             "bookingRules": {"rentalPriceBands": [{"maxPriceMinor": 20000, "productId": "rental.day"}],
                              "experienceProducts": {"cruise": "trip.seat"}}}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        try Catalog(tenants: [tenant]).validate()
        return try await SeasonFixture.runtime(tenant)
    }

    static func local(_ text: String) -> BookingTime? { LocalDateTime.parse(text).map(BookingTime.local) }

    static func trip(_ slot: String, seats: Int) -> BookingRequest {
        BookingRequest(resourceId: "sunset", start: nil, end: nil, slot: local(slot), seats: seats)
    }

    func book(
        _ store: any Store,
        _ runtime: TenantRuntime,
        _ user: String,
        _ request: BookingRequest,
        clock: ManualClock? = nil
    ) async throws
        -> Booking
    {
        try await CreateBooking(store: store, clock: clock ?? ManualClock(SeasonFixture.now))(
            .init(runtime: runtime, userId: user, createdVia: .user(user), request: request)
        )
    }

    @Test(
        "a cruise seat is priced per seat at the local 17:30 (15:30Z in April); another hour, or more seats than the boat has, is refused",
        arguments: StoreBackend.available
    )
    func experienceSlot(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime()
        try await backend.run { store in
            let booked = try await book(store, runtime, "ana", Self.trip("2030-04-05T17:30", seats: 2))
            #expect(booked.priceMinor == 9_000 && booked.seats == 2 && booked.requiredProductId == "trip.seat")
            #expect(booked.start == Date(timeIntervalSince1970: 1_901_633_400), "17:30 in Rome on 5 April 2030 is 15:30Z")
            #expect(booked.end.timeIntervalSince(booked.start) == 2 * 3600)
            let hour = await SeasonFixture.refusal { _ = try await book(store, runtime, "bea", Self.trip("2030-04-05T10:00", seats: 1)) }
            #expect(hour == .slotNotOffered)
            let many = await SeasonFixture.refusal { _ = try await book(store, runtime, "bea", Self.trip("2030-04-05T17:30", seats: 5)) }
            #expect(many == .invalidRequest, "\(String(describing: many))")
        }
    }

    @Test("the cruise's four seats: after three are held, two more are refused and one is taken", arguments: StoreBackend.available)
    func experienceCapacity(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime()
        try await backend.run { store in
            _ = try await book(store, runtime, "ana", Self.trip("2030-04-06T17:30", seats: 3))
            let two = await SeasonFixture.refusal { _ = try await book(store, runtime, "bea", Self.trip("2030-04-06T17:30", seats: 2)) }
            #expect(two == .slotTaken)
            let one = try await book(store, runtime, "bea", Self.trip("2030-04-06T17:30", seats: 1))
            #expect(one.seats == 1)
            let next = try await book(store, runtime, "cai", Self.trip("2030-04-07T17:30", seats: 4))
            #expect(next.seats == 4, "another day's cruise has its own seats")
        }
    }

    @Test(
        "a rental must start after now, last at most 30 days, fit a product's price band and name a boat that exists",
        arguments: StoreBackend.available
    )
    func rentalRequests(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime()
        try await backend.run { store in
            func request(_ resource: String, _ start: String, _ end: String) -> BookingRequest {
                BookingRequest(resourceId: resource, start: Self.local(start), end: Self.local(end), slot: nil, seats: nil)
            }
            let past = await SeasonFixture.refusal { _ = try await book(store, runtime, "ana", request("boat", "2020-04-01", "2020-04-02")) }
            #expect(past == .invalidRequest)
            let long = await SeasonFixture.refusal { _ = try await book(store, runtime, "ana", request("boat", "2030-05-01", "2030-06-15")) }
            #expect(long == .invalidRequest)
            let dear = await SeasonFixture.refusal { _ = try await book(store, runtime, "ana", request("boat", "2030-05-01", "2030-05-06")) }
            #expect(dear == .priceAboveLimit, "five days at 50.00 is above the 200.00 band")
            let ghost = await SeasonFixture.refusal { _ = try await book(store, runtime, "ana", request("ghost", "2030-05-01", "2030-05-02")) }
            #expect(ghost == .resourceNotFound)
            let backwards = await SeasonFixture.refusal { _ = try await book(store, runtime, "ana", request("boat", "2030-05-03", "2030-05-02")) }
            #expect(backwards == .invalidRequest)
            let four = try await book(store, runtime, "ana", request("boat", "2030-05-01", "2030-05-05"))
            #expect(four.priceMinor == 20_000, "four days fit the band exactly")
            let held = try await store.read { try $0.bookings.bookings(tenantId: "a", filter: BookingFilter(), page: Page()) }
            #expect(held.total == 1, "only the valid request holds anything")
        }
    }

    @Test("a closure lifted: the day it closed takes bookings again", arguments: StoreBackend.available)
    func closureLifted(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime()
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let closures = ManageClosures(store: store, clock: clock)
            let zone = try #require(TimeZone(identifier: "Europe/Rome"))
            let start = try #require(Self.local("2030-04-20")).resolve(in: zone, field: "start")
            let end = try #require(Self.local("2030-04-21")).resolve(in: zone, field: "end")
            let made = try await closures.create(
                runtime: runtime,
                resourceId: "boat",
                start: start,
                end: end,
                reason: "engine",
                actor: .admin(keyId: 1)
            )
            let day = BookingRequest(resourceId: "boat", start: Self.local("2030-04-20"), end: Self.local("2030-04-21"), slot: nil, seats: nil)
            let closed = await SeasonFixture.refusal { _ = try await book(store, runtime, "ana", day) }
            #expect(closed == .resourceClosed)
            let cruise = try await book(store, runtime, "ana", Self.trip("2030-04-20T17:30", seats: 1))
            #expect(cruise.resourceId == "sunset", "a closure of the boat leaves the cruise open")
            try await closures.delete(runtime: runtime, id: made.closure.id, actor: .admin(keyId: 1))
            let reopened = try await book(store, runtime, "ana", day)
            #expect(reopened.resourceId == "boat")
            #expect(try await closures.list(runtime: runtime, includingDeleted: false).isEmpty)
            #expect(try await closures.list(runtime: runtime, includingDeleted: true).count == 1, "a lifted closure stays on record")
        }
    }

    @Test("an operator cannot confirm a lapsed hold whose unit someone else has taken since", arguments: StoreBackend.available)
    func confirmLapsedTaken(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime()
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let day = BookingRequest(resourceId: "boat", start: SeasonFixture.day(22), end: SeasonFixture.day(23), slot: nil, seats: nil)
            let lapsed = try await book(store, runtime, "ana", day, clock: clock)
            clock.advance(31 * 60)
            _ = try await book(store, runtime, "bea", day, clock: clock)
            let refused = await SeasonFixture.refusal {
                _ = try await AdminBookingTransition(store: store, clock: clock)(
                    lapsed.id,
                    to: .confirmed,
                    runtime: runtime,
                    actor: .admin(keyId: 1),
                    reason: nil
                )
            }
            #expect(refused != nil, "the unit is bea's now")
            let kept = try await store.read { try $0.bookings.booking(id: lapsed.id, tenantId: "a", forUpdate: false) }
            #expect(kept?.status != .confirmed)
        }
    }

    @Test(
        "credits: a reference names one reservation (another amount under it is refused); a debit beyond the balance is refused",
        arguments: StoreBackend.available
    )
    func creditRefusals(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime()
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            _ = try await AdjustCredits(store: store, clock: clock)(
                runtime,
                userId: "ana",
                creditType: nil,
                amount: 5,
                reason: "gift",
                actor: .admin(keyId: 1)
            )
            let reserve = ReserveCredits(store: store, clock: clock)
            _ = try await reserve(runtime, userId: "ana", amount: 2, creditType: nil, reference: "render-1", profileId: nil)
            let other = await SeasonFixture.refusal {
                _ = try await reserve(runtime, userId: "ana", amount: 3, creditType: nil, reference: "render-1", profileId: nil)
            }
            #expect(other == .referenceInUse)
            let sameReferenceOtherUser = try await AdjustCredits(store: store, clock: clock)(
                runtime,
                userId: "bea",
                creditType: nil,
                amount: 5,
                reason: "gift",
                actor: .admin(keyId: 1)
            )
            #expect(sameReferenceOtherUser.credits.balance == 5)
            let beas = try await reserve(runtime, userId: "bea", amount: 3, creditType: nil, reference: "render-1", profileId: nil)
            #expect(!beas.repeated, "a reference is one user's: another user's is their own")
            let debit = await SeasonFixture.refusal {
                _ = try await AdjustCredits(store: store, clock: clock)(
                    runtime,
                    userId: "ana",
                    creditType: nil,
                    amount: -50,
                    reason: "x",
                    actor: .admin(keyId: 1)
                )
            }
            #expect(debit != nil, "a balance does not go below zero unless the tenant allows it")
            let amounts = await SeasonFixture.refusal {
                _ = try await reserve(runtime, userId: "ana", amount: 0, creditType: nil, reference: nil, profileId: nil)
            }
            #expect(amounts == .invalidField)
        }
    }

    @Test("API keys: a key narrowed to some scopes keeps only them; a revoked or unknown key is not found", arguments: StoreBackend.available)
    func keyScopesAndUnknown(backend: StoreBackend) async throws {
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let narrowed = try await CreateAPIKey(store: store)(tenantId: "a", role: .server, scopes: [.read], name: "reports", now: clock.now())
            #expect(narrowed.key.scopes == [.read])
            let unknown = await SeasonFixture.refusal { _ = try await RevokeAPIKey(store: store)(id: 424_242, tenantId: "a", now: clock.now()) }
            #expect(unknown == .keyNotFound)
            _ = try await RevokeAPIKey(store: store)(id: narrowed.key.id, tenantId: "a", now: clock.now())
            let rotateRevoked = await SeasonFixture.refusal {
                _ = try await RotateAPIKey(store: store)(id: narrowed.key.id, tenantId: "a", overlap: nil, now: clock.now())
            }
            #expect(rotateRevoked == .invalidTransition, "a revoked key is not rotated")
        }
    }
}

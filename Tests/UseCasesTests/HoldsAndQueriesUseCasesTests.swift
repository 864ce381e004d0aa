import AppleSignedData
import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import TestKit
import Testing
import UseCases

/// What keeps one customer from holding the fleet, what an operator may move where, and the reads
/// an app and an operator make of subscriptions and credit packs, on every backend.
@Suite("Holds, moves between boats and queries through the use cases, on every backend")
struct HoldsAndQueriesUseCasesTests {
    static func fleet(holdsPerUser: Int) async throws -> TenantRuntime {
        let json = """
            {"id": "a", "name": "A", "currency": "EUR", "timeZone": "Europe/Rome", "holdMinutes": 30,
             "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "limits": {"pendingHoldsPerUser": \(holdsPerUser)},
             "products": [{"id": "rental.day", "kind": "booking", "type": "Consumable", "title": "Rental"}],
             "resources": [{"id": "gozzo", "kind": "rental", "name": "Gozzo", "pricePerDayMinor": 5000, "units": 5},
                           {"id": "rib", "kind": "rental", "name": "RIB", "pricePerDayMinor": 6000, "units": 1}],
             "bookingRules": {"rentalPriceBands": [{"maxPriceMinor": 1000000, "productId": "rental.day"}], "experienceProducts": {}}}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        try Catalog(tenants: [tenant]).validate()
        return try await SeasonFixture.runtime(tenant)
    }

    static func day(_ resource: String, _ day: Int) -> BookingRequest {
        BookingRequest(resourceId: resource, start: SeasonFixture.day(day), end: SeasonFixture.day(day + 1), slot: nil, seats: nil)
    }

    @Test(
        "one customer keeps at most pendingHoldsPerUser unpaid holds; another customer is not counted against them",
        arguments: StoreBackend.available
    )
    func holdsPerUser(backend: StoreBackend) async throws {
        let runtime = try await Self.fleet(holdsPerUser: 2)
        try await backend.run { store in
            let create = CreateBooking(store: store, clock: ManualClock(SeasonFixture.now))
            for day in [2, 3] {
                _ = try await create(.init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: Self.day("gozzo", day)))
            }
            let third = await SeasonFixture.refusal {
                _ = try await create(.init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: Self.day("gozzo", 4)))
            }
            #expect(third == .tooManyPendingBookings)
            let other = try await create(.init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: Self.day("gozzo", 4)))
            #expect(other.userId == "bea")
        }
    }

    @Test(
        "an operator moves a booking to another boat sold by the same product; the customer may not choose the boat",
        arguments: StoreBackend.available
    )
    func operatorMovesBoat(backend: StoreBackend) async throws {
        let runtime = try await Self.fleet(holdsPerUser: 3)
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let booking = try await CreateBooking(store: store, clock: clock)(
                .init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: Self.day("gozzo", 6))
            )
            let move = MoveBooking(store: store, clock: clock)
            let byCustomer = await SeasonFixture.refusal {
                _ = try await move(
                    .init(
                        runtime: runtime,
                        bookingId: booking.id,
                        userId: "ana",
                        actor: .user("ana"),
                        start: SeasonFixture.day(6),
                        end: SeasonFixture.day(7),
                        resourceId: "rib"
                    )
                )
            }
            #expect(byCustomer != nil, "a customer's move keeps the boat")
            let moved = try await move(
                .init(
                    runtime: runtime,
                    bookingId: booking.id,
                    userId: nil,
                    actor: .admin(keyId: 1),
                    start: SeasonFixture.day(6),
                    end: SeasonFixture.day(7),
                    resourceId: "rib"
                )
            )
            #expect(moved.booking.resourceId == "rib")
            let taken = await SeasonFixture.refusal {
                _ = try await CreateBooking(store: store, clock: clock)(
                    .init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: Self.day("rib", 6))
                )
            }
            #expect(taken == .slotTaken, "the RIB's one unit is the moved booking's now")
        }
    }

    @Test(
        "a user's subscriptions: listed for their owner, found by id for them and for an operator, not found for another user",
        arguments: StoreBackend.available
    )
    func subscriptionQueries(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let transaction = TransactionPayload.testPurchase(
                bundleId: PurchaseFixture.bundleId,
                productId: "premium.monthly",
                transactionId: "2000000000000801",
                type: .autoRenewableSubscription,
                purchaseDate: PurchaseFixture.now,
                expiresDate: PurchaseFixture.now.addingTimeInterval(30 * 86_400)
            )
            _ = try await services.pay(
                runtime,
                user: "ana",
                booking: nil,
                jws: try PurchaseFixture.signing.ca.signTransaction(transaction),
                product: "premium.monthly"
            )
            let queries = SubscriptionQueries(store: store, clock: services.clock, logger: Logger(label: "use-cases-test"))
            let listed = try await queries.list(runtime: runtime, userId: "ana", page: Page())
            #expect(listed.items.map(\.subscription.originalTransactionId) == ["2000000000000801"])
            #expect(try await queries.list(runtime: runtime, userId: "bea", page: Page()).total == 0)
            let mine = try await queries.subscription(runtime: runtime, originalTransactionId: "2000000000000801", userId: "ana")
            #expect(mine.subscription.productId == "premium.monthly")
            let byOperator = try await queries.subscription(runtime: runtime, originalTransactionId: "2000000000000801", userId: nil)
            #expect(byOperator.subscription.userId == "ana")
            let stranger = await SeasonFixture.refusal {
                _ = try await queries.subscription(runtime: runtime, originalTransactionId: "2000000000000801", userId: "bea")
            }
            #expect(stranger != nil, "another user's subscription is not found")
        }
    }

    @Test("an operator's credit packs: listed, and their sales counted in the period", arguments: StoreBackend.available)
    func creditPackReports(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            _ = try await CreateCreditProduct(store: store, clock: services.clock)(
                runtime,
                productId: "pack25",
                fields: CreditProductFields(creditType: "c", credits: 25, title: "Twenty-five"),
                actor: .admin(keyId: 1)
            )
            for (user, id) in [("mai", "2000000000000802"), ("noa", "2000000000000803")] {
                let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("pack25", id: id))
                _ = try await services.pay(runtime, user: user, booking: nil, jws: jws, product: "pack25")
            }
            let reports = CreditReports(store: store, clock: services.clock)
            #expect(try await reports.products(runtime).map(\.productId) == ["pack25"])
            let stats = try await reports.stats(runtime, from: nil, to: nil)
            let pack = try #require(stats.first { $0.productId == "pack25" })
            #expect(pack.purchases == 2 && pack.creditsGranted == 50, "\(pack)")
        }
    }
}

import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import Testing
import UseCases

/// The reads behind the operators' pages and the app's booking screens, as use cases (no route
/// reaches the store): ownership, references, the manifest's day, the search, on every backend.
@Suite("Operator and booking queries through the use cases, on every backend")
struct OperatorQueriesUseCasesTests {
    static func day(_ day: Int) -> BookingRequest {
        BookingRequest(resourceId: "boat", start: SeasonFixture.day(day), end: SeasonFixture.day(day + 1), slot: nil, seats: nil)
    }

    @Test(
        "a user reads their own booking and list; another user's booking is nil, not theirs; a reference names the id within its tenant only",
        arguments: StoreBackend.available
    )
    func ownershipAndReferences(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant(units: 2))
        try await backend.run { store in
            let create = CreateBooking(store: store, clock: ManualClock(SeasonFixture.now))
            let ana = try await create(.init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: Self.day(3)))
            let bea = try await create(.init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: Self.day(3)))
            let queries = BookingQueries(store: store)

            let own = try #require(try await queries.own(ana.id, tenantId: "a", userId: "ana"))
            #expect(own.booking.id == ana.id && own.booking.userId == "ana" && own.cardPayment == nil)
            #expect(try await queries.own(bea.id, tenantId: "a", userId: "ana") == nil, "bea's booking is not ana's to read")
            #expect(try await queries.own(ana.id, tenantId: "other", userId: "ana") == nil, "another tenant sees nothing")

            let listed = try await queries.list(tenantId: "a", userId: "ana", page: Page())
            #expect(listed.total == 1 && listed.items.map(\.id) == [ana.id])

            let lookup = BookingLookup(store: store)
            #expect(!ana.reference.isEmpty)
            #expect(try await lookup.id(reference: ana.reference, tenantId: "a") == ana.id)
            #expect(try await lookup.id(reference: ana.reference, tenantId: "other") == nil)
            #expect(try await queries.cardPayments(of: ana.id, tenantId: "a")?.isEmpty == true)
            #expect(try await queries.cardPayments(of: ana.id + bea.id + 1, tenantId: "a") == nil, "no such booking: nil, not an empty list")
        }
    }

    @Test(
        "the manifest of a day lists who sails that day and nobody from the day after; a text that is not a day is refused",
        arguments: StoreBackend.available
    )
    func manifestOfTheDay(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant(units: 2))
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let create = CreateBooking(store: store, clock: clock)
            let sailing = try await create(.init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: Self.day(3)))
            let later = try await create(.init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: Self.day(5)))
            let views = OperatorViewQueries(store: store, clock: clock, logger: Logger(label: "use-cases-test"))
            let date = "2030-04-03"  // SeasonFixture.day(3), Rome's local day
            let manifest = try await views.manifest(runtime, date: date, resourceId: nil)
            let listed = manifest.resources.flatMap { $0.slots.flatMap { $0.entries.map(\.booking.id) } }
            #expect(listed.contains(sailing.id) && !listed.contains(later.id), "\(date): \(listed)")
            let refused = await SeasonFixture.refusal { _ = try await views.manifest(runtime, date: "tomorrow", resourceId: nil) }
            #expect(refused == .invalidRequest)
        }
    }

    @Test(
        "the search finds a booking by its reference; a query shaped like an Apple order number is not sent anywhere without the App Store Server API",
        arguments: StoreBackend.available
    )
    func search(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant(units: 2))
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let booking = try await CreateBooking(store: store, clock: clock)(
                .init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: Self.day(3))
            )
            let views = OperatorViewQueries(store: store, clock: clock, logger: Logger(label: "use-cases-test"))
            let found = try await views.search(runtime, text: booking.reference)
            #expect(found.hits.contains { $0.bookingId == booking.id })
            #expect(found.appleOrderLookup == nil, "a booking reference is not an order number")
            let order = try await views.search(runtime, text: "MK5TTTVWJH")
            #expect(order.appleOrderLookup == "not_configured" && order.hits.isEmpty)
        }
    }
}

import AsyncHTTPClient
import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import Synchronization
import Testing
import UseCases

/// A clock the test moves (never the wall clock).
final class ManualClock: BerthClock {
    private let current: Mutex<Date>
    init(_ start: Date) { current = Mutex(start) }
    func now() -> Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// A tenant built in code (never the shipped products.json): one boat for rent by the day, in Rome,
/// a 30-minute hold, and credits of one type.
enum SeasonFixture {
    static let now = StoreBackend.now

    static func tenant(units: Int = 1) throws -> Tenant {
        let json = """
            {"id": "a", "name": "A", "currency": "EUR", "timeZone": "Europe/Rome", "holdMinutes": 30,
             "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "credits": {"types": ["c"], "reservationMinutes": 10},
             "products": [{"id": "rental.day", "kind": "booking", "type": "Consumable", "title": "Rental"}],
             "resources": [{"id": "boat", "kind": "rental", "name": "Gozzo", "pricePerDayMinor": 5000, "units": \(units)}],
             "bookingRules": {"rentalPriceBands": [{"maxPriceMinor": 1000000, "productId": "rental.day"}], "experienceProducts": {}}}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        try Catalog(tenants: [tenant]).validate()
        return tenant
    }

    static func runtime(_ tenant: Tenant) async throws -> TenantRuntime {
        try await TenantRuntime(
            tenant: tenant,
            baseDirectory: FileManager.default.temporaryDirectory,
            environment: [:],
            clock: ManualClock(now),
            httpClient: .shared,
            logger: Logger(label: "use-cases-test")
        )
    }

    /// A local date in Rome in April 2030 (after the suite's now).
    static func day(_ day: Int) -> BookingTime? {
        LocalDateTime.parse("2030-04-" + (day < 10 ? "0" : "") + String(day)).map(BookingTime.local)
    }

    /// A rental of `days` whole local days from 1 + `dayOffset` April 2030.
    static func rental(dayOffset: Int, days: Int = 1) -> BookingRequest {
        BookingRequest(resourceId: "boat", start: day(1 + dayOffset), end: day(1 + dayOffset + days), slot: nil, seats: nil)
    }

    /// The refusal's code, or nil when `body` did not throw a DomainError.
    static func refusal(_ body: () async throws -> Void) async -> ErrorCode? {
        do {
            try await body()
            return nil
        } catch let error as DomainError {
            return error.code
        } catch {
            return nil
        }
    }
}

@Suite("Bookings and credits through their use cases, on every backend")
struct BookingAndCreditUseCasesTests {
    @Test(
        "a rental is priced from the catalog and held for holdMinutes; the same unit's overlapping day is refused",
        arguments: StoreBackend.available
    )
    func createAndOverlap(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant())
        try await backend.run { store in
            let create = CreateBooking(store: store, clock: ManualClock(SeasonFixture.now))
            let booking = try await create(
                .init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: SeasonFixture.rental(dayOffset: 0, days: 2))
            )
            #expect(booking.status == .pendingPayment)
            #expect(booking.priceMinor == 10_000 && booking.currency == "EUR" && booking.requiredProductId == "rental.day")
            #expect(booking.holdExpiresAt == SeasonFixture.now.addingTimeInterval(30 * 60))
            let overlap = await SeasonFixture.refusal {
                _ = try await create(
                    .init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: SeasonFixture.rental(dayOffset: 1))
                )
            }
            #expect(overlap == .slotTaken, "\(String(describing: overlap))")
            // The day after the rental ends is free.
            let next = try await create(.init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: SeasonFixture.rental(dayOffset: 2)))
            #expect(next.status == .pendingPayment)
        }
    }

    @Test("an Idempotency-Key answers the booking it made; the same key for another day is refused", arguments: StoreBackend.available)
    func idempotencyKey(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant(units: 5))
        try await backend.run { store in
            let create = CreateBooking(store: store, clock: ManualClock(SeasonFixture.now))
            let command = CreateBooking.Command(
                runtime: runtime,
                userId: "ana",
                createdVia: .user("ana"),
                request: SeasonFixture.rental(dayOffset: 3),
                idempotencyKey: "k1"
            )
            let first = try await create.create(command)
            let again = try await create.create(command)
            #expect(!first.repeated && again.repeated && again.booking.id == first.booking.id)
            var other = command
            other.request = SeasonFixture.rental(dayOffset: 4)
            let refused = await SeasonFixture.refusal { _ = try await create.create(other) }
            #expect(refused == .referenceInUse)
            let held = try await store.read { try $0.bookings.bookings(tenantId: "a", filter: BookingFilter(), page: Page()) }
            #expect(held.total == 1, "one booking for one key")
        }
    }

    @Test("a hold that lapsed frees its unit: the same day is taken by someone else after holdMinutes", arguments: StoreBackend.available)
    func lapsedHold(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant())
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let create = CreateBooking(store: store, clock: clock)
            _ = try await create(.init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: SeasonFixture.rental(dayOffset: 5)))
            clock.advance(29 * 60)
            let early = await SeasonFixture.refusal {
                _ = try await create(.init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: SeasonFixture.rental(dayOffset: 5)))
            }
            #expect(early == .slotTaken)
            clock.advance(2 * 60)
            let taken = try await create(
                .init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: SeasonFixture.rental(dayOffset: 5))
            )
            #expect(taken.userId == "bea")
        }
    }

    @Test(
        "an operator confirms a held booking and cancels it with a reason, each audited; a cancelled booking cannot be confirmed",
        arguments: StoreBackend.available
    )
    func operatorTransitions(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant())
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let booking = try await CreateBooking(store: store, clock: clock)(
                .init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: SeasonFixture.rental(dayOffset: 6))
            )
            let transition = AdminBookingTransition(store: store, clock: clock)
            let confirmed = try await transition(booking.id, to: .confirmed, runtime: runtime, actor: .admin(keyId: 1), reason: nil)
            #expect(confirmed.status == .confirmed && confirmed.confirmedAt == SeasonFixture.now)
            let cancelled = try await transition(booking.id, to: .cancelled, runtime: runtime, actor: .admin(keyId: 1), reason: "storm")
            #expect(cancelled.status == .cancelled && cancelled.statusReason == "storm")
            let again = await SeasonFixture.refusal {
                _ = try await transition(booking.id, to: .confirmed, runtime: runtime, actor: .admin(keyId: 1), reason: nil)
            }
            #expect(again == .invalidTransition)
            let audit = try await store.read { try $0.audit.audit(tenantId: "a", bookingId: booking.id, page: Page()) }
            #expect(audit.items.count >= 3, "created, confirmed, cancelled: \(audit.items.map(\.action))")
            let missing = await SeasonFixture.refusal {
                _ = try await transition(999_999, to: .confirmed, runtime: runtime, actor: .admin(keyId: 1), reason: nil)
            }
            #expect(missing == .bookingNotFound)
        }
    }

    @Test("a customer moves their booking to a free day; onto a taken day it is refused and stays where it was", arguments: StoreBackend.available)
    func move(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant())
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let create = CreateBooking(store: store, clock: clock)
            let mine = try await create(.init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: SeasonFixture.rental(dayOffset: 8)))
            _ = try await create(.init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: SeasonFixture.rental(dayOffset: 10)))
            let move = MoveBooking(store: store, clock: clock)
            let moved = try await move(
                .init(
                    runtime: runtime,
                    bookingId: mine.id,
                    userId: "ana",
                    actor: .user("ana"),
                    start: SeasonFixture.day(10),
                    end: SeasonFixture.day(11)
                )
            )
            #expect(moved.booking.id == mine.id && moved.booking.start > mine.start)
            let onto = await SeasonFixture.refusal {
                _ = try await move(
                    .init(
                        runtime: runtime,
                        bookingId: mine.id,
                        userId: "ana",
                        actor: .user("ana"),
                        start: SeasonFixture.day(11),
                        end: SeasonFixture.day(12)
                    )
                )
            }
            #expect(onto == .slotTaken)
            let stored = try #require(try await store.read { try $0.bookings.booking(id: mine.id, tenantId: "a", forUpdate: false) })
            #expect(stored.start == moved.booking.start, "a refused move leaves the booking where it was")
            let stranger = await SeasonFixture.refusal {
                _ = try await move(
                    .init(
                        runtime: runtime,
                        bookingId: mine.id,
                        userId: "eve",
                        actor: .user("eve"),
                        start: SeasonFixture.day(20),
                        end: SeasonFixture.day(21)
                    )
                )
            }
            #expect(stranger == .bookingNotFound, "another user's booking is not found")
        }
    }

    @Test("a storm closes the port: a closure names the bookings inside it and admits no new booking there", arguments: StoreBackend.available)
    func closure(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant(units: 3))
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let create = CreateBooking(store: store, clock: clock)
            let inside = try await create(
                .init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: SeasonFixture.rental(dayOffset: 12))
            )
            let request = SeasonFixture.rental(dayOffset: 12)
            let zone = try #require(TimeZone(identifier: "Europe/Rome"))
            let start = try #require(request.start).resolve(in: zone, field: "start")
            let end = try #require(request.end).resolve(in: zone, field: "end")
            let made = try await ManageClosures(store: store, clock: clock).create(
                runtime: runtime,
                resourceId: nil,
                start: start,
                end: end,
                reason: "storm",
                actor: .admin(keyId: 1)
            )
            #expect(made.bookingsInside.map(\.id) == [inside.id])
            let refused = await SeasonFixture.refusal {
                _ = try await create(.init(runtime: runtime, userId: "bea", createdVia: .user("bea"), request: request))
            }
            #expect(refused == .resourceClosed)
            let listed = try await ManageClosures(store: store, clock: clock).list(runtime: runtime, includingDeleted: false)
            #expect(listed.count == 1 && listed.first?.closure.reason == "storm")
        }
    }

    @Test("credits: a grant, a reservation holds part of it, a commit spends it once, a release gives it back", arguments: StoreBackend.available)
    func reserveCommitRelease(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant())
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let granted = try await AdjustCredits(store: store, clock: clock)(
                runtime,
                userId: "ana",
                creditType: nil,
                amount: 10,
                reason: "welcome",
                actor: .admin(keyId: 1)
            )
            #expect(granted.credits.balance == 10 && granted.credits.held == 0)
            let reserve = ReserveCredits(store: store, clock: clock)
            let held = try await reserve(runtime, userId: "ana", amount: 4, creditType: nil, reference: "job-1", profileId: nil)
            #expect(held.credits.balance == 10 && held.credits.held == 4 && held.credits.available == 6 && !held.repeated)
            let retried = try await reserve(runtime, userId: "ana", amount: 4, creditType: nil, reference: "job-1", profileId: nil)
            #expect(retried.repeated && retried.reservation.id == held.reservation.id && retried.credits.held == 4)
            let commit = CommitReservation(store: store, clock: clock)
            let spent = try await commit(runtime, userId: "ana", reservationId: held.reservation.id, actor: .user("ana"))
            #expect(spent.credits.balance == 6 && spent.credits.held == 0)
            let twice = try await commit(runtime, userId: "ana", reservationId: held.reservation.id, actor: .user("ana"))
            #expect(twice.credits.balance == 6, "a second commit spends nothing")
            let second = try await reserve(runtime, userId: "ana", amount: 5, creditType: nil, reference: "job-2", profileId: nil)
            let released = try await ReleaseReservation(store: store, clock: clock)(runtime, userId: "ana", reservationId: second.reservation.id)
            #expect(released.credits.balance == 6 && released.credits.held == 0)
            let stranger = await SeasonFixture.refusal {
                _ = try await commit(runtime, userId: "eve", reservationId: second.reservation.id, actor: .user("eve"))
            }
            #expect(stranger == .reservationNotFound, "another user's reservation is not found")
        }
    }

    @Test(
        "credits: a reservation beyond the balance is refused with the balance; one past its minutes has expired",
        arguments: StoreBackend.available
    )
    func insufficientAndExpired(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant())
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            _ = try await AdjustCredits(store: store, clock: clock)(
                runtime,
                userId: "ana",
                creditType: "c",
                amount: 3,
                reason: "welcome",
                actor: .admin(keyId: 1)
            )
            let reserve = ReserveCredits(store: store, clock: clock)
            do {
                _ = try await reserve(runtime, userId: "ana", amount: 4, creditType: nil, reference: nil, profileId: nil)
                Issue.record("4 credits reserved from a balance of 3")
            } catch let error as DomainError {
                #expect(error.code == .insufficientCredits && error.credits?.balance == 3)
            }
            let held = try await reserve(runtime, userId: "ana", amount: 3, creditType: nil, reference: nil, profileId: nil)
            clock.advance(11 * 60)
            let late = await SeasonFixture.refusal {
                _ = try await CommitReservation(store: store, clock: clock)(
                    runtime,
                    userId: "ana",
                    reservationId: held.reservation.id,
                    actor: .user("ana")
                )
            }
            #expect(late == .reservationNotHeld, "\(String(describing: late))")
            let again = try await reserve(runtime, userId: "ana", amount: 3, creditType: nil, reference: nil, profileId: nil)
            #expect(again.credits.held == 3, "the expired hold gave its credits back")
        }
    }

    @Test("credits: an operator's adjustment is bounded, audited, and refused for an unknown credit type", arguments: StoreBackend.available)
    func adjustments(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant())
        try await backend.run { store in
            let adjust = AdjustCredits(store: store, clock: ManualClock(SeasonFixture.now))
            for amount: Int64 in [0, 1_000_001, -1_000_001, .min] {
                let refused = await SeasonFixture.refusal {
                    _ = try await adjust(runtime, userId: "ana", creditType: nil, amount: amount, reason: "x", actor: .admin(keyId: 1))
                }
                #expect(refused == .invalidField, "amount \(amount)")
            }
            let unknown = await SeasonFixture.refusal {
                _ = try await adjust(runtime, userId: "ana", creditType: "gold", amount: 5, reason: "x", actor: .admin(keyId: 1))
            }
            #expect(unknown != nil, "an unknown credit type is refused")
            _ = try await adjust(runtime, userId: "ana", creditType: nil, amount: 7, reason: "goodwill", actor: .admin(keyId: 2))
            let audit = try await store.read { try $0.audit.audit(tenantId: "a", bookingId: nil, page: Page()) }
            #expect(audit.items.contains { $0.action == AuditAction.creditsAdjusted.rawValue && ($0.detail ?? "").contains("goodwill") })
        }
    }
}

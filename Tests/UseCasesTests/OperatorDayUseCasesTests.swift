import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import TestKit
import Testing
import UseCases

/// The operator's day through the use cases, on every backend: a storm closes the port and its
/// bookings are cancelled or moved in one action, memberships paid elsewhere, what a new user is
/// given, what a cancellation owes.
@Suite("The operator's day through the use cases, on every backend")
struct OperatorDayUseCasesTests {
    /// The closure of 24 April 2030 (local, Rome) on every resource.
    static func storm(_ store: any Store, _ runtime: TenantRuntime, clock: ManualClock) async throws -> Closure {
        let zone = try #require(TimeZone(identifier: "Europe/Rome"))
        let start = try #require(SeasonFixture.day(24)).resolve(in: zone, field: "start")
        let end = try #require(SeasonFixture.day(25)).resolve(in: zone, field: "end")
        return try await ManageClosures(store: store, clock: clock).create(
            runtime: runtime,
            resourceId: nil,
            start: start,
            end: end,
            reason: "storm",
            actor: .admin(keyId: 1)
        ).closure
    }

    @Test(
        "a storm: cancelling inside the closure cancels the unpaid booking and leaves the App Store-paid one cancelled and owed; run again, nothing is left",
        arguments: StoreBackend.available
    )
    func stormCancels(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let paid = try await services.book(runtime, user: "ana", day: 24)
            let unpaid = try await services.book(runtime, user: "bea", day: 24)
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("rental.day", id: "2000000000000701"))
            _ = try await services.pay(runtime, user: "ana", booking: paid.id, jws: jws)
            let closure = try await Self.storm(store, runtime, clock: services.clock)
            let closures = ManageClosures(store: store, clock: services.clock)
            let transition = AdminBookingTransition(store: store, clock: services.clock)
            let (_, resolved) = try await closures.cancelInside(
                runtime: runtime,
                id: closure.id,
                actor: .admin(keyId: 1),
                refund: nil,
                cancel: transition
            )
            let outcomes = Dictionary(resolved.map { ($0.booking.id, $0.outcome) }, uniquingKeysWith: { first, _ in first })
            #expect(outcomes[paid.id] == .cancelledOwed && outcomes[unpaid.id] == .cancelled, "\(outcomes)")
            let owed = try await OwedToCustomers(store: store, clock: services.clock).list(runtime: runtime, resolved: false)
            #expect(owed.map(\.booking.id) == [paid.id], "only the paid booking is owed")
            let (_, again) = try await closures.cancelInside(
                runtime: runtime,
                id: closure.id,
                actor: .admin(keyId: 1),
                refund: nil,
                cancel: transition
            )
            #expect(
                again.allSatisfy { $0.outcome != .cancelled && $0.outcome != .cancelledOwed },
                "nothing is cancelled twice: \(again.map(\.outcome))"
            )
        }
    }

    @Test(
        "a storm: the operator moves a customer's booking out of the closure to the day they accepted; a booking outside it is not moved",
        arguments: StoreBackend.available
    )
    func stormMoves(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let inside = try await services.book(runtime, user: "ana", day: 24)
            let outside = try await services.book(runtime, user: "bea", day: 27)
            let closure = try await Self.storm(store, runtime, clock: services.clock)
            let (_, resolved) = try await ManageClosures(store: store, clock: services.clock).moveInside(
                runtime: runtime,
                id: closure.id,
                actor: .admin(keyId: 1),
                moves: [.init(bookingId: inside.id, start: SeasonFixture.day(26), end: SeasonFixture.day(27), slot: nil, resourceId: nil)],
                move: MoveBooking(store: store, clock: services.clock)
            )
            #expect(resolved.map(\.outcome) == [.moved])
            let moved = try #require(try await services.booking(inside.id))
            #expect(moved.start > inside.start && moved.status == .pendingPayment)
            let refused = await SeasonFixture.refusal {
                _ = try await ManageClosures(store: store, clock: services.clock).moveInside(
                    runtime: runtime,
                    id: closure.id,
                    actor: .admin(keyId: 1),
                    moves: [.init(bookingId: outside.id, start: SeasonFixture.day(28), end: SeasonFixture.day(29), slot: nil, resourceId: nil)],
                    move: MoveBooking(store: store, clock: services.clock)
                )
            }
            #expect(refused != nil, "a booking the closure does not cover is refused")
            #expect(try await services.booking(outside.id)?.start == outside.start)
        }
    }

    @Test("an operator cancels an unpaid booking: nothing is owed to its customer", arguments: StoreBackend.available)
    func unpaidCancelOwesNothing(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let booking = try await services.book(runtime, user: "ana", day: 26)
            _ = try await AdminBookingTransition(store: store, clock: services.clock)(
                booking.id,
                to: .cancelled,
                runtime: runtime,
                actor: .admin(keyId: 1),
                reason: "customer called"
            )
            #expect(try await OwedToCustomers(store: store, clock: services.clock).list(runtime: runtime, resolved: false).isEmpty)
        }
    }

    @Test("a membership paid elsewhere is the user's until it expires; another user has none", arguments: StoreBackend.available)
    func membership(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let until = PurchaseFixture.now.addingTimeInterval(7 * 86_400)
            let recorded = try await RecordMembership(store: store, clock: services.clock, logger: Logger(label: "use-cases-test"))(
                runtime: runtime,
                userId: "ana",
                payMethod: "bank",
                tier: "standard",
                cycle: "month",
                expiresAt: until,
                autoRenew: false,
                actor: .admin(keyId: 1)
            )
            #expect(recorded.userId == "ana" && recorded.payMethod == "bank")
            let entitlements = UserEntitlements(store: store, clock: services.clock)
            #expect(try await entitlements(runtime: runtime, userId: "ana").membership?.tier == "standard")
            #expect(try await entitlements(runtime: runtime, userId: "bea").membership == nil)
        }
    }

    @Test("a new user's signup bonus is given once, however many reads race for it", arguments: StoreBackend.available)
    func signupBonusOnce(backend: StoreBackend) async throws {
        let json = """
            {"id": "a", "name": "A", "currency": "EUR",
             "apple": {"bundleId": "com.example.a", "environments": ["Sandbox"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "credits": {"types": ["c"], "signupBonus": {"creditType": "c", "amount": 3}},
             "products": [], "resources": []}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        let runtime = try await SeasonFixture.runtime(tenant)
        try await backend.run { store in
            let queries = CreditQueries(store: store, clock: ManualClock(SeasonFixture.now))
            let balances = try await withThrowingTaskGroup(of: Int64.self) { group in
                for _ in 0..<6 {
                    group.addTask { try await queries.balances(runtime, userId: "new").first { $0.creditType == "c" }?.balance ?? -1 }
                }
                return try await group.reduce(into: [Int64]()) { $0.append($1) }
            }
            #expect(balances.allSatisfy { $0 == 3 }, "\(balances)")
            let history = try await queries.history(runtime, userId: "new", filter: LedgerFilter(), page: Page())
            #expect(history.items.filter { $0.type == .bonus }.count == 1, "one bonus entry")
        }
    }

    @Test("a reservation released twice gives its credits back once", arguments: StoreBackend.available)
    func releaseTwice(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant())
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            _ = try await AdjustCredits(store: store, clock: clock)(
                runtime,
                userId: "ana",
                creditType: nil,
                amount: 4,
                reason: "gift",
                actor: .admin(keyId: 1)
            )
            let held = try await ReserveCredits(store: store, clock: clock)(
                runtime,
                userId: "ana",
                amount: 4,
                creditType: nil,
                reference: nil,
                profileId: nil
            )
            let release = ReleaseReservation(store: store, clock: clock)
            let first = try await release(runtime, userId: "ana", reservationId: held.reservation.id)
            #expect(first.credits.available == 4)
            do {
                let second = try await release(runtime, userId: "ana", reservationId: held.reservation.id)
                #expect(second.credits.available == 4 && second.credits.balance == 4, "a second release gives nothing more")
            } catch let error as DomainError {
                #expect(error.code == .reservationNotHeld)
            }
            let spend = await SeasonFixture.refusal {
                _ = try await CommitReservation(store: store, clock: clock)(
                    runtime,
                    userId: "ana",
                    reservationId: held.reservation.id,
                    actor: .user("ana")
                )
            }
            #expect(spend == .reservationNotHeld, "a released reservation cannot be spent")
        }
    }
}

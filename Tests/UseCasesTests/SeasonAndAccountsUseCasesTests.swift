import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import TestKit
import Testing
import UseCases

/// The season changing while Berth runs (boats added, prices changed, boats retired), what is owed
/// to customers, API keys and consents, through their use cases on every backend.
@Suite("The season, money owed, keys and consents through their use cases, on every backend")
struct SeasonAndAccountsUseCasesTests {
    static func resource(_ json: String) throws -> Resource {
        try JSONDecoder().decode(Resource.self, from: Data(json.utf8))
    }

    static let rib = #"{"id": "rib", "kind": "rental", "name": "RIB", "pricePerDayMinor": 12000, "units": 1}"#

    func inventory(_ store: any Store, _ registry: TenantRegistry, _ clock: ManualClock) -> ManageInventory {
        ManageInventory(store: store, tenants: registry, clock: clock, logger: Logger(label: "use-cases-test"))
    }

    @Test(
        "a boat added mid-season is bookable at once; a second with its id is refused; retired, it takes no new booking and keeps its own",
        arguments: StoreBackend.available
    )
    func addAndRetire(backend: StoreBackend) async throws {
        let registry = TenantRegistry([try await SeasonFixture.runtime(try SeasonFixture.tenant())])
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let manage = inventory(store, registry, clock)
            let runtime = try #require(registry.tenants["a"])
            let added = try await manage.create(runtime: runtime, resource: try Self.resource(Self.rib), actor: .admin(keyId: 1))
            #expect(added.resource.id == "rib")
            let twice = await SeasonFixture.refusal {
                _ = try await manage.create(runtime: runtime, resource: try Self.resource(Self.rib), actor: .admin(keyId: 1))
            }
            #expect(twice == .resourceExists)
            let live = try #require(registry.tenants["a"])
            #expect(live.tenant.resource(id: "rib") != nil, "the registry serves the new boat without a restart")
            let create = CreateBooking(store: store, clock: clock)
            let request = BookingRequest(resourceId: "rib", start: SeasonFixture.day(3), end: SeasonFixture.day(4), slot: nil, seats: nil)
            let booked = try await create(.init(runtime: live, userId: "ana", createdVia: .user("ana"), request: request))
            #expect(booked.priceMinor == 12_000)
            _ = try await manage.retire(runtime: live, id: "rib", actor: .admin(keyId: 1))
            let retired = try #require(registry.tenants["a"])
            let later = BookingRequest(resourceId: "rib", start: SeasonFixture.day(6), end: SeasonFixture.day(7), slot: nil, seats: nil)
            let refused = await SeasonFixture.refusal {
                _ = try await create(.init(runtime: retired, userId: "bea", createdVia: .user("bea"), request: later))
            }
            #expect(refused == .resourceRetired)
            let kept = try await store.read { try $0.bookings.booking(id: booked.id, tenantId: "a", forUpdate: false) }
            #expect(kept?.status == .pendingPayment, "a retired boat's bookings stay")
        }
    }

    @Test("August prices: a changed price applies to new bookings; a booking made before keeps its price", arguments: StoreBackend.available)
    func priceChange(backend: StoreBackend) async throws {
        let registry = TenantRegistry([try await SeasonFixture.runtime(try SeasonFixture.tenant(units: 3))])
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let manage = inventory(store, registry, clock)
            let create = CreateBooking(store: store, clock: clock)
            let before = try await create(
                .init(
                    runtime: try #require(registry.tenants["a"]),
                    userId: "ana",
                    createdVia: .user("ana"),
                    request: SeasonFixture.rental(dayOffset: 2)
                )
            )
            #expect(before.priceMinor == 5_000)
            // The catalog's boat into the stored inventory, as `berth inventory import` puts it.
            _ = try await manage.put(
                tenant: try #require(registry.tenants["a"]).tenant,
                resource: try SeasonFixture.tenant(units: 3).resources[0],
                actor: .admin(keyId: 1)
            )
            _ = try await manage.update(runtime: try #require(registry.tenants["a"]), id: "boat", actor: .admin(keyId: 1)) { resource in
                var dearer = resource
                dearer.pricePerDayMinor = 8_000
                return dearer
            }
            let after = try await create(
                .init(
                    runtime: try #require(registry.tenants["a"]),
                    userId: "bea",
                    createdVia: .user("bea"),
                    request: SeasonFixture.rental(dayOffset: 2)
                )
            )
            #expect(after.priceMinor == 8_000)
            let kept = try await store.read { try $0.bookings.booking(id: before.id, tenantId: "a", forUpdate: false) }
            #expect(kept?.priceMinor == 5_000, "a booking keeps the price it was made at")
            let missing = await SeasonFixture.refusal {
                _ = try await manage.update(runtime: try #require(registry.tenants["a"]), id: "ghost", actor: .admin(keyId: 1)) { $0 }
            }
            #expect(missing == .resourceNotFound)
        }
    }

    @Test(
        "a booking paid through the App Store and then cancelled is owed to its customer until the operator records they were told",
        arguments: StoreBackend.available
    )
    func owedUntilResolved(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let booking = try await services.book(runtime, user: "ana", day: 4)
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("rental.day", id: "2000000000000201"))
            _ = try await services.pay(runtime, user: "ana", booking: booking.id, jws: jws)
            _ = try await AdminBookingTransition(store: store, clock: services.clock)(
                booking.id,
                to: .cancelled,
                runtime: runtime,
                actor: .admin(keyId: 1),
                reason: "storm"
            )
            let owed = OwedToCustomers(store: store, clock: services.clock)
            let open = try await owed.list(runtime: runtime, resolved: false)
            #expect(open.map(\.booking.id) == [booking.id])
            #expect(open.first?.rail == .appStore && open.first?.reason == .cancelled && open.first?.amountMinor == 5_000)
            _ = try await owed.resolve(runtime: runtime, bookingId: booking.id, how: .customerTold, note: "called", actor: .admin(keyId: 1))
            #expect(try await owed.list(runtime: runtime, resolved: false).isEmpty)
            #expect(try await owed.list(runtime: runtime, resolved: true).first?.resolved?.how == .customerTold)
            let twice = await SeasonFixture.refusal {
                _ = try await owed.resolve(runtime: runtime, bookingId: booking.id, how: .customerTold, note: nil, actor: .admin(keyId: 1))
            }
            #expect(twice == .owedResolved)
            let nothing = await SeasonFixture.refusal {
                _ = try await owed.resolve(runtime: runtime, bookingId: 987_654, how: .customerTold, note: nil, actor: .admin(keyId: 1))
            }
            #expect(nothing == .owedNotFound)
        }
    }

    @Test(
        "API keys: a new key resolves; rotated, old and new both work until the overlap ends; revoked, it resolves to nothing",
        arguments: StoreBackend.available
    )
    func keys(backend: StoreBackend) async throws {
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let issued = try await CreateAPIKey(store: store)(tenantId: "a", role: .server, name: "backend", now: clock.now())
            #expect(try await APIKeyResolver(store: store, clock: clock).resolve(issued.secret)?.id == issued.key.id)
            let rotated = try await RotateAPIKey(store: store)(id: issued.key.id, tenantId: "a", overlap: 3600, now: clock.now())
            let resolver = APIKeyResolver(store: store, clock: clock, lifetime: .zero)
            #expect(try await resolver.resolve(issued.secret) != nil, "the old key works during the overlap")
            #expect(try await resolver.resolve(rotated.issued.secret)?.id == rotated.issued.key.id)
            clock.advance(3601)
            #expect(try await resolver.resolve(issued.secret) == nil, "the old key ends with the overlap")
            _ = try await RevokeAPIKey(store: store)(id: rotated.issued.key.id, tenantId: "a", now: clock.now())
            #expect(try await resolver.resolve(rotated.issued.secret) == nil)
            let otherTenant = await SeasonFixture.refusal {
                _ = try await RevokeAPIKey(store: store)(id: rotated.issued.key.id, tenantId: "b", now: clock.now())
            }
            #expect(otherTenant == .keyNotFound, "another tenant's key is not found")
        }
    }

    @Test("consumption consent: the latest answer is the user's, each one audited", arguments: StoreBackend.available)
    func consents(backend: StoreBackend) async throws {
        let runtime = try await SeasonFixture.runtime(try SeasonFixture.tenant())
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            let consents = ConsumptionConsents(store: store, clock: clock)
            #expect(try await consents.current(runtime: runtime, userId: "ana") == nil)
            _ = try await consents.record(runtime: runtime, userId: "ana", consented: true, textVersion: "v1", actor: .user("ana"))
            clock.advance(60)
            _ = try await consents.record(runtime: runtime, userId: "ana", consented: false, textVersion: "v2", actor: .user("ana"))
            let current = try #require(try await consents.current(runtime: runtime, userId: "ana"))
            #expect(!current.consented && current.textVersion == "v2")
            #expect(try await consents.current(runtime: runtime, userId: "bea") == nil, "one user's answer is not another's")
            let audit = try await store.read { try $0.audit.audit(tenantId: "a", bookingId: nil, page: Page()) }
            #expect(audit.items.filter { $0.action == AuditAction.consumptionConsent.rawValue }.count == 2)
        }
    }
}

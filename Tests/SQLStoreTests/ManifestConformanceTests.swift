import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

/// The day's departures (`GET /api/admin/manifest`) on both sides of a daylight-saving change in
/// Europe/Rome, on every backend: the store reads the bookings overlapping a day, the manifest cuts
/// them into each resource's local day.
extension StoreConformance {
    static let rome = TimeZone(identifier: "Europe/Rome") ?? .current

    /// An instant from a wall-clock time in Rome.
    static func rome(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int = 0) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = rome
        return calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute)) ?? .distantPast
    }

    @Test(
        "manifest: the local day in Europe/Rome on the day clocks go forward (23 h) and back (25 h): slots keep 17:30, a full-day rental is that day, the day before is not",
        arguments: StoreBackend.available
    )
    func manifestAcrossDaylightSaving(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            var tenant = try Self.bookingTenant("a")
            tenant.timeZone = "Europe/Rome"
            var cruise = Self.experience
            cruise.slotTimes = ["17:30"]
            tenant.resources = [cruise, Self.rental]
            func book(_ resource: Resource, user: String, start: Date, end: Date, seats: Int = 1) async throws -> Booking {
                var quote = Self.quote(resource, start: start, seats: seats)
                quote.end = end
                quote.timeZone = "Europe/Rome"
                return try await Self.admit(store, user: user, quote: quote)
            }
            // 28 March 2027: 02:00 becomes 03:00. 31 October 2027: 03:00 becomes 02:00.
            let spring = try await book(cruise, user: "ana", start: Self.rome(2027, 3, 28, 17, 30), end: Self.rome(2027, 3, 28, 19, 30), seats: 2)
            let before = try await book(cruise, user: "bob", start: Self.rome(2027, 3, 27, 17, 30), end: Self.rome(2027, 3, 27, 19, 30))
            let fullDay = try await book(Self.rental, user: "cai", start: Self.rome(2027, 3, 28, 0), end: Self.rome(2027, 3, 29, 0))
            let autumn = try await book(cruise, user: "dia", start: Self.rome(2027, 10, 31, 17, 30), end: Self.rome(2027, 10, 31, 19, 30))
            let lateNight = try await book(Self.rental, user: "eva", start: Self.rome(2027, 10, 31, 23, 30), end: Self.rome(2027, 11, 1, 1))

            func manifest(_ date: String) async throws -> Manifest {
                let utc = try #require(Manifest.day(date, in: ZonedTime.utc))
                let from = utc.start.addingTimeInterval(-14 * 3600), to = utc.end.addingTimeInterval(14 * 3600)
                let (bookings, paid) = try await store.read { tx in
                    let bookings = try tx.operatorViews.bookingsOverlapping(tenantId: "a", from: from, to: to, resourceId: nil)
                    return (bookings, try tx.operatorViews.bookingPayments(tenantId: "a", bookingIds: bookings.map(\.id)))
                }
                return Manifest.make(tenant: tenant, date: date, resourceId: nil, bookings: bookings, paid: paid, now: Self.now)
            }
            let march = try await manifest("2027-03-28")
            let marchCruise = try #require(march.resources.first { $0.resource.id == cruise.id })
            #expect(marchCruise.dayEnd.timeIntervalSince(marchCruise.dayStart) == 23 * 3600, "the day clocks go forward lasts 23 hours")
            #expect(marchCruise.slots.map(\.localStart) == ["2027-03-28T17:30:00+02:00"], "\(marchCruise.slots.map(\.localStart))")
            #expect(marchCruise.slots.first?.entries.map(\.booking.id) == [spring.id] && marchCruise.slots.first?.seats == 2)
            #expect(marchCruise.slots.first?.entries.first?.payment == .unpaid)
            #expect(!marchCruise.slots.flatMap(\.entries).contains { $0.booking.id == before.id }, "the day before is not on it")
            let marchBoat = try #require(march.resources.first { $0.resource.id == Self.rental.id })
            #expect(marchBoat.slots.flatMap(\.entries).map(\.booking.id) == [fullDay.id])
            #expect(
                marchBoat.slots.first?.localStart == "2027-03-28T00:00:00+01:00" && marchBoat.slots.first?.localEnd == "2027-03-29T00:00:00+02:00"
            )

            let october = try await manifest("2027-10-31")
            let octoberCruise = try #require(october.resources.first { $0.resource.id == cruise.id })
            #expect(octoberCruise.dayEnd.timeIntervalSince(octoberCruise.dayStart) == 25 * 3600, "the day clocks go back lasts 25 hours")
            #expect(octoberCruise.slots.map(\.localStart) == ["2027-10-31T17:30:00+01:00"])
            #expect(octoberCruise.slots.first?.entries.map(\.booking.id) == [autumn.id])
            let octoberBoat = try #require(october.resources.first { $0.resource.id == Self.rental.id })
            #expect(octoberBoat.slots.flatMap(\.entries).map(\.booking.id) == [lateNight.id], "a rental from 23:30 local is on that day")
            let next = try await manifest("2027-11-01")
            #expect(
                next.resources.first { $0.resource.id == Self.rental.id }?.slots.flatMap(\.entries).map(\.booking.id) == [lateNight.id],
                "and on the next, which it overlaps"
            )
            #expect(next.resources.first { $0.resource.id == cruise.id }?.slots.isEmpty == true)
        }
    }
}

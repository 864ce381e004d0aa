import Foundation

/// The day's departures (`GET /api/admin/manifest`): for one local day, per resource and slot, who
/// sails, how many seats, paid or not and through which rail. A day is the resource's own local day
/// (its zone, else the app's): on a daylight-saving day it lasts 23 or 25 hours, and a slot keeps
/// its wall-clock time.
public struct Manifest: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        public var booking: Booking
        /// Paid in full (confirmed), in part, or not yet.
        public var payment: Payment
        public var rails: [OwedPayment.Rail]
        public var amountPaidMinor: Int64
    }

    public enum Payment: String, Sendable {
        case paid, partlyPaid = "part_paid", unpaid
    }

    public struct Slot: Hashable, Sendable {
        /// Wall-clock start and end where the resource is, with the offset (`2027-03-28T17:30:00+02:00`).
        public var localStart: String
        public var localEnd: String
        public var start: Date
        public var entries: [Entry]
        public var seats: Int { entries.reduce(0) { $0 + $1.booking.seats } }
    }

    public struct Departures: Hashable, Sendable {
        public var resource: Resource
        public var timeZone: String
        /// The local day's bounds as instants.
        public var dayStart: Date
        public var dayEnd: Date
        public var slots: [Slot]
    }

    public var date: String
    public var resources: [Departures]

    /// The bounds of `date` (`YYYY-MM-DD`) in `zone`: its first instant and the next day's.
    public static func day(_ date: String, in zone: TimeZone) -> (start: Date, end: Date)? {
        let parts = date.split(separator: "-", omittingEmptySubsequences: false)
        guard date.utf8.count == 10, parts.count == 3, let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard let start = calendar.date(from: DateComponents(year: year, month: month, day: day)),
            calendar.component(.day, from: start) == day, calendar.component(.month, from: start) == month,
            let end = calendar.date(byAdding: .day, value: 1, to: start)
        else { return nil }
        return (start, end)
    }

    /// The manifest of `date` for every resource of `tenant` (or `resourceId`), from the bookings
    /// overlapping the widest of its local days, with what each was paid.
    public static func make(
        tenant: Tenant,
        date: String,
        resourceId: String?,
        bookings: [Booking],
        paid: [Int64: BookingPaid],
        now: Date
    ) -> Manifest {
        let resources = tenant.resources.filter { resourceId == nil || $0.id == resourceId }
        var departures: [Departures] = []
        for resource in resources {
            let zone = tenant.slotTimeZone(resource)
            guard let (start, end) = day(date, in: zone) else { continue }
            let named = tenant.zoneName(resource) == nil ? nil : zone
            let mine = bookings.filter { booking in
                booking.resourceId == resource.id && booking.start < end && booking.end > start && Self.sails(booking, now: now)
            }
            var slots: [Date: Slot] = [:]
            for booking in mine.sorted(by: { ($0.start, $0.reference) < ($1.start, $1.reference) }) {
                let paidSoFar = paid[booking.id]
                let payment: Payment =
                    booking.status == .confirmed ? .paid : (booking.paidQuantity > 0 || (paidSoFar?.amountMinor ?? 0) > 0 ? .partlyPaid : .unpaid)
                let entry = Entry(booking: booking, payment: payment, rails: paidSoFar?.rails ?? [], amountPaidMinor: paidSoFar?.amountMinor ?? 0)
                var slot =
                    slots[booking.start]
                    ?? Slot(
                        localStart: ZonedTime.format(booking.start, in: named),
                        localEnd: ZonedTime.format(booking.end, in: named),
                        start: booking.start,
                        entries: []
                    )
                slot.entries.append(entry)
                slots[booking.start] = slot
            }
            departures.append(
                Departures(
                    resource: resource,
                    timeZone: named.map(ZonedTime.name) ?? "UTC",
                    dayStart: start,
                    dayEnd: end,
                    slots: slots.values.sorted { $0.start < $1.start }
                )
            )
        }
        return Manifest(date: date, resources: departures)
    }

    /// Who takes part: confirmed bookings, and pending ones whose hold still runs (a lapsed one, paid
    /// in part or not, will not take place: what it paid is owed).
    static func sails(_ booking: Booking, now: Date) -> Bool {
        switch booking.status {
        case .confirmed: true
        case .pendingPayment: booking.holdExpiresAt > now
        default: false
        }
    }
}

import Foundation

/// What a user asks to book: a rental by start and end, or an experience by slot and seats. Each
/// time is an instant or a wall-clock time (a rental's start and end may be days) in the
/// resource's time zone.
public struct BookingRequest: Hashable, Sendable {
    public var resourceId: String
    public var start: BookingTime?
    public var end: BookingTime?
    public var slot: BookingTime?
    public var seats: Int?

    public init(resourceId: String, start: BookingTime?, end: BookingTime?, slot: BookingTime?, seats: Int?) {
        self.resourceId = resourceId
        self.start = start
        self.end = end
        self.seats = seats
        self.slot = slot
    }

    public init(resourceId: String, start: Date? = nil, end: Date? = nil, slot: Date? = nil, seats: Int? = nil) {
        self.init(
            resourceId: resourceId,
            start: start.map(BookingTime.instant),
            end: end.map(BookingTime.instant),
            slot: slot.map(BookingTime.instant),
            seats: seats
        )
    }
}

/// A priced booking request: the price comes from the catalog, never from the client.
public struct BookingQuote: Hashable, Sendable {
    public var resource: Resource
    public var start: Date
    public var end: Date
    public var seats: Int
    public var priceMinor: Int64
    public var currency: String
    public var requiredProductId: String
    /// Units of the product the purchase must carry.
    public var requiredQuantity: Int = 1
    /// The IANA zone the booking's wall-clock times are in (nil: the catalog names none, UTC).
    public var timeZone: String?

    public init(
        resource: Resource,
        start: Date,
        end: Date,
        seats: Int,
        priceMinor: Int64,
        currency: String,
        requiredProductId: String,
        requiredQuantity: Int = 1
    ) {
        self.resource = resource
        self.start = start
        self.end = end
        self.seats = seats
        self.priceMinor = priceMinor
        self.currency = currency
        self.requiredProductId = requiredProductId
        self.requiredQuantity = requiredQuantity
    }
}

extension Tenant {
    /// The longest rental, and how far ahead bookings may start.
    public static let maximumRentalDays = 30
    public static let maximumAdvance: TimeInterval = 3 * 366 * 86_400

    /// The tenant's own zone (its local days and reports), else UTC.
    public var zone: TimeZone { timeZone.flatMap(TimeZone.init(identifier:)) ?? ZonedTime.utc }

    /// The time zone `resource`'s slot times and rental days are in: its own, else the tenant's, else UTC.
    public func slotTimeZone(_ resource: Resource) -> TimeZone {
        (resource.timeZone ?? timeZone).flatMap(TimeZone.init(identifier:)) ?? ZonedTime.utc
    }

    /// The IANA name the catalog gives `resource` (its own, else the tenant's), nil for none (UTC).
    public func zoneName(_ resource: Resource) -> String? {
        (resource.timeZone ?? timeZone).flatMap { TimeZone(identifier: $0) == nil ? nil : $0 }
    }

    /// Prices a request and finds the product that must pay for it.

    /// The minute of the day `instant` is at in `zone` (fractions of a second ignored), or nil when
    /// it is not on a whole minute.
    static func localMinuteOfDay(_ instant: Date, in zone: TimeZone) -> Int? {
        let seconds = instant.timeIntervalSince1970 + Double(zone.secondsFromGMT(for: instant))
        guard seconds.isFinite, abs(seconds) < 1e15 else { return nil }
        let whole = Int64(seconds.rounded(.down))
        let secondOfDay = ((whole % 86_400) + 86_400) % 86_400
        guard secondOfDay % 60 == 0 else { return nil }
        return Int(secondOfDay / 60)
    }

    public func quote(_ request: BookingRequest, now: Date) throws(DomainError) -> BookingQuote {
        guard let resource = resource(id: request.resourceId) else {
            throw DomainError(.notFound, .resourceNotFound, "no resource \(request.resourceId)", field: "resourceId")
        }
        guard resource.inService else {
            throw DomainError(.conflict, .resourceRetired, "\(resource.name) is retired and takes no new bookings", field: "resourceId")
        }
        guard let rules = bookingRules else {
            throw DomainError(.unprocessable, .bookingsNotOffered, "this app sells no bookings")
        }
        switch resource.kind {
        case .rental:
            guard request.slot == nil else { throw .invalid("a rental takes start and end, not slot", field: "slot") }
            guard request.seats == nil || request.seats == 1 else { throw .invalid("seats apply to experiences only", field: "seats") }
            guard let startTime = request.start else { throw .invalid("start is required", field: "start") }
            guard let endTime = request.end else { throw .invalid("end is required", field: "end") }
            // Days are the resource's local days: 24 → 26 October in Rome is two days, although a
            // daylight-saving change makes it 49 hours.
            let zone = slotTimeZone(resource)
            let start = try startTime.resolve(in: zone, field: "start")
            let end = try endTime.resolve(in: zone, field: "end")
            guard end > start else { throw .invalid("end must be after start", field: "end") }
            try checkStart(start, now: now)
            let days = ZonedTime.days(from: start, to: end, in: zone)
            guard days <= Self.maximumRentalDays else {
                throw .invalid("a rental lasts at most \(Self.maximumRentalDays) days", field: "end")
            }
            // Each local day at its season's price (``PriceRule``), else the resource's own.
            guard let price = resource.rentalPrice(start: start, days: days, in: zone), let product = rules.rentalProduct(priceMinor: price) else {
                let limit = rules.rentalPriceBands.last?.maxPriceMinor.map { " (at most \($0) minor units)" } ?? ""
                throw DomainError(
                    .unprocessable,
                    .priceAboveLimit,
                    "no product of this app pays for a rental of this price\(limit); book fewer days",
                    field: "end"
                )
            }
            var quote = BookingQuote(
                resource: resource,
                start: start,
                end: end,
                seats: 1,
                priceMinor: price,
                currency: currency,
                requiredProductId: product,
                requiredQuantity: rules.rentalQuantity == .perDay ? days : 1
            )
            quote.timeZone = zoneName(resource)
            return quote
        case .experience:
            guard request.start == nil, request.end == nil else { throw .invalid("an experience takes slot, not start and end", field: "slot") }
            guard let slotTime = request.slot else { throw .invalid("slot is required", field: "slot") }
            guard !slotTime.isDateOnly else { throw .invalid("slot is a date and time, such as 2026-07-14T17:30", field: "slot") }
            // The slot's wall-clock time where the experience happens: a daylight-saving change moves
            // the instant, never the local time (a local time the change skips has no instant at all).
            let zone = slotTimeZone(resource)
            let slot = try slotTime.resolve(in: zone, field: "slot")
            try checkStart(slot, now: now)
            let offered = (resource.slotTimes ?? []).compactMap(Resource.minutesOfDay)
            guard let local = Self.localMinuteOfDay(slot, in: zone), offered.contains(local) else {
                throw DomainError(
                    .invalidInput,
                    .slotNotOffered,
                    "\(resource.name) starts at \((resource.slotTimes ?? []).joined(separator: ", ")) \(zone.identifier == "GMT" ? "UTC" : zone.identifier)",
                    field: "slot"
                )
            }
            let seats = request.seats ?? 1
            guard seats >= 1, seats <= (resource.seatsPerSlot ?? 0) else {
                throw .invalid("seats must be 1...\(resource.seatsPerSlot ?? 0)", field: "seats")
            }
            guard let type = resource.experienceType, let product = rules.experienceProducts[type] else {
                throw DomainError(.unprocessable, .noProductForBooking, "no product sells \(resource.experienceType ?? "this experience")")
            }
            let end = slot.addingTimeInterval(TimeInterval((resource.durationMinutes ?? 60) * 60))
            let price = resource.unitPrice(onDay: LocalDateTime.dayNumber(of: slot, in: zone)) * Int64(seats)
            var quote = BookingQuote(
                resource: resource,
                start: slot,
                end: end,
                seats: seats,
                priceMinor: price,
                currency: currency,
                requiredProductId: product,
                requiredQuantity: rules.experienceQuantity == .perSeat ? seats : 1
            )
            quote.timeZone = zoneName(resource)
            return quote
        }
    }

    private func checkStart(_ start: Date, now: Date) throws(DomainError) {
        guard start >= now else { throw .invalid("bookings cannot start in the past", field: "start") }
        guard start.timeIntervalSince(now) <= Self.maximumAdvance else {
            throw .invalid("bookings can start at most 3 years ahead", field: "start")
        }
    }
}

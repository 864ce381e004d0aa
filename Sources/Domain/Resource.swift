import Foundation

/// Something bookable: a boat rented by the day, or an experience sold by the seat in fixed slots.
public struct Resource: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Hashable, Sendable {
        case rental, experience
    }

    public var id: String
    public var kind: Kind
    public var name: String
    /// Rental: price of one day, in minor units.
    public var pricePerDayMinor: Int64?
    /// Rental: how many bookings may overlap (boats of the same model); default 1.
    public var units: Int?
    /// Experience: its type, which selects its product (`sunset`, `diving`, `fishing`).
    public var experienceType: String?
    /// Experience: price of one seat, in minor units.
    public var pricePerSeatMinor: Int64?
    /// Experience: seats per slot.
    public var seatsPerSlot: Int?
    /// Experience: daily start times, "HH:mm" UTC.
    public var slotTimes: [String]?
    /// Experience: length of one slot.
    public var durationMinutes: Int?

    public init(id: String, kind: Kind, name: String, pricePerDayMinor: Int64? = nil, units: Int? = nil, experienceType: String? = nil,
                pricePerSeatMinor: Int64? = nil, seatsPerSlot: Int? = nil, slotTimes: [String]? = nil, durationMinutes: Int? = nil) {
        self.id = id
        self.kind = kind
        self.name = name
        self.pricePerDayMinor = pricePerDayMinor
        self.units = units
        self.experienceType = experienceType
        self.pricePerSeatMinor = pricePerSeatMinor
        self.seatsPerSlot = seatsPerSlot
        self.slotTimes = slotTimes
        self.durationMinutes = durationMinutes
    }

    func validate(tenant: String) throws {
        switch kind {
        case .rental:
            guard let price = pricePerDayMinor, price > 0 else { throw CatalogError("tenant \(tenant): rental \(id) needs pricePerDayMinor > 0") }
            if let units, units < 1 { throw CatalogError("tenant \(tenant): rental \(id) needs units >= 1") }
        case .experience:
            guard experienceType?.isEmpty == false else { throw CatalogError("tenant \(tenant): experience \(id) needs experienceType") }
            guard let price = pricePerSeatMinor, price > 0 else { throw CatalogError("tenant \(tenant): experience \(id) needs pricePerSeatMinor > 0") }
            guard let seats = seatsPerSlot, seats > 0 else { throw CatalogError("tenant \(tenant): experience \(id) needs seatsPerSlot > 0") }
            guard let times = slotTimes, !times.isEmpty, times.allSatisfy({ Self.minutesOfDay($0) != nil }) else {
                throw CatalogError("tenant \(tenant): experience \(id) needs slotTimes as HH:mm")
            }
            guard let minutes = durationMinutes, minutes > 0 else { throw CatalogError("tenant \(tenant): experience \(id) needs durationMinutes > 0") }
        }
    }

    /// "18:30" → 1110.
    static func minutesOfDay(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
              let hours = Int(parts[0]), let minutes = Int(parts[1]), (0..<24).contains(hours), (0..<60).contains(minutes)
        else { return nil }
        return hours * 60 + minutes
    }
}

/// How a tenant's bookings map to the product that pays for them. Computed server-side only.
public struct BookingRules: Codable, Hashable, Sendable {
    /// A rental's product by its price: the first band whose `maxPriceMinor` is at least the price.
    /// Every band has a maximum: a rental above the last one is refused at booking time, because no
    /// product pays for it.
    public struct PriceBand: Codable, Hashable, Sendable {
        public var maxPriceMinor: Int64?
        public var productId: String

        public init(maxPriceMinor: Int64?, productId: String) {
            self.maxPriceMinor = maxPriceMinor
            self.productId = productId
        }
    }

    /// How many units of its product a booking needs.
    public enum Quantity: String, Codable, Hashable, Sendable {
        /// One purchase pays for the booking (Seaboo's rentals).
        case perBooking
        /// A rental needs one unit per started day.
        case perDay
        /// An experience needs one unit per seat.
        case perSeat
    }

    public var rentalPriceBands: [PriceBand]
    /// An experience's product by its `experienceType`.
    public var experienceProducts: [String: String]
    /// `perBooking` (default) or `perDay`.
    public var rentalQuantity: Quantity?
    /// `perBooking` (default) or `perSeat`.
    public var experienceQuantity: Quantity?
    /// How bookings may be paid: `app_store`, `card` or both (see ``Tenant/bookingPaymentRails``).
    public var paymentRails: [PaymentRail]?

    /// The product a rental of this price must be paid with; nil above the last band's maximum.
    public func rentalProduct(priceMinor: Int64) -> String? {
        rentalPriceBands.first { band in band.maxPriceMinor.map { priceMinor <= $0 } ?? false }?.productId
    }

    func validate(tenant: Tenant) throws {
        func requireBookingProduct(_ id: String) throws {
            guard let product = tenant.product(id: id), product.kind == .booking else {
                throw CatalogError("tenant \(tenant.id): bookingRules name \(id), which is not a booking product")
            }
        }
        for band in rentalPriceBands { try requireBookingProduct(band.productId) }
        let maxima = rentalPriceBands.map(\.maxPriceMinor)
        if tenant.resources.contains(where: { $0.kind == .rental }), rentalPriceBands.isEmpty {
            throw CatalogError("tenant \(tenant.id): rentals need rentalPriceBands")
        }
        guard maxima.allSatisfy({ $0 != nil }) else {
            throw CatalogError(
                "tenant \(tenant.id): every rental price band needs maxPriceMinor (the most its product pays for); rentals above the last are refused"
            )
        }
        let bounded = maxima.compactMap { $0 }
        guard bounded == bounded.sorted(), Set(bounded).count == bounded.count, bounded.allSatisfy({ $0 > 0 }) else {
            throw CatalogError("tenant \(tenant.id): rental price bands must rise strictly")
        }
        guard [nil, .perBooking, .perDay].contains(rentalQuantity) else {
            throw CatalogError("tenant \(tenant.id): rentalQuantity must be perBooking or perDay")
        }
        guard [nil, .perBooking, .perSeat].contains(experienceQuantity) else {
            throw CatalogError("tenant \(tenant.id): experienceQuantity must be perBooking or perSeat")
        }
        for productId in experienceProducts.values { try requireBookingProduct(productId) }
        if let rails = paymentRails {
            guard !rails.isEmpty, Set(rails).count == rails.count else {
                throw CatalogError("tenant \(tenant.id): bookingRules.paymentRails must list app_store and/or card once")
            }
            if rails.contains(.card), tenant.stripe == nil {
                throw CatalogError("tenant \(tenant.id): bookingRules.paymentRails names card: configure stripe")
            }
        }
        for resource in tenant.resources where resource.kind == .experience {
            guard let type = resource.experienceType, experienceProducts[type] != nil else {
                throw CatalogError("tenant \(tenant.id): experience type \(resource.experienceType ?? "?") has no product")
            }
        }
    }
}

/// How a tenant's bookings map to the product that pays for them. Computed server-side only.
public struct BookingRules: Codable, Hashable, Sendable {
    /// A rental's product by its price: the first band whose `maxPriceMinor` is at least the price
    /// (a band without a maximum takes everything above the others).
    public struct PriceBand: Codable, Hashable, Sendable {
        public var maxPriceMinor: Int64?
        public var productId: String
    }

    public var rentalPriceBands: [PriceBand]
    /// An experience's product by its `experienceType`.
    public var experienceProducts: [String: String]

    /// The product a rental of this price must be paid with.
    public func rentalProduct(priceMinor: Int64) -> String? {
        rentalPriceBands.first { band in band.maxPriceMinor.map { priceMinor <= $0 } ?? true }?.productId
    }

    func validate(tenant: Tenant) throws {
        func requireBookingProduct(_ id: String) throws {
            guard let product = tenant.product(id: id), product.kind == .booking else {
                throw CatalogError("tenant \(tenant.id): bookingRules name \(id), which is not a booking product")
            }
        }
        for band in rentalPriceBands { try requireBookingProduct(band.productId) }
        let maxima = rentalPriceBands.map(\.maxPriceMinor)
        if tenant.resources.contains(where: { $0.kind == .rental }) {
            guard let last = maxima.last, last == nil else {
                throw CatalogError("tenant \(tenant.id): the last rental price band must have no maxPriceMinor")
            }
        }
        let bounded = maxima.compactMap { $0 }
        guard bounded == bounded.sorted(), Set(bounded).count == bounded.count, maxima.dropLast().allSatisfy({ $0 != nil }) else {
            throw CatalogError("tenant \(tenant.id): rental price bands must rise strictly, only the last unbounded")
        }
        for productId in experienceProducts.values { try requireBookingProduct(productId) }
        for resource in tenant.resources where resource.kind == .experience {
            guard let type = resource.experienceType, experienceProducts[type] != nil else {
                throw CatalogError("tenant \(tenant.id): experience type \(resource.experienceType ?? "?") has no product")
            }
        }
    }
}

import Foundation

/// Changing a tenant's inventory while Berth runs: every change is checked as the catalog checks its
/// resources, and a price nothing can pay for is refused when it is set, not at booking time.
extension Tenant {
    /// This tenant with `resource` added or changed (by id), checked whole: ids unique, each resource
    /// complete, every experience type with its product, and a rental's day price inside a price
    /// band (else no product would pay for a single day). A retired resource is still checked: it may
    /// be put back in service.
    public func with(resource: Resource) throws(CatalogError) -> Tenant {
        var tenant = self
        if let index = tenant.resources.firstIndex(where: { $0.id == resource.id }) {
            tenant.resources[index] = resource
        } else {
            tenant.resources.append(resource)
        }
        guard !resource.id.isEmpty, resource.id.count <= 100,
            resource.id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") })
        else { throw CatalogError("resource id \"\(resource.id)\" must be 1 to 100 letters, digits, -, _ or .") }
        guard !resource.name.trimmingCharacters(in: .whitespaces).isEmpty, Text.length(resource.name) <= 200 else {
            throw CatalogError("resource \(resource.id) needs a name of 1 to 200 characters")
        }
        do {
            try tenant.validate()
        } catch let error as CatalogError {
            throw error
        } catch {
            throw CatalogError("\(error)")
        }
        // The day's own price and every season's: a price rule no band covers is refused when it is set.
        if resource.kind == .rental, let rules = tenant.bookingRules {
            for price in resource.allUnitPrices where rules.rentalProduct(priceMinor: price) == nil {
                let top = rules.rentalPriceBands.compactMap(\.maxPriceMinor).max() ?? 0
                throw CatalogError(
                    "rental \(resource.id): a day at \(CurrencyUnits.text(minor: price, currency: currency)) is above every price band (the highest is \(CurrencyUnits.text(minor: top, currency: currency))): no product would pay for it"
                )
            }
        }
        return tenant
    }
}

import Domain
import Foundation

/// `POST /api/admin/credit-products` (audited).
public struct CreateCreditProduct: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// A new credit product (409 `product_exists` if the id is taken).
    public func callAsFunction(_ runtime: TenantRuntime, productId: String, fields: CreditProductFields, actor: Actor) async throws -> CreditProduct {
        let settings = try CreditRequests.settings(runtime)
        let now = clock.now()
        guard let credits = fields.credits else { throw DomainError(.invalidInput, .missingField, "credits is required", field: "credits") }
        guard let title = fields.title else { throw DomainError(.invalidInput, .missingField, "title is required", field: "title") }
        let type = try CreditRequests.creditType(fields.creditType, settings: settings)
        if let product = runtime.tenant.product(id: productId), product.kind != .credits {
            throw DomainError(.conflict, .productExists, "\(productId) is a \(product.kind.rawValue) product of this app", field: "productId")
        }
        let product = CreditProduct(
            tenantId: runtime.id,
            productId: productId,
            creditType: type,
            credits: credits,
            title: title,
            description: fields.description ?? nil,
            priceMinor: fields.priceMinor ?? nil,
            currency: runtime.tenant.currency,
            displayOrder: fields.displayOrder ?? 0,
            active: fields.active ?? true,
            createdAt: now,
            updatedAt: now
        )
        try product.validate(settings: settings)
        return try await store.write { tx in
            guard try tx.credits.product(tenantId: product.tenantId, productId: productId) == nil else {
                throw DomainError(.conflict, .productExists, "\(productId) already exists; edit it with PATCH", field: "productId")
            }
            try tx.credits.insert(product)
            try tx.audit.append(
                AuditRecord(
                    tenantId: product.tenantId,
                    actor: actor,
                    action: .creditProductCreated,
                    bookingId: nil,
                    purchaseId: nil,
                    detail: CreditProductFields.detail(product),
                    at: now
                )
            )
            return product
        }
    }
}

import Domain
import Foundation

/// `PATCH /api/admin/credit-products/{id}` (audited).
public struct UpdateCreditProduct: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// Edits a product; a change of credits applies to purchases verified from now on.
    public func callAsFunction(_ runtime: TenantRuntime, productId: String, fields: CreditProductFields, actor: Actor) async throws -> CreditProduct {
        let settings = try CreditRequests.settings(runtime)
        let tenantId = runtime.id, now = clock.now()
        if let type = fields.creditType { _ = try CreditRequests.creditType(type, settings: settings) }
        return try await store.write { tx in
            guard var product = try tx.credits.product(tenantId: tenantId, productId: productId) else {
                throw DomainError(.notFound, .productNotFound, "no credit product \(productId) in this app", field: "productId")
            }
            let before = product
            if let v = fields.creditType { product.creditType = v }
            if let v = fields.credits { product.credits = v }
            if let v = fields.title { product.title = v }
            if let v = fields.description { product.description = v }
            if let v = fields.priceMinor { product.priceMinor = v }
            if let v = fields.displayOrder { product.displayOrder = v }
            if let v = fields.active { product.active = v }
            try product.validate(settings: settings)
            guard product != before else { return product }
            product.updatedAt = now
            try tx.credits.update(product)
            var detail = CreditProductFields.detail(product)
            detail["before"] = CreditProductFields.detail(before).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";")
            try tx.audit.append(
                AuditRecord(tenantId: tenantId, actor: actor, action: .creditProductUpdated, bookingId: nil, purchaseId: nil, detail: detail, at: now)
            )
            return product
        }
    }
}

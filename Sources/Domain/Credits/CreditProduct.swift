import Foundation

/// A credit pack as the tenant's operators manage it at run time (seeded from products.json, then
/// edited through the admin API: the stored product wins).
public struct CreditProduct: Hashable, Sendable {
    public var tenantId: String
    /// The App Store product id.
    public var productId: String
    public var creditType: String
    /// Credits one purchase (of quantity 1) grants.
    public var credits: Int64
    public var title: String
    public var description: String?
    /// Price in minor units of `currency`, as shown on the purchase screen (the App Store's own price wins at payment).
    public var priceMinor: Int64?
    public var currency: String
    public var displayOrder: Int
    /// Listed for sale. An inactive product still grants its credits when a paid transaction arrives.
    public var active: Bool
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        tenantId: String,
        productId: String,
        creditType: String,
        credits: Int64,
        title: String,
        description: String? = nil,
        priceMinor: Int64? = nil,
        currency: String,
        displayOrder: Int = 0,
        active: Bool = true,
        createdAt: Date,
        updatedAt: Date
    ) {
        self.tenantId = tenantId
        self.productId = productId
        self.creditType = creditType
        self.credits = credits
        self.title = title
        self.description = description
        self.priceMinor = priceMinor
        self.currency = currency
        self.displayOrder = displayOrder
        self.active = active
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The stored form of a catalog product of kind `credits`.
    public init?(_ product: Product, tenant: Tenant, now: Date) {
        guard product.kind == .credits, let credits = product.credits, let type = product.creditType ?? tenant.credits?.defaultType else {
            return nil
        }
        self.init(
            tenantId: tenant.id,
            productId: product.id,
            creditType: type,
            credits: Int64(credits),
            title: product.title,
            description: product.description,
            priceMinor: product.priceMinor,
            currency: tenant.currency,
            displayOrder: product.displayOrder ?? 0,
            active: product.active ?? true,
            createdAt: now,
            updatedAt: now
        )
    }

    /// Checks a product an operator wrote (amounts, names, lengths) against the tenant's credit types.
    public func validate(settings: CreditSettings) throws(DomainError) {
        guard !productId.isEmpty, Text.length(productId) <= 200 else {
            throw .invalid("productId must be 1-200 characters", field: "productId", code: .invalidField)
        }
        guard settings.types.contains(creditType) else {
            throw .invalid("creditType must be one of \(settings.types.joined(separator: ", "))", field: "creditType", code: .unknownCreditType)
        }
        guard (1...1_000_000).contains(credits) else { throw .invalid("credits must be 1...1000000", field: "credits", code: .invalidField) }
        guard !title.isEmpty, Text.length(title) <= 200 else { throw .invalid("title must be 1-200 characters", field: "title", code: .invalidField) }
        guard Text.length(description ?? "") <= 2_000 else {
            throw .invalid("description is limited to 2000 characters", field: "description", code: .invalidField)
        }
        if let price = priceMinor, !(0...100_000_000).contains(price) {
            throw .invalid("priceMinor must be 0...100000000 (minor units)", field: "priceMinor", code: .invalidField)
        }
        guard (-1_000_000...1_000_000).contains(displayOrder) else {
            throw .invalid("displayOrder must be within ±1000000", field: "displayOrder", code: .invalidField)
        }
    }
}

import Domain
import Foundation

/// The fields of a product an operator sends; nil leaves a field as it is (on create: its default).
public struct CreditProductFields: Sendable {
    public var creditType: String?
    public var credits: Int64?
    public var title: String?
    public var description: String??
    public var priceMinor: Int64??
    public var displayOrder: Int?
    public var active: Bool?

    public init(
        creditType: String? = nil,
        credits: Int64? = nil,
        title: String? = nil,
        description: String?? = nil,
        priceMinor: Int64?? = nil,
        displayOrder: Int? = nil,
        active: Bool? = nil
    ) {
        self.creditType = creditType
        self.credits = credits
        self.title = title
        self.description = description
        self.priceMinor = priceMinor
        self.displayOrder = displayOrder
        self.active = active
    }

    /// What the audit log records of a product.
    static func detail(_ p: CreditProduct) -> [String: String] {
        var detail = [
            "productId": p.productId, "creditType": p.creditType, "credits": String(p.credits), "title": p.title,
            "displayOrder": String(p.displayOrder),
            "active": String(p.active),
        ]
        if let price = p.priceMinor { detail["priceMinor"] = String(price) }
        return detail
    }
}

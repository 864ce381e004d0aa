import Domain
import Foundation

/// The registry of product kinds, assembled in the composition root.
public struct PurchaseKinds: Sendable {
    public let modules: [ProductKind: any PurchaseKind]

    public init(_ modules: [any PurchaseKind]) {
        self.modules = Dictionary(modules.map { ($0.kind, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Every kind Berth sells: the list `BerthServices` registers. A new kind is added here.
    public static let all = PurchaseKinds([
        BookingKind(),
        CreditsKind(),
        SubscriptionKind(),
        UnlockKind(),
    ])

    public func module(_ kind: ProductKind) throws -> any PurchaseKind {
        guard let module = modules[kind] else {
            throw DomainError(.unprocessable, .productNotSupported, "this server does not sell \(kind.rawValue) products", field: "productId")
        }
        return module
    }

    /// The kind of a request: the target it names, else its catalog product's kind; a product the
    /// catalog does not list may be a credit product operators added at run time.
    public func kind(of request: PurchaseRequest) -> ProductKind {
        if let named = request.named { return named.kind }
        return request.tenant.product(id: request.productId)?.kind ?? .credits
    }
}

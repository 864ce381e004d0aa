import Foundation

/// The subscription offers a tenant's server signs (`apple.offers` in the catalog), and for whom.
/// Apple checks the signature and the offer's existence in App Store Connect; who may have it is the
/// tenant's rule, judged by Berth from the subscriptions it knows.
public struct AppleOffers: Codable, Hashable, Sendable {
    /// Promotional offers (App Store Connect → Subscription → Promotional Offers), by their identifier.
    public var promotional: [PromotionalOffer]

    public init(promotional: [PromotionalOffer]) {
        self.promotional = promotional
    }

    public struct PromotionalOffer: Codable, Hashable, Sendable {
        /// The offer's identifier (its "reference name" code) in App Store Connect.
        public var id: String
        /// The subscription products it applies to; absent: every subscription product of the tenant.
        public var productIds: [String]?
        /// Who may have it (default `anyone`).
        public var eligibility: OfferEligibility?

        public init(id: String, productIds: [String]? = nil, eligibility: OfferEligibility? = nil) {
            self.id = id
            self.productIds = productIds
            self.eligibility = eligibility
        }

        public func applies(to productId: String) -> Bool {
            productIds?.contains(productId) ?? true
        }
    }

    /// The offer for `productId` named `offerId`, if the tenant signs it.
    public func promotional(_ offerId: String, productId: String) -> PromotionalOffer? {
        promotional.first { $0.id == offerId && $0.applies(to: productId) }
    }

    func validate(tenant: Tenant) throws {
        guard tenant.apple.serverAPI != nil else {
            throw CatalogError("tenant \(tenant.id): apple.offers needs apple.serverAPI (the In-App Purchase key signs offers)")
        }
        var ids = Set<String>()
        for offer in promotional {
            guard !offer.id.isEmpty, offer.id.utf8.count <= 64 else {
                throw CatalogError("tenant \(tenant.id): apple.offers.promotional ids must be 1 to 64 bytes")
            }
            guard ids.insert(offer.id).inserted else { throw CatalogError("tenant \(tenant.id): apple offer \(offer.id) appears twice") }
            for productId in offer.productIds ?? [] {
                guard tenant.products.contains(where: { $0.id == productId && $0.kind == .subscription }) else {
                    throw CatalogError(
                        "tenant \(tenant.id): apple offer \(offer.id) names \(productId), which is not one of its subscription products"
                    )
                }
            }
        }
    }
}

/// Who may have an offer, judged from the subscriptions Berth knows for the user and the product's entitlement.
public enum OfferEligibility: String, Codable, Hashable, Sendable, CaseIterable {
    /// Every signed-in user.
    case anyone
    /// Users whose subscription to the entitlement is live now (upgrades, retention).
    case subscribers
    /// Users who had a subscription to the entitlement and have none live now (win-back).
    case lapsed
    /// Users who never had a subscription to the entitlement.
    case new

    /// Whether a user who `everSubscribed` and `isSubscribed` now may have the offer.
    public func admits(everSubscribed: Bool, isSubscribed: Bool) -> Bool {
        switch self {
        case .anyone: true
        case .subscribers: isSubscribed
        case .lapsed: everSubscribed && !isSubscribed
        case .new: !everSubscribed
        }
    }
}

import Domain
import Foundation
import Hummingbird
import UseCases

/// `POST /api/offers/apple/promotional` and `POST /api/offers/apple/introductory-eligibility`:
/// what StoreKit needs the app's server to sign, for the calling user.
struct OfferRoutes {
    let signAppleOffers: SignAppleOffers

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<AccountContext> {
        let users = RouteCollection(context: AccountContext.self)
        users.post("/api/offers/apple/promotional", use: postOffersApplePromotional)
        users.post("/api/offers/apple/introductory-eligibility", use: postOffersAppleIntroductoryEligibility)
        return users
    }

    /// `POST /api/offers/apple/promotional`
    func postOffersApplePromotional(_ request: Request, context: AccountContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(PromotionalOfferRequest.self, from: request)
        let offer = try await signAppleOffers.promotional(
            runtime: context.tenant,
            userId: context.userId,
            productId: try SubscriptionRoutes.text(body.productId, field: "productId"),
            offerId: try SubscriptionRoutes.text(body.offerId, field: "offerId"),
            applicationUsername: body.applicationUsername,
            transactionId: body.transactionId
        )
        return try JSONCoding.response(PromotionalOfferDTO(offer))
    }

    /// `POST /api/offers/apple/introductory-eligibility`
    func postOffersAppleIntroductoryEligibility(_ request: Request, context: AccountContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(IntroductoryEligibilityRequest.self, from: request)
        let answer = try await signAppleOffers.introductoryEligibility(
            runtime: context.tenant,
            userId: context.userId,
            productId: try SubscriptionRoutes.text(body.productId, field: "productId"),
            transactionId: body.transactionId
        )
        return try JSONCoding.response(
            IntroductoryEligibilityDTO(
                productId: answer.productId,
                allowIntroductoryOffer: answer.allowIntroductoryOffer,
                compactJWS: answer.compactJWS
            )
        )
    }
}

/// `POST /api/offers/apple/promotional`.
struct PromotionalOfferRequest: Codable, RefusesNull {
    var productId: String
    var offerId: String
    /// The payment's applicationUsername the legacy signature covers (default: cordova-plugin-purchase's token for the user).
    var applicationUsername: String?
    /// For the JWS: one of the customer's transaction ids, or their appTransactionId.
    var transactionId: String?
}

/// A signed promotional offer: `keyIdentifier`, `nonce`, `timestamp` and `signature` go into
/// StoreKit 1's SKPaymentDiscount (cordova-plugin-purchase's `discount`), `compactJWS` into StoreKit 2's
/// `promotionalOffer(_:compactJWS:)`.
struct PromotionalOfferDTO: Codable {
    var productId: String
    var offerId: String
    var keyIdentifier: String
    var nonce: String
    var timestamp: Int64
    var signature: String
    var applicationUsername: String
    var compactJWS: String

    init(_ offer: SignAppleOffers.PromotionalOffer) {
        productId = offer.productId
        offerId = offer.offerId
        keyIdentifier = offer.keyIdentifier
        nonce = offer.nonce.uuidString.lowercased()
        timestamp = offer.timestamp
        signature = offer.signature
        applicationUsername = offer.applicationUsername
        compactJWS = offer.compactJWS
    }
}

/// `POST /api/offers/apple/introductory-eligibility`.
struct IntroductoryEligibilityRequest: Codable, RefusesNull {
    var productId: String
    /// One of the customer's transaction ids, or their appTransactionId (Apple requires one).
    var transactionId: String
}

struct IntroductoryEligibilityDTO: Codable {
    var productId: String
    var allowIntroductoryOffer: Bool
    var compactJWS: String
}

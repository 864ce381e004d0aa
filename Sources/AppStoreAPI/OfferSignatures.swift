import AppleSignedData
import Crypto
import Foundation

/// Signs what StoreKit asks the developer's server to sign, with the app's In-App Purchase key
/// (the key of the App Store Server API): promotional offers in Apple's legacy form (StoreKit 1,
/// cordova-plugin-purchase) and as a compact JWS (StoreKit 2's `promotionalOffer(_:compactJWS:)`),
/// and introductory-offer eligibility (`introductoryOfferEligibility(compactJWS:)`).
public struct AppleOfferSigner: Sendable {
    public let credentials: AppStoreAPICredentials

    public init(credentials: AppStoreAPICredentials) {
        self.credentials = credentials
    }

    /// The legacy promotional-offer signature: ECDSA P-256 with SHA-256 over the bundle id, key id,
    /// product id, offer id, application username (lowercased), nonce (lowercased) and timestamp
    /// (milliseconds since 1970), joined by U+2063 INVISIBLE SEPARATOR; DER, base64.
    public func legacySignature(productId: String, offerId: String, applicationUsername: String, nonce: UUID, timestamp: Int64) throws -> String {
        let payload = Self.legacyPayload(
            bundleId: credentials.bundleId,
            keyId: credentials.keyId,
            productId: productId,
            offerId: offerId,
            applicationUsername: applicationUsername,
            nonce: nonce,
            timestamp: timestamp
        )
        return try credentials.privateKey.signature(for: Data(payload.utf8)).derRepresentation.base64EncodedString()
    }

    /// The text the legacy signature covers, in Apple's order and with its separator.
    public static func legacyPayload(
        bundleId: String,
        keyId: String,
        productId: String,
        offerId: String,
        applicationUsername: String,
        nonce: UUID,
        timestamp: Int64
    ) -> String {
        [bundleId, keyId, productId, offerId, applicationUsername.lowercased(), nonce.uuidString.lowercased(), String(timestamp)]
            .joined(separator: "\u{2063}")
    }

    /// A promotional offer as a compact JWS (`aud` = `promotional-offer`). `transactionId` is any
    /// transaction of the customer (their appTransactionId works before any purchase); optional.
    public func promotionalOfferJWS(productId: String, offerId: String, transactionId: String?, nonce: UUID, now: Date) throws -> String {
        try compactJWS(
            Claims(
                audience: "promotional-offer",
                credentials: credentials,
                nonce: nonce,
                now: now,
                productId: productId,
                offerIdentifier: offerId,
                transactionId: transactionId
            )
        )
    }

    /// Whether the customer may have the product's introductory offer, as a compact JWS
    /// (`aud` = `introductory-offer-eligibility`); `transactionId` is required by Apple here.
    public func introductoryEligibilityJWS(productId: String, allow: Bool, transactionId: String, nonce: UUID, now: Date) throws -> String {
        try compactJWS(
            Claims(
                audience: "introductory-offer-eligibility",
                credentials: credentials,
                nonce: nonce,
                now: now,
                productId: productId,
                transactionId: transactionId,
                allowIntroductoryOffer: allow
            )
        )
    }

    struct Header: Encodable {
        var alg = "ES256"
        var kid: String
        var typ = "JWT"
    }

    /// The claims of Apple's "Generating JWS to sign App Store requests": `iss`, `bid`, `aud`,
    /// `iat` (seconds), `nonce` (a UUID), then the request's own claims.
    struct Claims: Encodable {
        var iss: String
        var bid: String
        var aud: String
        var iat: Int64
        var nonce: String
        var productId: String
        var offerIdentifier: String?
        var transactionId: String?
        var allowIntroductoryOffer: Bool?

        init(
            audience: String,
            credentials: AppStoreAPICredentials,
            nonce: UUID,
            now: Date,
            productId: String,
            offerIdentifier: String? = nil,
            transactionId: String?,
            allowIntroductoryOffer: Bool? = nil
        ) {
            iss = credentials.issuerId
            bid = credentials.bundleId
            aud = audience
            // A clock far outside Int64's range is not a clock; 0 is refused by Apple, never a trap.
            let seconds = now.timeIntervalSince1970.rounded(.down)
            iat = seconds.isFinite && abs(seconds) < 1e15 ? Int64(seconds) : 0
            self.nonce = nonce.uuidString.lowercased()
            self.productId = productId
            self.offerIdentifier = offerIdentifier
            self.transactionId = transactionId
            self.allowIntroductoryOffer = allowIntroductoryOffer
        }
    }

    private func compactJWS(_ claims: Claims) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = Base64URL.encode(try encoder.encode(Header(kid: credentials.keyId)))
        let body = Base64URL.encode(try encoder.encode(claims))
        let input = "\(header).\(body)"
        let signature = try credentials.privateKey.signature(for: Data(input.utf8))
        return "\(input).\(Base64URL.encode(signature.rawRepresentation))"
    }
}

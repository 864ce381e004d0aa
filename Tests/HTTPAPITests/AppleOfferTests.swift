import AppleSignedData
import AppleStandIn
import Crypto
import Domain
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import TestKit
import Testing
import UseCases

/// `POST /api/offers/apple/promotional` and `/introductory-eligibility`: signatures checked here with
/// the In-App Purchase key's public half, built from Apple's documented fields (order, separator,
/// claims) rather than from Berth's own helpers; scripts/apple-library-check judges them again with
/// Apple's Python library.
@Suite("Apple offers: promotional offers (legacy and JWS), introductory eligibility, per-tenant rules")
struct AppleOfferTests {
    static let brain = SubscriptionsTests.brain
    static let bundle = SubscriptionsTests.brainBundle
    static let yearly = SubscriptionsTests.yearly

    /// - Parameter applePort: the App Store Server API stand-in's port (9, nobody, where nothing calls Apple).
    static func harness(_ key: P256.Signing.PrivateKey, applePort: Int = 9) async throws -> Harness {
        try await Harness.make(
            appleStandIn: (applePort, key.pemRepresentation),
            customize: { catalog in
                guard let index = catalog.tenants.firstIndex(where: { $0.id == brain }) else { return }
                catalog.tenants[index].apple.offers = AppleOffers(promotional: [
                    .init(id: "welcome"),
                    .init(id: "winback50", productIds: [yearly], eligibility: .lapsed),
                    .init(id: "loyal20", eligibility: .subscribers),
                ])
            }
        )
    }

    static func base64URL(_ text: Substring) -> Data? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }

    /// Checks a compact JWS against the key; answers its header and claims.
    static func openJWS(_ jws: String, key: P256.Signing.PublicKey) throws -> (header: JSON, claims: JSON) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let signatureBytes = try #require(base64URL(parts[2]))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        #expect(key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)), "the JWS verifies with the In-App Purchase key")
        let headerBytes = try #require(base64URL(parts[0])), claimsBytes = try #require(base64URL(parts[1]))
        let header = try #require(try JSON.parse(headerBytes).object)
        let claims = try #require(try JSON.parse(claimsBytes).object)
        return (header, claims)
    }

    static func code(_ reply: Reply) -> String? { reply.json["error"]["code"].string }

    static func offer(_ client: some TestClientProtocol, key: String, user: String, offer: String, extra: JSON = [:]) async throws -> Reply {
        try await client.call(
            .post,
            "/api/offers/apple/promotional",
            auth: key,
            user: user,
            json: JSON.object(["productId": .string(yearly), "offerId": .string(offer)].merging(extra.members ?? [:]) { $1 })
        )
    }

    @Test("a promotional offer in both forms: the legacy signature over Apple's fields in Apple's order, the JWS with Apple's claims, one nonce")
    func bothForms() async throws {
        let iapKey = P256.Signing.PrivateKey()
        let harness = try await Self.harness(iapKey)
        defer { harness.close() }
        let key = try await harness.apiKey(Self.brain, .server)
        try await harness.app().test(.router) { client in
            let reply = try await Self.offer(client, key: key, user: "ana", offer: "welcome", extra: ["transactionId": "2000000000123456"])
            #expect(reply.status == .ok, "\(reply.json)")
            let body = reply.json
            let nonce = try #require(body["nonce"].string)
            let timestamp = try #require(body["timestamp"].int64)
            let username = try #require(body["applicationUsername"].string)
            #expect(
                body["keyIdentifier"].string == "KEY123" && body["productId"].string == Self.yearly && body["offerId"].string == "welcome"
            )
            #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())
            #expect(timestamp == Int64((harness.clock.now().timeIntervalSince1970 * 1000).rounded(.down)))
            #expect(username == AccountTokens.cordovaPlugin("ana"), "by default, the token cordova-plugin-purchase puts on the payment")

            // Apple: bundle id, key id, product, offer, username, nonce, timestamp, joined by U+2063; ECDSA SHA-256, DER, base64.
            let signed = [Self.bundle, "KEY123", Self.yearly, "welcome", username.lowercased(), nonce, String(timestamp)].joined(
                separator: "\u{2063}"
            )
            let signatureText = try #require(body["signature"].string)
            let der = try #require(Data(base64Encoded: signatureText))
            let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
            #expect(iapKey.publicKey.isValidSignature(signature, for: Data(signed.utf8)))
            let other = [Self.bundle, "KEY123", Self.yearly, "welcome", "", nonce, String(timestamp)].joined(separator: "\u{2063}")
            #expect(!iapKey.publicKey.isValidSignature(signature, for: Data(other.utf8)), "the username is part of what is signed")

            let jws = try #require(body["compactJWS"].string)
            let (header, claims) = try Self.openJWS(jws, key: iapKey.publicKey)
            #expect(header["alg"].string == "ES256" && header["kid"].string == "KEY123" && header["typ"].string == "JWT")
            #expect(
                claims["iss"].string == "issuer-1" && claims["bid"].string == Self.bundle && claims["aud"].string == "promotional-offer"
            )
            #expect(claims["productId"].string == Self.yearly && claims["offerIdentifier"].string == "welcome")
            #expect(claims["transactionId"].string == "2000000000123456" && claims["nonce"].string == nonce)
            #expect(claims["iat"].int == Int(harness.clock.now().timeIntervalSince1970))

            let empty = try await Self.offer(client, key: key, user: "ana", offer: "welcome", extra: ["applicationUsername": ""])
            #expect(empty.status == .ok && empty.json["applicationUsername"].string == "")
            let noTransaction = try await Self.offer(client, key: key, user: "ana", offer: "welcome")
            let plainJWS = try #require(noTransaction.json["compactJWS"].string)
            #expect(try Self.openJWS(plainJWS, key: iapKey.publicKey).claims["transactionId"] == nil)
            #expect(noTransaction.json["nonce"].string != nonce, "a new nonce for every signature")
        }
    }

    @Test(
        "eligibility follows the tenant's rule and the user's subscriptions: win-back for lapsed users only, loyalty for live subscribers, intro for new ones"
    )
    func eligibility() async throws {
        let iapKey = P256.Signing.PrivateKey()
        // Introductory eligibility also reads the Apple account's history (T3): an empty one here.
        let standIn = AppleStandIn(apiKey: iapKey.publicKey, issuerId: "issuer-1", bundleId: Self.bundle)
        try await Application(router: standIn.router()).test(.live) { apple in
            let harness = try await Self.harness(iapKey, applePort: try #require(apple.port))
            defer { harness.close() }
            let key = try await harness.apiKey(Self.brain, .server)
            try await harness.app().test(.router) { client in
                let now = harness.clock.now()
                // ana never subscribed: no win-back, no loyalty offer; the introductory offer is hers.
                let never = try await Self.offer(client, key: key, user: "ana", offer: "winback50")
                #expect(never.status == .forbidden && Self.code(never) == "offer_not_eligible", "\(never.json)")
                #expect(try await Self.offer(client, key: key, user: "ana", offer: "loyal20").status == .forbidden)
                let intro = try await client.call(
                    .post,
                    "/api/offers/apple/introductory-eligibility",
                    auth: key,
                    user: "ana",
                    json: ["productId": .string(Self.yearly), "transactionId": "2000000000999999"]
                )
                #expect(intro.status == .ok && intro.json["allowIntroductoryOffer"].bool == true, "\(intro.json)")
                let introJWS = try #require(intro.json["compactJWS"].string)
                let introClaims = try Self.openJWS(introJWS, key: iapKey.publicKey).claims
                #expect(introClaims["aud"].string == "introductory-offer-eligibility" && introClaims["allowIntroductoryOffer"].bool == true)
                #expect(introClaims["transactionId"].string == "2000000000999999" && introClaims["productId"].string == Self.yearly)

                // ana's year ended last month: lapsed.
                let lapsed = SubscriptionsTests.period(
                    harness,
                    transaction: "2000000700000001",
                    original: "2000000700000001",
                    product: Self.yearly,
                    bundle: Self.bundle,
                    start: now.addingTimeInterval(-395 * 86_400),
                    days: 365
                )
                #expect(try await SubscriptionsTests.claim(client, harness, key: key, user: "ana", lapsed).status == .ok)
                #expect(try await Self.offer(client, key: key, user: "ana", offer: "winback50").status == .ok)
                #expect(try await Self.offer(client, key: key, user: "ana", offer: "loyal20").status == .forbidden)
                let noIntro = try await client.call(
                    .post,
                    "/api/offers/apple/introductory-eligibility",
                    auth: key,
                    user: "ana",
                    json: ["productId": .string(Self.yearly), "transactionId": "2000000700000001"]
                )
                #expect(noIntro.json["allowIntroductoryOffer"].bool == false)
                let noIntroJWS = try #require(noIntro.json["compactJWS"].string)
                #expect(try Self.openJWS(noIntroJWS, key: iapKey.publicKey).claims["allowIntroductoryOffer"].bool == false)

                // bob's year is running: loyalty yes, win-back no.
                let live = SubscriptionsTests.period(
                    harness,
                    transaction: "2000000700000002",
                    original: "2000000700000002",
                    product: Self.yearly,
                    bundle: Self.bundle,
                    start: now.addingTimeInterval(-30 * 86_400),
                    days: 365
                )
                #expect(try await SubscriptionsTests.claim(client, harness, key: key, user: "bob", live).status == .ok)
                #expect(try await Self.offer(client, key: key, user: "bob", offer: "loyal20").status == .ok)
                #expect(try await Self.offer(client, key: key, user: "bob", offer: "winback50").status == .forbidden)
                #expect(try await Self.offer(client, key: key, user: "bob", offer: "welcome").status == .ok, "no rule: anyone")

                // T3: a user Berth has never seen, on an Apple account whose history holds a yearly subscription (bob's),
                // gets no second trial: the account decides, not the name.
                standIn.state.withLock { $0.historyPages = [[try? harness.ca.signTransaction(live)].compactMap { $0 }] }
                let fresh = try await client.call(
                    .post,
                    "/api/offers/apple/introductory-eligibility",
                    auth: key,
                    user: "eve-fresh-1",
                    json: ["productId": .string(Self.yearly), "transactionId": "2000000700000002"]
                )
                #expect(fresh.status == .ok && fresh.json["allowIntroductoryOffer"].bool == false, "\(fresh.json)")
                let newcomer = try await Self.offer(
                    client,
                    key: key,
                    user: "eve-fresh-2",
                    offer: "loyal20",
                    extra: ["transactionId": "2000000700000002"]
                )
                #expect(newcomer.status == .ok, "the account subscribes now: a loyalty offer for it whoever Berth knows it as: \(newcomer.json)")
            }
        }
    }

    @Test(
        "refusals: an offer the catalog does not sign, an unknown product, a foreign applicationUsername, a malformed transaction id, no key configured"
    )
    func refusals() async throws {
        let iapKey = P256.Signing.PrivateKey()
        let harness = try await Self.harness(iapKey)
        defer { harness.close() }
        let key = try await harness.apiKey(Self.brain, .server)
        try await harness.app().test(.router) { client in
            let unknown = try await Self.offer(client, key: key, user: "ana", offer: "secret-offer")
            #expect(unknown.status == .unprocessableContent && Self.code(unknown) == "offer_unknown", "\(unknown.json)")
            let product = try await client.call(
                .post,
                "/api/offers/apple/promotional",
                auth: key,
                user: "ana",
                json: ["productId": "nope", "offerId": "welcome"]
            )
            #expect(product.status == .unprocessableContent && Self.code(product) == "unknown_product")
            let foreign = try await Self.offer(
                client,
                key: key,
                user: "ana",
                offer: "welcome",
                extra: ["applicationUsername": .string(AccountTokens.cordovaPlugin("bob"))]
            )
            #expect(
                foreign.status == .forbidden && Self.code(foreign) == "account_token_mismatch",
                "a signature is only for the caller's own payments"
            )
            let own = try await Self.offer(
                client,
                key: key,
                user: "ana",
                offer: "welcome",
                extra: ["applicationUsername": .string(AccountTokens.cordovaPlugin("ana").uppercased())]
            )
            #expect(own.status == .ok)
            let malformed = try await Self.offer(client, key: key, user: "ana", offer: "welcome", extra: ["transactionId": "12' OR 1"])
            #expect(malformed.status == .badRequest && Self.code(malformed) == "invalid_request")
            let missing = try await client.call(
                .post,
                "/api/offers/apple/promotional",
                auth: key,
                user: "ana",
                json: ["productId": .string(Self.yearly)]
            )
            #expect(missing.status == .badRequest)
            #expect(
                try await client.call(
                    .post,
                    "/api/offers/apple/promotional",
                    auth: nil,
                    json: ["productId": .string(Self.yearly), "offerId": "welcome"]
                )
                .status == .unauthorized
            )
        }
        let plain = try await Harness.make()
        defer { plain.close() }
        let plainKey = try await plain.apiKey(Self.brain, .server)
        try await plain.app().test(.router) { client in
            let reply = try await Self.offer(client, key: plainKey, user: "ana", offer: "welcome")
            #expect(reply.status == .unprocessableContent && Self.code(reply) == "offers_not_configured", "\(reply.json)")
        }
    }
}

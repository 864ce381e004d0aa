import AppleSignedData
import Domain
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Synchronization
import TestKit
import Testing
import _CryptoExtras

/// Braindumpster's shipped client (seed 004) against `braindumpster-test`: verify-receipt stores the
/// subscription and answers from it, in the client's shape and date format; Firebase-style RS256
/// tokens verified with keys from a JWKS served locally.
@Suite("Braindumpster: verify-receipt and Firebase tokens")
struct BraindumpsterTests {
    /// What the iOS client decodes (Swift's default `.iso8601` date strategy: no fractional seconds).
    struct ClientResponse: Decodable {
        var success: Bool
        var isPremium: Bool
        var productId: String?
        var expirationDate: Date?
        var environment: String?
        var message: String
    }

    static func decodeAsClient(_ reply: Reply) throws -> ClientResponse {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(ClientResponse.self, from: reply.data)
    }

    static func receipt(_ harness: Harness, original: String, start: Date, days: Double) throws -> String {
        try SubscriptionsTests.receipt(
            harness,
            bundle: SubscriptionsTests.brainBundle,
            product: SubscriptionsTests.yearly,
            original: original,
            periods: [(original, start, start.addingTimeInterval(days * 86_400))]
        )
    }

    static func verify(_ client: some TestClientProtocol, auth: String?, user: String? = nil, receipt: String) async throws -> Reply {
        try await client.call(
            .post,
            "/api/verify-receipt",
            auth: auth,
            user: user,
            json: [
                "receiptData": .string(receipt), "userId": JSON.null, "bundleId": .string(SubscriptionsTests.brainBundle), "appVersion": "1.0 (7)",
                "deviceInfo": ["model": "iPhone15,3", "osVersion": "iOS 18.0", "locale": "en_US"],
            ]
        )
    }

    @Test(
        "verify-receipt stores the subscription for the user and answers from it, in the client's shape, until it expires; another account's is 409; Apple unreachable falls back offline"
    )
    func verifyReceipt() async throws {
        // Apple's verifyReceipt is down (503 on every call): Berth answers from the offline result.
        let down = Router()
        let calls = Atomic<Int>(0)
        down.post("/verifyReceipt") { _, _ in
            calls.add(1, ordering: .relaxed)
            return Response(status: .serviceUnavailable)
        }
        try await Application(router: down).test(.live) { apple in
            let url = "http://127.0.0.1:\(apple.port!)/verifyReceipt"
            let harness = try await Harness.make(
                customize: { catalog in
                    let index = catalog.tenants.firstIndex { $0.id == SubscriptionsTests.brain }!
                    catalog.tenants[index].subscriptions = SubscriptionSettings(
                        verifyReceipt: .init(sharedSecretEnv: "BRAIN_SECRET", productionURL: url, sandboxURL: url)
                    )
                },
                environment: ["BRAIN_SECRET": "shared-secret"]
            )
            defer { harness.close() }
            let key = try await harness.apiKey(SubscriptionsTests.brain, .server)
            try await harness.app().test(.router) { client in
                let now = harness.clock.now()
                let receipt = try Self.receipt(harness, original: "2000000500000001", start: now.addingTimeInterval(-86_400), days: 365)
                let premium = try await Self.verify(client, auth: key, user: "firebase-uid-1", receipt: receipt)
                #expect(premium.status == .ok, "\(premium.json)")
                let decoded = try Self.decodeAsClient(premium)
                #expect(decoded.success && decoded.isPremium && decoded.productId == SubscriptionsTests.yearly && decoded.environment == "sandbox")
                #expect(decoded.expirationDate.map { abs($0.timeIntervalSince(now.addingTimeInterval(364 * 86_400))) < 2 } == true)
                #expect(
                    (premium.json["expirationDate"].string)?.hasSuffix("Z") == true
                        && (premium.json["expirationDate"].string)?.contains(".") == false
                )
                let stored = try await client.call(.get, "/api/entitlements", auth: key, user: "firebase-uid-1")
                #expect(stored.json["isPremium"].bool == true, "the subscription is kept for the user")
                #expect(
                    try await harness.rows("SELECT COUNT(*) AS n FROM receipt_checks WHERE receipt_sha256 LIKE '%' || ? || '%'", [receipt]).first?[
                        "n"
                    ] == "0"
                )

                let other = try await Self.verify(client, auth: key, user: "firebase-uid-2", receipt: receipt)
                #expect(
                    other.status == .conflict && other.json["success"].bool == false && other.json["isPremium"].bool == false
                        && other.json["message"].string != nil
                )

                harness.clock.advance(366 * 86_400)
                let lapsed = try Self.decodeAsClient(try await Self.verify(client, auth: key, user: "firebase-uid-1", receipt: receipt))
                #expect(lapsed.success && !lapsed.isPremium, "expiry follows the clock")

                // Every refusal keeps the client's shape, the middleware's 401s included.
                for auth in ["berth_unknown_key", "not-a-token", "a.b.c"] {
                    let refused = try await Self.verify(client, auth: auth, receipt: receipt)
                    #expect(refused.status == .unauthorized)
                    let body = try Self.decodeAsClient(refused)
                    #expect(!body.success && !body.isPremium && !body.message.isEmpty)
                }
                let garbage = try await Self.verify(client, auth: key, user: "u", receipt: "bm90IGEgcmVjZWlwdA==")
                let garbageBody = try Self.decodeAsClient(garbage)
                #expect((400..<500).contains(Int(garbage.status.code)) && garbageBody.success == false)
            }
        }
        #expect(calls.load(ordering: .relaxed) >= 3, "Berth asked Apple before falling back")
    }

    /// A local JWKS publisher whose key set can change (key rotation).
    final class JWKSServer: Sendable {
        let body = Mutex("{\"keys\": []}")
        let fetches = Atomic<Int>(0)

        func router() -> Router<BasicRequestContext> {
            let router = Router()
            router.get("/jwks") { _, _ in
                self.fetches.add(1, ordering: .relaxed)
                return Response(
                    status: .ok,
                    headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: self.body.withLock { $0 }))
                )
            }
            return router
        }
    }

    static func jwk(_ key: JWTKit.Insecure.RSA.PrivateKey, kid: String) throws -> String {
        let (n, e) = try key.publicKey.getKeyPrimitives()
        return
            #"{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "\#(kid)", "n": "\#(Base64URL.encode([UInt8](n)))", "e": "\#(Base64URL.encode([UInt8](e)))"}"#
    }

    static func firebaseToken(_ key: JWTKit.Insecure.RSA.PrivateKey, kid: String, user: String, project: String = "brain-test") async throws -> String
    {
        let keys = JWTKeyCollection()
        await keys.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        return try await keys.sign(
            TestUserClaims(
                sub: .init(value: user),
                iss: .init(value: "https://securetoken.google.com/\(project)"),
                aud: .init(value: [project]),
                exp: .init(value: Date().addingTimeInterval(600))
            ),
            kid: JWKIdentifier(string: kid)
        )
    }

    @Test(
        "a Firebase-style RS256 token signed by a key of the JWKS is accepted, one from an unknown key refused; a rotated key is fetched on its unknown kid"
    )
    func firebaseTokens() async throws {
        let published = try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        let rotated = try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        let jwks = JWKSServer()
        jwks.body.withLock { $0 = "{\"keys\": [\(try! Self.jwk(published, kid: "k1"))]}" }
        try await Application(router: jwks.router()).test(.live) { publisher in
            let harness = try await Harness.make(customize: { catalog in
                let index = catalog.tenants.firstIndex { $0.id == SubscriptionsTests.brain }!
                catalog.tenants[index].auth = UserAuth(
                    algorithm: "RS256",
                    issuer: "https://securetoken.google.com/brain-test",
                    audience: "brain-test",
                    jwksURL: "http://127.0.0.1:\(publisher.port!)/jwks"
                )
            })
            defer { harness.close() }
            try await harness.app().test(.router) { client in
                let good = try await Self.firebaseToken(published, kid: "k1", user: "uid-1")
                let accepted = try await client.call(.get, "/api/entitlements", auth: good)
                #expect(accepted.status == .ok, "\(accepted.json)")
                let receipt = try Self.receipt(harness, original: "2000000600000001", start: harness.clock.now(), days: 365)
                let verified = try Self.decodeAsClient(try await Self.verify(client, auth: good, receipt: receipt))
                #expect(verified.isPremium, "the user is the token's subject")
                #expect(
                    try await harness.rows("SELECT user_id FROM subscriptions WHERE original_transaction_id = '2000000600000001'").first?["user_id"]
                        == "uid-1"
                )

                let unknown = try await Self.firebaseToken(rotated, kid: "k2", user: "uid-2")
                #expect(try await client.call(.get, "/api/entitlements", auth: unknown).status == .unauthorized)
                let forged = try await Self.firebaseToken(rotated, kid: "k1", user: "uid-1")
                #expect(
                    try await client.call(.get, "/api/entitlements", auth: forged).status == .unauthorized,
                    "a known kid with another key's signature"
                )
                let refusedReceipt = try await Self.verify(client, auth: unknown, receipt: receipt)
                let refusedBody = try Self.decodeAsClient(refusedReceipt)
                #expect(refusedReceipt.status == .unauthorized && refusedBody.isPremium == false)

                // Google rotates its keys: the new kid is fetched (at most once a second, on Berth's clock).
                jwks.body.withLock { $0 = "{\"keys\": [\(try! Self.jwk(published, kid: "k1")), \(try! Self.jwk(rotated, kid: "k2"))]}" }
                harness.clock.advance(1.1)
                #expect(try await client.call(.get, "/api/entitlements", auth: unknown).status == .ok)
                let fetches = jwks.fetches.load(ordering: .relaxed)
                for _ in 0..<5 { _ = try await client.call(.get, "/api/entitlements", auth: good) }
                #expect(jwks.fetches.load(ordering: .relaxed) == fetches, "known keys are served from the cache")
            }
        }
    }
}

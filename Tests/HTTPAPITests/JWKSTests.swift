import AppleSignedData
import AsyncHTTPClient
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import Synchronization
import Testing
import UseCases
import _CryptoExtras

/// User-token key sets (issue 24: S5, S17, the permanent 401): keys verify RS256 only whatever a
/// token's header says, the set is fetched over https without redirects and refreshed on its
/// max-age, and a set that cannot be fetched answers 503 with Retry-After.
@Suite("JWKS: RS256 only, no redirects, max-age, 503 when unreachable")
struct JWKSTests {
    /// A key publisher whose answer can change: body, status, Cache-Control, or a redirect.
    final class Publisher: Sendable {
        let body = Mutex("{\"keys\": []}")
        let status = Mutex(HTTPResponse.Status.ok)
        let cacheControl = Mutex<String?>(nil)
        let fetches = Atomic<Int>(0)

        func router() -> Router<BasicRequestContext> {
            let router = Router()
            router.get("/jwks") { _, _ in
                self.fetches.add(1, ordering: .relaxed)
                let status = self.status.withLock { $0 }
                var headers: HTTPFields = [.contentType: "application/json"]
                if status == .found { headers[.location] = "/elsewhere" }
                if let cacheControl = self.cacheControl.withLock({ $0 }) { headers[.cacheControl] = cacheControl }
                return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: self.body.withLock { $0 })))
            }
            router.get("/elsewhere") { _, _ in
                Response(
                    status: .ok,
                    headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: self.body.withLock { $0 }))
                )
            }
            return router
        }
    }

    static let issuer = "https://securetoken.google.com/brain-test"

    static func newKey() throws -> JWTKit.Insecure.RSA.PrivateKey {
        try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
    }

    /// A published key; `alg: nil` leaves the member out (common outside Google).
    static func jwk(_ key: JWTKit.Insecure.RSA.PrivateKey, kid: String, alg: String? = nil) throws -> String {
        let (n, e) = try key.publicKey.getKeyPrimitives()
        let algMember = alg.map { #""alg": "\#($0)", "# } ?? ""
        return
            #"{"kty": "RSA", \#(algMember)"use": "sig", "kid": "\#(kid)", "n": "\#(Base64URL.encode([UInt8](n)))", "e": "\#(Base64URL.encode([UInt8](e)))"}"#
    }

    enum Algorithm { case rs256, rs512, ps512 }

    static func token(_ key: JWTKit.Insecure.RSA.PrivateKey, kid: String, user: String, algorithm: Algorithm = .rs256) async throws -> String {
        let keys = JWTKeyCollection()
        let id = JWKIdentifier(string: kid)
        switch algorithm {
        case .rs256: await keys.add(rsa: key, digestAlgorithm: .sha256, kid: id)
        case .rs512: await keys.add(rsa: key, digestAlgorithm: .sha512, kid: id)
        case .ps512: await keys.add(pss: key, digestAlgorithm: .sha512, kid: id)
        }
        return try await keys.sign(
            TestUserClaims(
                sub: .init(value: user),
                iss: .init(value: issuer),
                aud: .init(value: ["brain-test"]),
                exp: .init(value: Date().addingTimeInterval(600))
            ),
            kid: id
        )
    }

    /// Runs `body` against a Berth whose braindumpster-test tenant takes tokens from `publisher`.
    static func withBerth(_ publisher: Publisher, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        try await withBerth(publisher) { client, _ in try await body(client) }
    }

    /// Berth with the publisher's key set, and the clock Berth reads (the key set's age and refetch pace run on it).
    static func withBerth(_ publisher: Publisher, _ body: @escaping @Sendable (any TestClientProtocol, TestClock) async throws -> Void) async throws {
        try await Application(router: publisher.router()).test(.live) { server in
            let port = try #require(server.port)
            let harness = try await Harness.make(customize: { catalog in
                guard let index = catalog.tenants.firstIndex(where: { $0.id == SubscriptionsTests.brain }) else { return }
                catalog.tenants[index].auth = UserAuth(
                    algorithm: "RS256",
                    issuer: issuer,
                    audience: "brain-test",
                    jwksURL: "http://127.0.0.1:\(port)/jwks"
                )
            })
            defer { harness.close() }
            try await harness.app().test(.router) { client in try await body(client, harness.clock) }
        }
    }

    @Test("S5: a forged PS512 token for a key published without alg does not change how that key verifies; only RS256 is accepted")
    func headerCannotPickTheAlgorithm() async throws {
        let published = try Self.newKey(), attacker = try Self.newKey()
        let publisher = Publisher()
        let keySet = "{\"keys\": [\(try Self.jwk(published, kid: "k1")), \(try Self.jwk(published, kid: "k9", alg: "RS512"))]}"
        publisher.body.withLock { $0 = keySet }
        try await Self.withBerth(publisher) { client in
            let forged = try await Self.token(attacker, kid: "k1", user: "mallory", algorithm: .ps512)
            #expect(try await client.call(.get, "/api/entitlements", auth: forged).status == .unauthorized)
            let genuine = try await Self.token(published, kid: "k1", user: "alice")
            for _ in 0..<3 {
                let reply = try await client.call(.get, "/api/entitlements", auth: genuine)
                #expect(reply.status == .ok, "a genuine RS256 token after the forged one: \(reply.json)")
            }
            // The publisher's own key, but another algorithm: not what the app uses.
            let otherAlgorithm = try await Self.token(published, kid: "k1", user: "alice", algorithm: .ps512)
            #expect(try await client.call(.get, "/api/entitlements", auth: otherAlgorithm).status == .unauthorized)
            // A key the set publishes for RS512 is left out, even for a token that says RS256.
            let rs512Key = try await Self.token(published, kid: "k9", user: "alice")
            #expect(try await client.call(.get, "/api/entitlements", auth: rs512Key).status == .unauthorized)
            let rs512Token = try await Self.token(published, kid: "k9", user: "alice", algorithm: .rs512)
            #expect(try await client.call(.get, "/api/entitlements", auth: rs512Token).status == .unauthorized)
        }
    }

    @Test("an unreachable key set answers 503 with Retry-After (not a permanent 401); redirects are not followed")
    func unreachableKeySet() async throws {
        let published = try Self.newKey()
        let publisher = Publisher()
        let keySet = "{\"keys\": [\(try Self.jwk(published, kid: "k1", alg: "RS256"))]}"
        publisher.body.withLock { $0 = keySet }
        publisher.status.withLock { $0 = .internalServerError }
        try await Self.withBerth(publisher) { client, clock in
            let genuine = try await Self.token(published, kid: "k1", user: "alice")
            let down = try await client.call(.get, "/api/entitlements", auth: genuine)
            #expect(down.status == .serviceUnavailable && down.headers[.retryAfter] != nil, "\(down.status) \(down.json)")
            #expect(down.errorCode == "temporarily_unavailable")

            publisher.status.withLock { $0 = .found }  // to /elsewhere, which would serve the set
            clock.advance(1.1)  // the next fetch may go (at most one a second)
            let redirected = try await client.call(.get, "/api/entitlements", auth: genuine)
            #expect(redirected.status == .serviceUnavailable, "a redirect is not followed: \(redirected.status)")

            publisher.status.withLock { $0 = .ok }
            clock.advance(1.1)  // the next fetch may go (at most one a second)
            #expect(try await client.call(.get, "/api/entitlements", auth: genuine).status == .ok, "back once the set can be fetched")
        }
    }

    @Test("S17: a key withdrawn from the set stops verifying when the set's max-age ends, without an unknown kid to trigger it")
    func withdrawnKeyExpires() async throws {
        let first = try Self.newKey(), second = try Self.newKey()
        let publisher = Publisher()
        let keySet = "{\"keys\": [\(try Self.jwk(first, kid: "k1", alg: "RS256")), \(try Self.jwk(second, kid: "k2"))]}"
        publisher.body.withLock { $0 = keySet }
        publisher.cacheControl.withLock { $0 = "public, max-age=1, must-revalidate" }
        try await Application(router: publisher.router()).test(.live) { server in
            let port = try #require(server.port)
            // The set's age is read on a clock the test moves (a loaded machine's slow fetch never ages it), and the
            // fetch may take long on such a machine.
            let start = ContinuousClock.now
            let elapsed = Mutex(Duration.zero)
            let keys = JWKSKeys(
                url: "http://127.0.0.1:\(port)/jwks",
                minimumInterval: .milliseconds(100),
                shortestMaxAge: 0,
                fetchTimeout: .seconds(120),
                now: { start + elapsed.withLock { $0 } },
                client: .shared,
                logger: Logger(label: "test")
            )
            let token = try await Self.token(first, kid: "k1", user: "alice")
            _ = try await #require(try await keys.keys(for: "k1")).verify(token, as: TestUserClaims.self)
            let keySet = "{\"keys\": [\(try Self.jwk(second, kid: "k2"))]}"
            publisher.body.withLock { $0 = keySet }
            _ = try await #require(try await keys.keys(for: "k1")).verify(token, as: TestUserClaims.self)  // still within max-age: cached
            #expect(publisher.fetches.load(ordering: .relaxed) == 1)
            elapsed.withLock { $0 += .milliseconds(1200) }
            #expect(try await keys.keys(for: "k1") == nil, "k1 was withdrawn")
            #expect(try await keys.keys(for: "k2") != nil)
            #expect(publisher.fetches.load(ordering: .relaxed) == 2)
        }
    }

    @Test("S17: a key set URL must be https (plain http only to this machine)")
    func httpsOnly() async throws {
        await #expect(throws: (any Error).self) {
            _ = try await Harness.make(customize: { catalog in
                guard let index = catalog.tenants.firstIndex(where: { $0.id == SubscriptionsTests.brain }) else { return }
                catalog.tenants[index].auth = UserAuth(
                    algorithm: "RS256",
                    issuer: Self.issuer,
                    audience: "brain-test",
                    jwksURL: "http://keys.example.com/jwks"
                )
            })
        }
        #expect(JWKSKeys.maxAge("public, max-age=19204, must-revalidate, no-transform") == .seconds(19_204))
        #expect(JWKSKeys.maxAge("max-age=5") == .seconds(60), "at least a minute")
        #expect(JWKSKeys.maxAge("max-age=99999999999999999999") == .seconds(86_400), "at most a day")
        #expect(JWKSKeys.maxAge(nil) == .seconds(3600))
    }
}

import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// User-token keys published as a JSON Web Key Set (Firebase Authentication publishes Google's).
///
/// Every key becomes an RS256 verifier built from its own modulus and exponent: a key of another
/// type or algorithm is left out, so a token's header can never choose how a key verifies (a forged
/// `alg: PS512` token once fixed the algorithm of a key published without `alg`). The set is fetched
/// over https without following redirects, kept for the publisher's `Cache-Control: max-age` (one
/// hour when it says nothing; at least a minute, at most a day), fetched again when it expires or
/// when a token names a key id it lacks (rotation), never more than once per `minimumInterval`, so
/// forged key ids cannot make Berth hammer the publisher. A key withdrawn from the set stops
/// verifying once the set is refreshed. When no set can be had, ``keys(for:)`` throws
/// ``JWKSUnavailable``: the caller answers 503 with Retry-After (a 401 would tell clients that
/// their token is bad, and they would not retry).
public final class JWKSKeys: Sendable {
    public let url: String
    let minimumInterval: Duration
    /// How long a set whose refresh fails keeps verifying past its max-age.
    let staleGrace: Duration
    /// The shortest lifetime a set gets, whatever its max-age says.
    let shortestMaxAge: Int
    let logger: Logger
    /// The whole fetch's deadline.
    let fetchTimeout: Duration
    /// The clock the set's age is read on (injected by tests; the monotonic clock otherwise).
    let now: @Sendable () -> ContinuousClock.Instant
    /// What fetches the key set (the application's outbound client).
    let client: HTTPClient
    private let state = Mutex<State>(State())

    struct State {
        var keys: JWTKeyCollection?
        var kids: Set<String> = []
        var lastAttempt: ContinuousClock.Instant?
        var expires: ContinuousClock.Instant?
    }

    public init(
        url: String,
        minimumInterval: Duration = .seconds(1),
        staleGrace: Duration = .seconds(6 * 3600),
        shortestMaxAge: Int = 60,
        fetchTimeout: Duration = .seconds(10),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        client: HTTPClient,
        logger: Logger
    ) {
        self.client = client
        self.url = url
        self.fetchTimeout = fetchTimeout
        self.now = now
        self.shortestMaxAge = shortestMaxAge
        self.minimumInterval = minimumInterval
        self.staleGrace = staleGrace
        self.logger = logger
    }

    /// The keys to verify a token with key id `kid`: the cached set while it is fresh and knows
    /// `kid`; otherwise the set fetched again (when the last attempt is old enough). nil when the
    /// set does not publish `kid` (a token without a key id names none). Throws ``JWKSUnavailable``
    /// when there is no usable set.
    public func keys(for kid: String?) async throws(JWKSUnavailable) -> JWTKeyCollection? {
        guard let kid, !kid.isEmpty else { return nil }
        let now = self.now()
        let (cached, known, fresh, due, usable) = state.withLock { s -> (JWTKeyCollection?, Bool, Bool, Bool, Bool) in
            let fresh = s.expires.map { now < $0 } ?? false
            let due = s.lastAttempt.map { now - $0 >= minimumInterval } ?? true
            let usable = s.expires.map { now < $0 + staleGrace } ?? false
            return (s.keys, s.kids.contains(kid), fresh, due, usable)
        }
        if known, fresh, let cached { return cached }
        guard due else {
            if let cached, usable { return known ? cached : nil }
            throw JWKSUnavailable()
        }
        state.withLock { $0.lastAttempt = now }
        do {
            let (collection, kids, maxAge) = try await fetch()
            state.withLock { s in
                s.keys = collection
                s.kids = kids
                s.expires = self.now() + maxAge
            }
            return kids.contains(kid) ? collection : nil
        } catch {
            logger.warning("JWKS \(url) not fetched: \(error)")
            // A set past its max-age still verifies for a while when the publisher cannot be reached.
            if let cached, usable { return known ? cached : nil }
            throw JWKSUnavailable()
        }
    }

    private func fetch() async throws -> (JWTKeyCollection, Set<String>, Duration) {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        let seconds = max(1, fetchTimeout.components.seconds)
        let response = try await client.execute(request, timeout: .seconds(seconds))
        guard response.status == .ok else { throw JWKSError("the JWKS endpoint answered HTTP \(response.status.code)") }
        let body = try await response.body.collect(upTo: 1 << 20)
        let set = try JSONDecoder().decode(PublishedKeySet.self, from: Data(body.readableBytesView))
        let collection = JWTKeyCollection()
        var kids: Set<String> = []
        for key in set.keys {
            switch RS256Key.make(key) {
            case .success(let usable):
                await collection.add(rsa: usable.publicKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: usable.kid))
                kids.insert(usable.kid)
            case .failure(let reason):
                logger.warning("JWKS \(url): a key is not used (\(reason.description))")
            }
        }
        return (collection, kids, Self.maxAge(response.headers.first(name: "Cache-Control"), shortest: shortestMaxAge))
    }

    /// The lifetime a `Cache-Control` header gives the set: its max-age, within a minute and a day;
    /// an hour without one.
    public static func maxAge(_ header: String?, shortest: Int = 60) -> Duration {
        guard let header else { return .seconds(3600) }
        for directive in header.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int(parts[1].prefix(9)) else { continue }
            return .seconds(min(max(seconds, shortest), 86_400))
        }
        return .seconds(3600)
    }
}

/// One JWK as published (only the members Berth reads).
struct PublishedKey: Decodable {
    var kty: String?
    var kid: String?
    var alg: String?
    var use: String?
    var n: String?
    var e: String?
}

struct PublishedKeySet: Decodable {
    var keys: [PublishedKey]
}

/// A published key usable for RS256: an RSA key with an id, meant for signatures, whose `alg` is
/// RS256 or absent.
struct RS256Key {
    var kid: String
    var publicKey: Insecure.RSA.PublicKey

    static func make(_ key: PublishedKey) -> Result<RS256Key, JWKSError> {
        guard let kid = key.kid, !kid.isEmpty else { return .failure(JWKSError("no kid")) }
        guard key.kty == "RSA" else { return .failure(JWKSError("key \(kid) is of type \(key.kty ?? "none"), not RSA")) }
        guard key.alg == nil || key.alg == "RS256" else {
            return .failure(JWKSError("key \(kid) is for \(key.alg ?? ""), Berth verifies RS256 only"))
        }
        guard key.use == nil || key.use == "sig" else { return .failure(JWKSError("key \(kid) is not a signature key")) }
        guard let n = key.n, let e = key.e, let publicKey = try? Insecure.RSA.PublicKey(modulus: n, exponent: e) else {
            return .failure(JWKSError("key \(kid) has no usable modulus and exponent"))
        }
        return .success(RS256Key(kid: kid, publicKey: publicKey))
    }
}

/// No key set could be fetched and none is cached: the request may succeed later.
public struct JWKSUnavailable: Error, CustomStringConvertible {
    public var description: String { "the app's token keys cannot be fetched right now" }
}

struct JWKSError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import Synchronization

/// User-token keys published as a JSON Web Key Set (Firebase Authentication publishes Google's):
/// fetched on first use, cached, and fetched again when a token names a key id the set lacks (key
/// rotation), at most once per `minimumInterval` so that forged key ids cannot make Berth hammer
/// the publisher.
public final class JWKSKeys: Sendable {
    public let url: String
    let minimumInterval: Duration
    let logger: Logger
    private let state = Mutex<State>(State())

    struct State {
        var keys: JWTKeyCollection?
        var kids: Set<String> = []
        var lastFetch: ContinuousClock.Instant?
    }

    public init(url: String, minimumInterval: Duration = .seconds(1), logger: Logger) {
        self.url = url
        self.minimumInterval = minimumInterval
        self.logger = logger
    }

    /// The keys to verify a token with key id `kid`: the cached set, refetched first when it lacks
    /// `kid` (or was never fetched) and the last fetch is old enough.
    public func keys(for kid: String?) async -> JWTKeyCollection? {
        let (cached, known, due) = state.withLock { s -> (JWTKeyCollection?, Bool, Bool) in
            let known = kid.map { s.kids.contains($0) } ?? (s.keys != nil)
            let due = s.lastFetch.map { ContinuousClock.now - $0 >= minimumInterval } ?? true
            return (s.keys, known, due)
        }
        if known, let cached { return cached }
        guard due else { return cached }
        state.withLock { $0.lastFetch = .now }
        do {
            let (collection, kids) = try await fetch()
            state.withLock { s in
                s.keys = collection
                s.kids = kids
            }
            return collection
        } catch {
            logger.warning("JWKS \(url) not fetched: \(error)")
            return cached
        }
    }

    private func fetch() async throws -> (JWTKeyCollection, Set<String>) {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        guard response.status == .ok else { throw JWKSError("the JWKS endpoint answered HTTP \(response.status.code)") }
        let body = try await response.body.collect(upTo: 1 << 20)
        let jwks = try JSONDecoder().decode(JWKS.self, from: Data(body.readableBytesView))
        let collection = JWTKeyCollection()
        var kids: Set<String> = []
        for jwk in jwks.keys {
            guard let kid = jwk.keyIdentifier else { continue }
            do {
                try await collection.add(jwk: jwk)
                kids.insert(kid.string)
            } catch {
                logger.warning("JWKS \(url): key \(kid.string) not usable (\(error))")
            }
        }
        return (collection, kids)
    }
}

struct JWKSError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

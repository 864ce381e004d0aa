import AppleSignedData
import Foundation
import TestKit
import Testing

@Suite("Chain cache")
struct ChainCacheTests {
    @Test("many JWS from one leaf build the chain once")
    func buildsOncePerLeaf() async throws {
        let ca = try TestCA.generate()
        let verifier = ca.verifier
        for _ in 0..<50 {
            let jws = try ca.signTransaction(.testPurchase(bundleId: bundleId, productId: "p"))
            _ = try await verifier.verifyTransaction(jws, expecting: try sandbox())
        }
        let statistics = verifier.cacheStatistics
        #expect(statistics.builds == 1)
        #expect(statistics.hits == 49)
        #expect(statistics.entries == 1)

        // A second leaf under the same intermediate is a new chain.
        let sibling = try ca.withNewLeaf()
        _ = try await verifier.verifyTransaction(
            try sibling.signTransaction(.testPurchase(bundleId: bundleId, productId: "p")),
            expecting: try sandbox()
        )
        #expect(verifier.cacheStatistics.builds == 2)
    }

    @Test("a cached chain still rejects a payload signed outside the certificates' validity")
    func cachedChainChecksValidityPerPayload() async throws {
        let day: TimeInterval = 86_400
        let now = Date()
        let ca = try TestCA.generate(.init(now: now)).withNewLeaf(validity: now.addingTimeInterval(-10 * day)...now.addingTimeInterval(10 * day))
        let verifier = ca.verifier
        _ = try await verifier.verifyTransaction(
            try ca.signTransaction(.testPurchase(bundleId: bundleId, productId: "p", signedDate: now)),
            expecting: try sandbox()
        )
        #expect(verifier.cacheStatistics.builds == 1)

        let late = try ca.signTransaction(.testPurchase(bundleId: bundleId, productId: "p", signedDate: now.addingTimeInterval(11 * day)))
        #expect(await rejectionCode { _ = try await verifier.verifyTransaction(late, expecting: try sandbox()) } == .certificateExpired)
        let early = try ca.signTransaction(.testPurchase(bundleId: bundleId, productId: "p", signedDate: now.addingTimeInterval(-11 * day)))
        #expect(await rejectionCode { _ = try await verifier.verifyTransaction(early, expecting: try sandbox()) } == .certificateNotYetValid)
        #expect(verifier.cacheStatistics.builds == 1, "the rejections came from the cached chain")
        #expect(verifier.cacheStatistics.hits == 2)
    }

    @Test("failed chains are never trusted, their failure is remembered, and the cache is bounded")
    func boundedAndSuccessOnly() async throws {
        let ca = try TestCA.generate()
        let verifier = SignedDataVerifier(roots: ca.trustedRoots, cacheCapacity: 2)
        let stranger = try TestCA.generate()
        for _ in 0..<3 {
            let code = await rejectionCode {
                _ = try await verifier.verifyTransaction(
                    try stranger.signTransaction(.testPurchase(bundleId: bundleId, productId: "p")),
                    expecting: try sandbox()
                )
            }
            #expect(code == .untrustedRoot)
        }
        #expect(verifier.cacheStatistics.entries == 0)
        #expect(verifier.cacheStatistics.builds == 1, "the same junk is refused again without a second chain build")

        // A rogue leaf under the trusted intermediate (its own key signed it): refused as a broken
        // link, and again from memory.
        let rogueLeaf = try stranger.withNewLeaf().leaf
        let header = try [rogueLeaf.derBase64(), ca.x5c[1], ca.x5c[2]]
        for _ in 0..<2 {
            let jws = try stranger.signTransaction(.testPurchase(bundleId: bundleId, productId: "p"), header: .init(chain: .custom(header)))
            #expect(await rejectionCode { _ = try await verifier.verifyTransaction(jws, expecting: try sandbox()) } == .badChain)
        }
        #expect(verifier.cacheStatistics.builds == 2)
        #expect(verifier.cacheStatistics.entries == 0)

        var leaves = [ca]
        for _ in 0..<3 { leaves.append(try ca.withNewLeaf()) }
        for leaf in leaves {
            _ = try await verifier.verifyTransaction(
                try leaf.signTransaction(.testPurchase(bundleId: bundleId, productId: "p")),
                expecting: try sandbox()
            )
        }
        #expect(verifier.cacheStatistics.entries == 2)
        // The oldest leaf was evicted: verifying it again rebuilds its chain.
        let before = verifier.cacheStatistics.builds
        _ = try await verifier.verifyTransaction(
            try leaves[0].signTransaction(.testPurchase(bundleId: bundleId, productId: "p")),
            expecting: try sandbox()
        )
        #expect(verifier.cacheStatistics.builds == before + 1)
    }

    @Test("concurrent verifications share one verifier safely")
    func concurrentUse() async throws {
        let ca = try TestCA.generate()
        let verifier = ca.verifier
        let jws = try (0..<40).map { _ in try ca.signTransaction(.testPurchase(bundleId: bundleId, productId: "p")) }
        let expectations = try sandbox()
        let verified = try await withThrowingTaskGroup(of: String?.self) { group in
            for item in jws { group.addTask { try await verifier.verifyTransaction(item, expecting: expectations).payload.transactionId } }
            var ids = Set<String>()
            for try await id in group { if let id { ids.insert(id) } }
            return ids
        }
        #expect(verified.count == 40)
        #expect(verifier.cacheStatistics.hits + verifier.cacheStatistics.builds == 40)
    }
}

import Domain
import Foundation
import Testing
import UseCases

@Suite("The store seam: each proof goes to the store that proves it")
struct PurchaseSourcesTests {
    @Test("App Store proofs go to the App Store, Play tokens to Google Play; a proven transaction names its store")
    func routing() {
        let sources = PurchaseSources.standard
        #expect(sources.source(for: .jws("x")).store == .appStore)
        #expect(sources.source(for: .receipt("x", transactionId: nil)).store == .appStore)
        #expect(sources.source(for: .transactionId("1")).store == .appStore)
        #expect(sources.source(for: .playToken("t", packageName: nil)).store == .googlePlay)
        var proven = ProvenTransaction(
            transactionId: "GPA.1",
            originalTransactionId: "t",
            productId: "p",
            environment: "Production",
            purchasedAt: nil,
            revoked: false,
            appAccountToken: nil,
            proofHash: "h"
        )
        #expect(sources.source(of: proven).store == .appStore, "a transaction naming no store is the App Store's")
        proven.store = .googlePlay
        #expect(sources.source(of: proven).store == .googlePlay)
    }

    @Test("a store registered beside the two is asked first for what it proves")
    func registration() {
        struct Other: PurchaseSource {
            var store: StoreName { StoreName(rawValue: "web_checkout") }
            func proves(_ proof: PurchaseProof) -> Bool { if case .transactionId(let id) = proof { id.hasPrefix("web_") } else { false } }
            func prove(
                _ proof: PurchaseProof,
                productId: String?,
                userId: String,
                runtime: TenantRuntime,
                prover: PurchaseProver
            ) async throws -> ProvenTransaction {
                throw DomainError(.unprocessable, .unknownProduct, "not in this test", field: "transactionId")
            }
        }
        let sources = PurchaseSources([Other(), AppStoreSource(), GooglePlaySource()])
        #expect(sources.source(for: .transactionId("web_1")).store.rawValue == "web_checkout")
        #expect(sources.source(for: .transactionId("2000000000000001")).store == .appStore)
    }
}

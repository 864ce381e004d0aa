import Domain
import Foundation
import Testing
import UseCases

@Suite("The store seam: each proof goes to the store that proves it")
struct PurchaseSourcesTests {
    @Test("each proof is read once, by the store whose fields the request carried; a proven transaction names its store")
    func routing() throws {
        let sources = PurchaseSources.standard
        #expect(try sources.proof(from: ProofFields(["jwsRepresentation": "x"])).store == .appStore)
        #expect(try sources.proof(from: ProofFields(["receipt": "x"])).field == "receipt")
        #expect(try sources.proof(from: ProofFields(["transactionId": "1"])).claimedTransactionId == "1")
        let play = try sources.proof(from: ProofFields(["purchaseToken": "t", "jwsRepresentation": "x", "transactionId": "2"]))
        #expect(play.store == .googlePlay, "a purchase token wins over App Store fields beside it")
        #expect(play.field == "purchaseToken")
        #expect(play.claimedTransactionId == nil, "an App Store transaction id beside a Play token claims nothing")
        let jws = try sources.proof(from: ProofFields(["jwsRepresentation": "x", "transactionId": "", "receipt": "r"]))
        #expect(jws.field == "jwsRepresentation")
        #expect(jws.claimedTransactionId == nil, "an empty transactionId names no transaction")
        do {
            _ = try sources.proof(from: ProofFields(["transactionId": "", "packageName": "p"]))
            Issue.record("no proof was refused")
        } catch let error as DomainError {
            #expect(error.code == .missingField)
            #expect(error.field == "jwsRepresentation")
            #expect(error.message.contains("purchaseToken (Google Play)"))
        }
        var proven = ProvenTransaction(
            transactionId: "GPA.1",
            originalTransactionId: "t",
            productId: "p",
            environment: .production,
            purchasedAt: nil,
            revoked: false,
            appAccountToken: nil,
            proofHash: "h"
        )
        #expect(sources.source(of: proven).store == .appStore, "a transaction naming no store is the App Store's")
        proven.store = .googlePlay
        #expect(sources.source(of: proven).store == .googlePlay)
    }

    @Test("a store registered before the two reads its own fields first; the others still read theirs")
    func registration() throws {
        struct Other: PurchaseSource {
            var store: StoreName { StoreName(rawValue: "web_checkout") }
            var proofFieldsHint: String { "checkoutId (web checkout)" }
            var primaryField: String { "checkoutId" }
            func proof(from fields: ProofFields) -> PurchaseProof? {
                fields["checkoutId"].map { PurchaseProof(source: self, field: "checkoutId", form: $0) }
            }
            func prove(
                _ proof: PurchaseProof,
                productId: String?,
                userId: String,
                runtime: TenantRuntime,
                prover: PurchaseProver
            ) async throws -> ProvenTransaction {
                throw DomainError(.unprocessable, .unknownProduct, "not in this test", field: proof.field)
            }
        }
        let sources = PurchaseSources([Other(), AppStoreSource(), GooglePlaySource()], fallback: AppStoreSource())
        #expect(try sources.proof(from: ProofFields(["checkoutId": "web_1", "transactionId": "3"])).store.rawValue == "web_checkout")
        #expect(try sources.proof(from: ProofFields(["transactionId": "2000000000000001"])).store == .appStore)
    }
}

import AppleSignedData
import AppleStandIn
import Crypto
import Domain
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import TestKit

/// A purchase's life after the claim, against the Apple stand-in: refund defence (consent, Send
/// Consumption Information V2 from the credit ledger).
@Suite("Apple lifecycle: consumption answers with consent")
struct AppleLifecycleTests {
    static let tenant = CreditsTests.stylist
    static let bundle = CreditsTests.stylistBundle

    @Test("a consumption request for a half-spent credit pack sends 50 % with the recorded consent (V2 body, the tenant's refund preference); without consent nothing is sent")
    func halfSpentPack() async throws {
        let apiKey = P256.Signing.PrivateKey()
        let standIn = AppleStandIn(apiKey: apiKey.publicKey, issuerId: "issuer-1", bundleId: Self.bundle)
        try await Application(router: standIn.router()).test(.live) { apple in
            let harness = try await Harness.make(appleStandIn: (apple.port!, apiKey.pemRepresentation), customize: { catalog in
                guard let index = catalog.tenants.firstIndex(where: { $0.id == Self.tenant }) else { return }
                catalog.tenants[index].apple.refundPreference = .auto
            })
            defer { harness.close() }
            let key = try await harness.apiKey(Self.tenant, .server)
            try await harness.app().test(.router) { client in
                let transaction = TransactionPayload.testPurchase(bundleId: Self.bundle, productId: CreditsTests.popular, transactionId: "3000000000000501")
                let bought = try await client.call(.post, "/api/verify-purchase", auth: key, user: "ana",
                                                   json: ["productId": CreditsTests.popular, "jwsRepresentation": try harness.ca.signTransaction(transaction)])
                #expect(bought.json["newBalance"] as? Int == 52, "50 bought, 2 of signup bonus")
                // 27 spent: the 2 bonus credits (older) first, then 25 of the pack's 50.
                let spend = try await CreditsTests.reserve(client, key: key, user: "ana", body: ["amount": 27])
                _ = try await CreditsTests.settle(client, key: key, user: "ana", reservation: spend, "commit")

                func request() async throws -> Reply {
                    try await client.call(.post, "/api/apple/notifications/\(Self.tenant)", auth: nil,
                                          json: ["signedPayload": try harness.ca.signNotification(type: .consumptionRequest, bundleId: Self.bundle, transaction: transaction)])
                }
                #expect(try await request().json["outcome"] as? String == "consumption_requested")
                #expect(!standIn.requests.contains { $0.path.contains("/consumption/") }, "no consent recorded: Apple is told nothing")

                let never = try await client.call(.get, "/api/consumption-consent", auth: key, user: "ana")
                #expect(never.status == .ok && never.json["consented"] as? Bool == false && never.json["recordedAt"] == nil)
                let given = try await client.call(.put, "/api/consumption-consent", auth: key, user: "ana", json: ["consented": true, "textVersion": "refund-terms-2026-11"])
                #expect(given.status == .ok && given.json["consented"] as? Bool == true, "\(given.json)")
                #expect(try await client.call(.put, "/api/consumption-consent", auth: key, user: "ana", json: ["consented": true]).status == .badRequest)

                #expect(try await request().json["outcome"] as? String == "consumption_requested")
                let sent = try #require(standIn.requests.first { $0.method == "PUT" && $0.path == "/sandbox/inApps/v2/transactions/consumption/3000000000000501" })
                let body = try #require(try JSONSerialization.jsonObject(with: Data((sent.body ?? "").utf8)) as? [String: Any])
                #expect(body["customerConsented"] as? Bool == true && body["deliveryStatus"] as? String == "DELIVERED")
                #expect(body["consumptionPercentage"] as? Int == 50_000, "half of the pack's lot is spent: \(body)")
                #expect(body["refundPreference"] as? String == "GRANT_PRORATED" && body["sampleContentProvided"] as? Bool == false)
                #expect(body["consumptionStatus"] == nil && body["playTime"] == nil, "the V2 body, not the deprecated V1 fields")

                // The user withdraws consent: the next request is not answered.
                _ = try await client.call(.put, "/api/consumption-consent", auth: key, user: "ana", json: ["consented": false, "textVersion": "refund-terms-2026-11"])
                let before = standIn.requests.count { $0.path.contains("/consumption/") }
                _ = try await request()
                #expect(standIn.requests.count { $0.path.contains("/consumption/") } == before)
                let audit = try await client.call(.get, "/api/admin/audit", auth: try await harness.apiKey(Self.tenant, .admin))
                #expect((audit.json["items"] as? [[String: Any]] ?? []).filter { $0["action"] as? String == "consumption_consent.recorded" }.count == 2)
            }
        }
    }
}

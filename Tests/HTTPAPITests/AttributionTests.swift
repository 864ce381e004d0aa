import AppleSignedData
import Domain
import Foundation
import HTTPTypes
import HummingbirdTesting
import TestKit
import Testing
import UseCases

@testable import HTTPAPI

/// Automatic attribution: a transaction Berth learns of without a claim (Apple's notification of a
/// purchase the app never reported) reaches its user when its appAccountToken names one: at once
/// when the user has claimed before (the tokens derived from the user id are recorded on every
/// applied claim), else at the user's next call; without a token it waits for operators.
@Suite("Attribution of unclaimed transactions by appAccountToken")
struct AttributionTests {
    static func notify(_ client: some TestClientProtocol, _ harness: Harness, id: String, token: String?) async throws -> Reply {
        let transaction = TransactionPayload.testPurchase(
            bundleId: CreditsTests.stylistBundle,
            productId: CreditsTests.starter,
            transactionId: id,
            appAccountToken: token.flatMap(UUID.init(uuidString:))
        )
        return try await client.call(
            .post,
            "/api/apple/notifications/\(CreditsTests.stylist)",
            auth: nil,
            json: [
                "signedPayload": try .string(
                    harness.ca.signNotification(type: .oneTimeCharge, bundleId: CreditsTests.stylistBundle, transaction: transaction)
                )
            ]
        )
    }

    @Test(
        "a known user's token applies the notified purchase at once; an unseen user's waits for that user's next call; no token waits for operators"
    )
    func attribution() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let keys = try await CreditsTests.Keys.make(harness)
        try await harness.app().test(.router) { client in
            // Ana buys once through the app: the tokens her id derives are remembered.
            let bought = try await CreditsTests.buy(
                client,
                harness,
                key: keys.stylist,
                user: "ana",
                product: CreditsTests.popular,
                transactionId: "3000000000080001"
            )
            #expect(bought.json["newBalance"].int == 52, "\(bought.json)")
            #expect(
                try await harness.rows("SELECT user_id FROM account_tokens WHERE token = '\(AccountTokens.cordovaPlugin("ana"))'").first?["user_id"]
                    == "ana"
            )

            // Her app crashed before reporting a second pack: Apple's notification applies it to her.
            let notified = try await Self.notify(client, harness, id: "3000000000080002", token: AccountTokens.cordovaPlugin("ana"))
            #expect(notified.json["outcome"].string == "applied_to_token_user", "\(notified.json)")
            #expect(try await CreditsTests.balance(client, key: keys.stylist, user: "ana")?.balance == 62)
            // The app reports it later after all: the same purchase, nothing added.
            let late = try await CreditsTests.buy(
                client,
                harness,
                key: keys.stylist,
                user: "ana",
                product: CreditsTests.starter,
                transactionId: "3000000000080002"
            )
            #expect(late.status == .ok && late.json["newBalance"].int == 62, "\(late.json)")

            // Bao never claimed anything: the purchase waits, and his next call gets it.
            let waiting = try await Self.notify(client, harness, id: "3000000000080003", token: AccountTokens.cordovaPlugin("bao"))
            #expect(waiting.json["outcome"].string == "unclaimed_purchase", "\(waiting.json)")
            #expect(try await harness.rows("SELECT COUNT(*) AS n FROM purchases WHERE transaction_id = '3000000000080003'").first?["n"] == "0")
            let bao = try await CreditsTests.balance(client, key: keys.stylist, user: "bao")
            #expect(bao?.balance == 12, "2 free + the 10 of the pack: \(String(describing: bao))")
            let unclaimed = try await client.call(.get, "/api/admin/unclaimed", auth: keys.stylistAdmin)
            let row = (unclaimed.json["items"].array)?.first { $0["transactionId"].string == "3000000000080003" }
            #expect(row?["claimedByPurchaseId"].int != nil, "\(unclaimed.json)")
            // Another user's call does not take it (nor anything else).
            #expect(try await CreditsTests.balance(client, key: keys.stylist, user: "chi")?.balance == 2)

            // Without a token nobody's call takes it: it waits for operators.
            let anonymous = try await Self.notify(client, harness, id: "3000000000080004", token: nil)
            #expect(anonymous.json["outcome"].string == "unclaimed_purchase")
            _ = try await CreditsTests.balance(client, key: keys.stylist, user: "ana")
            _ = try await CreditsTests.balance(client, key: keys.stylist, user: "bao")
            #expect(try await harness.rows("SELECT COUNT(*) AS n FROM purchases WHERE transaction_id = '3000000000080004'").first?["n"] == "0")
            #expect(try await harness.count("purchases") == 3)

            // A verify-purchase is a next call too: Chi's waiting pack is applied with her own purchase.
            #expect(
                try await Self.notify(client, harness, id: "3000000000080005", token: AccountTokens.cordovaPlugin("chi")).json["outcome"].string
                    == "unclaimed_purchase"
            )
            let chiBuys = try await CreditsTests.buy(
                client,
                harness,
                key: keys.stylist,
                user: "chi",
                product: CreditsTests.starter,
                transactionId: "3000000000080006"
            )
            #expect(chiBuys.status == .ok, "\(chiBuys.json)")
            #expect(try await harness.rows("SELECT user_id FROM purchases WHERE transaction_id = '3000000000080005'").first?["user_id"] == "chi")
            #expect(try await CreditsTests.balance(client, key: keys.stylist, user: "chi")?.balance == 22)
        }
    }
}

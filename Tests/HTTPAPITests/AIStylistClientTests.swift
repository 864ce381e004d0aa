import AppleSignedData
import Crypto
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Synchronization
import TestKit
import Testing
import _CryptoExtras

@testable import HTTPAPI

/// The AI image stylist's iOS client (seed 000) as its plan writes it: `/v1/...` paths, snake_case
/// bodies, Firebase ID tokens (the tenant picked by the token's project), its DTOs decoded as the
/// client's own Codable types (unknown `type` values would fail the whole decode, as in Swift).
@Suite("The AI image stylist's client on /v1")
struct AIStylistClientTests {
    static let project = "stylist-test"

    // The client's DTOs, field for field as the plan names them.
    struct CreditsBalanceResponse: Decodable { var credits: Int }
    struct PurchaseResponse: Decodable {
        var transaction_id: String
        var credits_added: Int
        var new_balance: Int
    }
    struct TransactionDto: Decodable {
        enum Kind: String, Decodable { case purchase, usage, bonus }
        enum Status: String, Decodable { case pending, completed, failed, refunded }
        var id: UUID
        var type: Kind
        var amount: Int
        var product_id: String?
        var status: Status
        var created_at: String
    }
    struct TransactionHistoryResponse: Decodable {
        struct Meta: Decodable {
            var total: Int
            var limit: Int
            var offset: Int
        }
        var transactions: [TransactionDto]
        var meta: Meta
    }
    struct IAPProductResponse: Decodable {
        var id: UUID
        var product_id: String
        var name: String
        var description: String?
        var credits: Int
        var price: Decimal?
        var currency: String?
        var display_order: Int
    }
    struct IAPProductsListResponse: Decodable { var products: [IAPProductResponse] }
    struct NestError: Decodable {
        var statusCode: Int
        var code: String
        var message: String
    }

    static func decode<T: Decodable>(_ type: T.Type, _ reply: Reply) throws -> T {
        try JSONDecoder().decode(T.self, from: reply.data)
    }

    /// JavaScript's `toISOString()` form (milliseconds, Z), which the client's date parsing was written for.
    static func isJavaScriptTime(_ text: String) -> Bool {
        text.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#, options: .regularExpression) != nil
    }

    @Test(
        "products (public), balance with the signup bonus, a purchase and its retry, another account's replay, history, and refusals in the client's shape"
    )
    func wholeFlow() async throws {
        let key = try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        let jwks = BraindumpsterTests.JWKSServer()
        jwks.body.withLock { $0 = "{\"keys\": [\(try! BraindumpsterTests.jwk(key, kid: "f1"))]}" }
        try await Application(router: jwks.router()).test(.live) { publisher in
            let harness = try await Harness.make(customize: { catalog in
                let index = catalog.tenants.firstIndex { $0.id == CreditsTests.stylist }!
                catalog.tenants[index].auth = UserAuth(
                    algorithm: "RS256",
                    issuer: "https://securetoken.google.com/\(Self.project)",
                    audience: Self.project,
                    jwksURL: "http://127.0.0.1:\(publisher.port!)/jwks"
                )
                // Only this tenant publishes /v1 products in this catalog.
                if let live = catalog.tenants.firstIndex(where: { $0.id == "aistylist" }) { catalog.tenants[live].credits?.v1Routes = false }
            })
            defer { harness.close() }
            try await harness.app().test(.router) { client in
                // The purchase screen's catalog: no credentials, prices in dollars, display order.
                let listed = try await client.call(.get, "/v1/iap/products", auth: nil)
                #expect(listed.status == .ok, "\(listed.json)")
                let products = try Self.decode(IAPProductsListResponse.self, listed).products
                #expect(products.map(\.product_id) == [CreditsTests.starter, CreditsTests.popular, "com.aiimagestylist.credits.bestvalue"])
                #expect(products.map(\.price) == [Decimal(string: "0.99"), Decimal(string: "4.99"), Decimal(string: "8.99")])
                #expect(products.map(\.credits) == [10, 50, 100] && products.map(\.display_order) == [1, 2, 3])
                #expect(products.allSatisfy { $0.currency == "USD" } && Set(products.map(\.id)).count == 3)
                #expect(String(data: listed.data, encoding: .utf8)?.contains("\"price\":0.99") == true, "a JSON number in currency units")

                // ?tenant= picks a tenant serving /v1 publicly; another id is 404; a token's app answers for itself.
                #expect(try await client.call(.get, "/v1/iap/products?tenant=\(CreditsTests.stylist)", auth: nil).status == .ok)
                let other = try await client.call(.get, "/v1/iap/products?tenant=seaboo-test", auth: nil)
                #expect(other.status == .notFound && (try? Self.decode(NestError.self, other))?.code == "not_found", "\(other.json)")
                let seabooToken = try await harness.userToken("giulia")
                #expect(try await client.call(.get, "/v1/iap/products", auth: seabooToken).status == .notFound, "Seaboo does not serve /v1")

                let ana = try await BraindumpsterTests.firebaseToken(key, kid: "f1", user: "firebase-uid-ana", project: Self.project)
                let own = try await client.call(.get, "/v1/iap/products", auth: ana)
                #expect(try Self.decode(IAPProductsListResponse.self, own).products.count == 3)
                let balance = try await client.call(.get, "/v1/credits/balance", auth: ana)
                #expect(try Self.decode(CreditsBalanceResponse.self, balance).credits == 2, "new users get 2 credits: \(balance.json)")

                let jws = try harness.purchase(CreditsTests.popular, transactionId: "3000000000007001", bundleId: CreditsTests.stylistBundle)
                let body: JSON = ["transaction_data": .string(jws), "product_id": .string(CreditsTests.popular)]
                let bought = try await client.call(.post, "/v1/credits/purchase", auth: ana, json: body)
                #expect(bought.status == .ok, "\(bought.json)")
                let purchase = try Self.decode(PurchaseResponse.self, bought)
                #expect(purchase.transaction_id == "3000000000007001" && purchase.credits_added == 50 && purchase.new_balance == 52)
                let retried = try Self.decode(PurchaseResponse.self, try await client.call(.post, "/v1/credits/purchase", auth: ana, json: body))
                #expect(retried.credits_added == 0 && retried.new_balance == 52, "a retry succeeds and adds nothing")
                #expect(try Self.decode(CreditsBalanceResponse.self, try await client.call(.get, "/v1/credits/balance", auth: ana)).credits == 52)

                let bao = try await BraindumpsterTests.firebaseToken(key, kid: "f1", user: "firebase-uid-bao", project: Self.project)
                let replay = try await client.call(.post, "/v1/credits/purchase", auth: bao, json: body)
                let replayError = try Self.decode(NestError.self, replay)
                #expect(replay.status == .conflict && replayError.statusCode == 409 && replayError.code == "transaction_already_used")

                // The image service spends through a reservation: more than the balance is 403 insufficient_credits.
                let tooMuch = try await client.call(.post, "/api/credits/reservations", auth: ana, json: ["amount": 53, "reference": "image-1"])
                #expect(tooMuch.status == .forbidden && tooMuch.errorCode == "insufficient_credits", "\(tooMuch.json)")
                let spend = try await client.call(.post, "/api/credits/reservations", auth: ana, json: ["amount": 1, "reference": "image-2"])
                let reservation = try #require(spend.json["reservation"]["id"].int)
                #expect(try await client.call(.post, "/api/credits/reservations/\(reservation)/commit", auth: ana).status == .ok)

                let history = try await client.call(.get, "/v1/credits/transactions?limit=20&offset=0", auth: ana)
                #expect(history.status == .ok, "\(history.json)")
                let page = try Self.decode(TransactionHistoryResponse.self, history)
                #expect(page.meta.total == 3 && page.meta.limit == 20 && page.meta.offset == 0)
                #expect(Set(page.transactions.map(\.type)) == [.bonus, .purchase, .usage])
                #expect(page.transactions.first { $0.type == .usage }?.amount == -1)
                #expect(page.transactions.first { $0.type == .purchase }?.product_id == CreditsTests.popular)
                #expect(page.transactions.allSatisfy { $0.status == .completed && Self.isJavaScriptTime($0.created_at) })
                let second = try Self.decode(
                    TransactionHistoryResponse.self,
                    try await client.call(.get, "/v1/credits/transactions?limit=1&offset=1", auth: ana)
                )
                #expect(second.transactions.count == 1 && second.meta.total == 3)

                // Refusals in NestJS's shape with Berth's code.
                let missing = try await client.call(.post, "/v1/credits/purchase", auth: ana, json: ["product_id": .string(CreditsTests.popular)])
                let missingError = try Self.decode(NestError.self, missing)
                #expect(missing.status == .badRequest && missingError.code == "missing_field" && missingError.statusCode == 400)
                let anonymous = try await client.call(.get, "/v1/credits/balance", auth: nil)
                #expect(anonymous.status == .unauthorized && (try? Self.decode(NestError.self, anonymous))?.statusCode == 401)
                let forged = try await client.call(
                    .post,
                    "/v1/credits/purchase",
                    auth: ana,
                    json: ["transaction_data": "x.y.z", "product_id": .string(CreditsTests.popular)]
                )
                #expect((400...499).contains(Int(forged.status.code)) && (try? Self.decode(NestError.self, forged)) != nil, "\(forged.json)")
                #expect(try await client.call(.get, "/v1/credits/transactions?limit=0", auth: ana).status == .badRequest)

                // A tenant that does not serve these routes answers 404 in the same shape.
                let zorya = try await harness.userToken("olha", issuer: "https://auth.zorya.test")
                let elsewhere = try await client.call(.get, "/v1/credits/balance", auth: zorya)
                #expect(elsewhere.status == .notFound && (try? Self.decode(NestError.self, elsewhere))?.code == "not_found", "\(elsewhere.json)")
            }
        }
    }

    @Test("the catalog refuses credits.v1Routes on a tenant with several credit types (its balance is one number)")
    func v1RoutesNeedOneType() throws {
        var catalog = try JSONDecoder().decode(Catalog.self, from: try Data(contentsOf: Harness.repository.appendingPathComponent("products.json")))
        try catalog.validate()
        let index = try #require(catalog.tenants.firstIndex { $0.id == CreditsTests.zorya })
        catalog.tenants[index].credits?.v1Routes = true
        #expect(throws: CatalogError.self) { try catalog.validate() }
    }

    @Test("prices become currency units by the currency's ISO 4217 digits")
    func currencyUnits() {
        #expect(CurrencyUnits.amount(minor: 99, currency: "USD") == Decimal(string: "0.99"))
        #expect(CurrencyUnits.amount(minor: 25_000, currency: "VND") == 25_000)
        #expect(CurrencyUnits.amount(minor: 120, currency: "jpy") == 120)
        #expect(CurrencyUnits.amount(minor: 1_500, currency: "KWD") == Decimal(string: "1.5"))
        #expect(V1Transaction.uuid(42) == "00000000-0000-4000-8000-00000000002a")
        #expect(UUID(uuidString: V1Transaction.uuid(Int64.max)) != nil)
    }
}

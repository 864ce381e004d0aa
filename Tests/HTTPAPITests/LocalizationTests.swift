import AppleSignedData
import Domain
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TestKit
import Testing

@testable import HTTPAPI

/// Refusals in the caller's language: the code never changes; the message (and for purchase
/// refusals a title and a description) follows Accept-Language, else the tenant's default, else English.
@Suite("Localized refusals")
struct LocalizationTests {
    static func call(
        _ client: some TestClientProtocol,
        _ uri: String,
        auth: String,
        user: String? = nil,
        language: String?,
        json: JSON
    ) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(auth)"]
        if let user { headers[HTTPField.Name("X-User-Id")!] = user }
        if let language { headers[.acceptLanguage] = language }
        return try await client.execute(
            uri: uri,
            method: .post,
            headers: headers,
            body: ByteBuffer(bytes: try json.data())
        ) { response in
            Reply(status: response.status, data: Data(response.body.readableBytesView), headers: response.headers)
        }
    }

    static func detail(_ reply: Reply) -> (code: String?, message: String?, title: String?, description: String?) {
        let error = reply.json["error"].object
        return (error?["code"].string, error?["message"].string, error?["title"].string, error?["description"].string)
    }

    @Test("a replayed purchase is refused in Ukrainian, Vietnamese, Italian, Chinese or English by Accept-Language, with the same code")
    func purchaseRefusals() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        let key = try await harness.apiKey(CreditsTests.stylist, .server)
        try await harness.app().test(.router) { client in
            let jws = try harness.purchase(CreditsTests.popular, transactionId: "3000000000090001", bundleId: CreditsTests.stylistBundle)
            let body: JSON = ["productId": .string(CreditsTests.popular), "jwsRepresentation": .string(jws)]
            #expect(try await Self.call(client, "/api/verify-purchase", auth: key, user: "ana", language: nil, json: body).status == .ok)
            let expected: [(String?, String, String)] = [
                ("uk-UA,uk;q=0.9,en;q=0.8", "uk", "Покупку вже використано"),
                ("vi-VN", "vi", "Giao dịch đã được sử dụng"),
                ("it", "it", "Acquisto già utilizzato"),
                ("zh-Hans-CN,zh;q=0.9", "zh", "购买已被使用"),
                ("fr-FR,fr;q=0.9", "en", "Purchase already used"),
                ("en;q=0.2, it;q=0.8", "it", "Acquisto già utilizzato"),
                (nil, "en", "Purchase already used"),
            ]
            for (header, language, title) in expected {
                let reply = try await Self.call(client, "/api/verify-purchase", auth: key, user: "bao", language: header, json: body)
                let detail = Self.detail(reply)
                #expect(reply.status == .conflict && detail.code == "transaction_already_used", "\(header ?? "none"): \(reply.json)")
                #expect(detail.title == title && reply.headers[.contentLanguage] == language, "\(header ?? "none"): \(reply.json)")
                #expect(detail.description?.isEmpty == false)
                if language != "en" { #expect(detail.message == detail.description, "the message is in the caller's language") }
            }
            // Not enough credits, in Vietnamese (the stylist's own words).
            let reserve = try await Self.call(
                client,
                "/api/credits/reservations",
                auth: key,
                user: "ana",
                language: "vi",
                json: ["amount": 500, "reference": "img-1"]
            )
            #expect(
                reserve.status == .forbidden && Self.detail(reserve).code == "insufficient_credits"
                    && Self.detail(reserve).title == "Không đủ Credits",
                "\(reserve.json)"
            )
        }
    }

    @Test("a slot taken before any payment answers slot_taken in every language, without a word about payment or refunds")
    func slotTakenSaysNothingOfPayment() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let start = Harness.day(5, from: harness.clock.now())
            let body: JSON = ["resourceId": "gozzo-5m", "start": .string(iso(start)), "end": .string(iso(start.addingTimeInterval(8 * 3600)))]
            _ = try await createBooking(client, harness, user: "alice", body: body)
            let payment = ["payment", "thanh toán", "pagamento", "платіж", "付款", "refund", "rimborso", "hoàn tiền", "повернення", "退款"]
            for language in ["en", "vi", "it", "uk", "zh"] {
                let taken = try await Self.call(client, "/api/bookings", auth: harness.serverKey, user: "bob", language: language, json: body)
                let (code, message, _, _) = Self.detail(taken)
                #expect(taken.status == .conflict && code == "slot_taken", "\(language): \(taken.json)")
                let text = (message ?? "").lowercased()
                #expect(!text.isEmpty && !payment.contains { text.contains($0) }, "\(language): \(text)")
            }
        }
    }

    @Test("a tenant's default language answers callers whose Accept-Language Berth does not speak")
    func tenantDefault() async throws {
        let harness = try await Harness.make(customize: { catalog in
            let index = catalog.tenants.firstIndex { $0.id == CreditsTests.zorya }!
            catalog.tenants[index].defaultLanguage = "uk"
        })
        defer { harness.close() }
        let zorya = try await harness.apiKey(CreditsTests.zorya, .server)
        try await harness.app().test(.router) { client in
            let body: JSON = ["amount": 1, "creditType": "personality", "reference": "report-1"]
            let plain = try await Self.call(client, "/api/credits/reservations", auth: zorya, user: "olha", language: nil, json: body)
            #expect(Self.detail(plain).code == "insufficient_credits" && Self.detail(plain).title == "Недостатньо кредитів", "\(plain.json)")
            #expect(plain.headers[.contentLanguage] == "uk")
            let german = try await Self.call(client, "/api/credits/reservations", auth: zorya, user: "olha", language: "de", json: body)
            #expect(Self.detail(german).title == "Недостатньо кредитів")
            let english = try await Self.call(client, "/api/credits/reservations", auth: zorya, user: "olha", language: "en-GB", json: body)
            #expect(Self.detail(english).title == "Not enough credits" && Self.detail(english).code == "insufficient_credits")
        }
    }

    @Test(
        "Accept-Language parsing; every message exists in every language; purchase codes all have one; a default language Berth does not speak is refused"
    )
    func catalogue() throws {
        #expect(UserMessages.language(acceptLanguage: "en;q=0.1, it;q=0.9", tenantDefault: nil) == "it")
        #expect(UserMessages.language(acceptLanguage: "xx, vi;q=0", tenantDefault: nil) == "en")
        #expect(UserMessages.language(acceptLanguage: "*", tenantDefault: "zh") == "zh")
        #expect(UserMessages.language(acceptLanguage: "UK", tenantDefault: nil) == "uk")
        #expect(UserMessages.language(acceptLanguage: ";;,,q=;", tenantDefault: nil) == "en")
        #expect(UserMessages.language(acceptLanguage: "it;q=nan, vi;q=1e999", tenantDefault: nil) == "it")
        for (code, texts) in UserMessages.catalog {
            #expect(texts.count == UserMessages.languages.count, "\(code)")
            #expect(texts.allSatisfy { !$0.0.isEmpty && !$0.1.isEmpty }, "\(code)")
            #expect(Set(texts.map(\.0)).count > 1, "\(code) is translated")
        }
        #expect(UserMessages.purchaseCodes.subtracting(UserMessages.catalog.keys).isEmpty)
        var catalog = try JSONDecoder().decode(Catalog.self, from: try Data(contentsOf: Harness.repository.appendingPathComponent("products.json")))
        catalog.tenants[0].defaultLanguage = "fr"
        #expect(throws: CatalogError.self) { try catalog.validate() }
    }
}

import AppleSignedData
import BerthApp
import Domain
import Foundation
import GRDB
import HTTPTypes
import HummingbirdTesting
import TestKit
import Testing
import UseCases

@testable import HTTPAPI

/// Paid is never silent: every refusal after a proof of payment keeps the transaction as an
/// unapplied payment (with its reason and amount, an audit entry and a `payment.unapplied` event),
/// tells the app it may finish the transaction, and waits for an operator to apply it or mark it for
/// a refund; a later good claim applies it. One test call per refusal reason.
@Suite("Unapplied payments: paid is never silent")
struct UnappliedPaymentsTests {
    static let tenant = "seaboo-test"
    static let sunset = "it.seaboo.experience.sunset"
    static let diving = "it.seaboo.experience.diving"

    /// A signed Sandbox transaction with a price (45.00 EUR) and, optionally, an account token.
    static func signed(_ harness: Harness, _ product: String, _ id: String, token: String? = nil) throws -> String {
        try harness.ca.signTransaction(
            .testPurchase(
                bundleId: "it.seaboo.app",
                productId: product,
                transactionId: id,
                appAccountToken: token.flatMap(UUID.init(uuidString:)),
                price: 45_000,
                currency: "EUR",
                signedDate: harness.clock.now()
            )
        )
    }

    @Test(
        "each refusal after the proof keeps the payment with its reason; operators list it with the amount, apply it or mark it for refund; a later good claim applies it"
    )
    func everyRefusalKeepsThePayment() async throws {
        let harness = try await Harness.make(
            webhookURL: "http://127.0.0.1:9/hooks",
            customize: { catalog in
                let index = catalog.tenants.firstIndex { $0.id == Self.tenant }!
                catalog.tenants[index].appAccountTokenMatchesUserId = true
            }
        )
        defer { harness.close() }
        let admin = try await harness.apiKey(Self.tenant, .admin)
        try await harness.app().test(.router) { client in
            let giulia = try await harness.userToken("giulia")
            let giuliaToken = AccountTokens.cordovaPlugin("giulia"), marcoToken = AccountTokens.cordovaPlugin("marco")
            let slot = Harness.local(3, hour: 17, minute: 30, from: harness.clock.now())
            func book(_ user: String, _ resource: String = "sunset-cruise", day: Int = 3) async throws -> Int64 {
                let at = Harness.local(day, hour: 17, minute: 30, from: harness.clock.now())
                let booking = try await createBooking(
                    client,
                    harness,
                    user: user,
                    body: ["resourceId": .string(resource), "slot": .string(iso(at)), "seats": 1]
                )
                return try #require(booking["id"].int64)
            }
            _ = slot
            let marcos = try await book("marco")
            let giulias = try await book("giulia", day: 4)

            /// Posts a claim and checks that it was refused with `code` and the payment kept.
            func refused(
                _ body: JSON,
                _ status: HTTPResponse.Status,
                _ code: String,
                sourceLocation: SourceLocation = #_sourceLocation
            ) async throws -> Int64 {
                let reply = try await client.call(.post, "/api/verify-purchase", auth: giulia, json: body)
                #expect(reply.status == status && reply.errorCode == code, "\(reply.json)", sourceLocation: sourceLocation)
                #expect(reply.json["finishTransaction"].bool == true, "the app may finish: \(reply.json)", sourceLocation: sourceLocation)
                let kept = try #require(reply.json["unappliedPayment"].object, sourceLocation: sourceLocation)
                #expect(kept["reasonCode"].string == code && kept["status"].string == "open", sourceLocation: sourceLocation)
                #expect(kept["priceMilliunits"].int == 45_000 && kept["currency"].string == "EUR", sourceLocation: sourceLocation)
                return try #require(kept["id"].int64, sourceLocation: sourceLocation)
            }

            // 1. A booking that does not exist.
            let noBooking = try await refused(
                [
                    "bookingId": 999_999, "productId": .string(Self.sunset),
                    "jwsRepresentation": try .string(Self.signed(harness, Self.sunset, "2000000000070001", token: giuliaToken)),
                ],
                .notFound,
                "booking_not_found"
            )
            // 2. Another user's booking.
            _ = try await refused(
                [
                    "bookingId": .int(marcos), "productId": .string(Self.sunset),
                    "jwsRepresentation": try .string(Self.signed(harness, Self.sunset, "2000000000070002", token: giuliaToken)),
                ],
                .notFound,
                "booking_not_found"
            )
            // 3. The proof is for another product than the one the app names.
            let otherProduct = try await refused(
                [
                    "bookingId": .int(giulias), "productId": .string(Self.sunset),
                    "jwsRepresentation": try .string(Self.signed(harness, Self.diving, "2000000000070003", token: giuliaToken)),
                ],
                .unprocessableContent,
                "product_mismatch"
            )
            // 4. The product is not the one the booking needs.
            _ = try await refused(
                [
                    "bookingId": .int(giulias), "productId": .string(Self.diving),
                    "jwsRepresentation": try .string(Self.signed(harness, Self.diving, "2000000000070004", token: giuliaToken)),
                ],
                .unprocessableContent,
                "product_mismatch"
            )
            // 5. A product the app's catalog does not sell, in an app that sells bookings (refused before the
            //    proof as a booking product without its booking; the proof is checked to keep it).
            let unknown = try await refused(
                [
                    "productId": "it.seaboo.gift.card",
                    "jwsRepresentation": try .string(Self.signed(harness, "it.seaboo.gift.card", "2000000000070005", token: giuliaToken)),
                ],
                .badRequest,
                "missing_field"
            )
            // 6. A booking product without the booking.
            let noBookingNamed = try await refused(
                [
                    "productId": .string(Self.sunset),
                    "jwsRepresentation": try .string(Self.signed(harness, Self.sunset, "2000000000070006", token: giuliaToken)),
                ],
                .badRequest,
                "missing_field"
            )
            // 7. A transaction id that is not the proof's.
            _ = try await refused(
                [
                    "bookingId": .int(giulias), "productId": .string(Self.sunset), "transactionId": "2000000000079999",
                    "jwsRepresentation": try .string(Self.signed(harness, Self.sunset, "2000000000070007", token: giuliaToken)),
                ],
                .unprocessableContent,
                "transaction_mismatch"
            )
            // 8. Bought by another account of the app.
            _ = try await refused(
                [
                    "bookingId": .int(giulias), "productId": .string(Self.sunset),
                    "jwsRepresentation": try .string(Self.signed(harness, Self.sunset, "2000000000070008", token: marcoToken)),
                ],
                .unprocessableContent,
                "account_token_mismatch"
            )
            // 9. Bought without an account token where the app ties purchases to accounts.
            _ = try await refused(
                [
                    "bookingId": .int(giulias), "productId": .string(Self.sunset),
                    "jwsRepresentation": try .string(Self.signed(harness, Self.sunset, "2000000000070009")),
                ],
                .unprocessableContent,
                "account_token_missing"
            )

            // 10. A product a credits app does not sell.
            let stylistKey = try await harness.apiKey(CreditsTests.stylist, .server)
            let pack = try harness.ca.signTransaction(
                .testPurchase(
                    bundleId: CreditsTests.stylistBundle,
                    productId: "com.aiimagestylist.credits.mega",
                    transactionId: "3000000000070010",
                    price: 19_990,
                    currency: "USD",
                    signedDate: harness.clock.now()
                )
            )
            let mega = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: stylistKey,
                user: "ana",
                json: ["productId": "com.aiimagestylist.credits.mega", "jwsRepresentation": .string(pack)]
            )
            #expect(mega.status == .unprocessableContent && mega.errorCode == "unknown_product", "\(mega.json)")
            #expect(
                mega.json["unappliedPayment"]["priceMilliunits"].int == 19_990
                    && mega.json["finishTransaction"].bool == true
            )

            // A retry of the same refusal counts an attempt on the same row (one event, one audit entry).
            let again = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: giulia,
                json: [
                    "bookingId": 999_999, "productId": .string(Self.sunset),
                    "jwsRepresentation": try .string(Self.signed(harness, Self.sunset, "2000000000070001", token: giuliaToken)),
                ]
            )
            #expect(again.json["unappliedPayment"]["attempts"].int == 2 && again.status == .notFound)

            // What is not a proven payment keeps nothing: a forged proof (refused as unknown product first).
            let forged = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: giulia,
                json: ["productId": "it.seaboo.gift.card", "jwsRepresentation": "a.b.c"]
            )
            #expect(
                forged.status == .badRequest && forged.json["unappliedPayment"] == nil && forged.json["finishTransaction"] == nil,
                "\(forged.json)"
            )
            #expect(try await harness.count("unapplied_payments") == 10)
            #expect(try await harness.count("purchases") == 0, "nothing was applied")
            #expect(try await harness.rows("SELECT COUNT(*) AS n FROM webhook_outbox WHERE event_type = 'payment.unapplied'").first?["n"] == "9")
            #expect(try await harness.rows("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'payment.unapplied'").first?["n"] == "10")

            // Operators see them with the amount, newest first.
            let listed = try await client.call(.get, "/api/admin/unapplied-payments?status=open", auth: admin)
            #expect(listed.status == .ok && listed.json["total"].int == 9, "\(listed.json)")
            let items = listed.json["items"].array ?? []
            #expect(
                items.allSatisfy {
                    $0["priceMilliunits"].int == 45_000 && $0["currency"].string == "EUR" && $0["userId"].string == "giulia"
                }
            )
            #expect(try await client.call(.get, "/api/admin/unapplied-payments?status=lost", auth: admin).status == .badRequest)

            // Apply the first to the booking it should have paid: the booking is confirmed, once.
            let target = try await book("giulia", day: 5)
            let applied = try await client.call(
                .post,
                "/api/admin/unapplied-payments/\(noBooking)/apply",
                auth: admin,
                json: ["bookingId": .int(target)]
            )
            #expect(applied.status == .ok, "\(applied.json)")
            let appliedPayment = applied.json["unappliedPayment"].object
            #expect(appliedPayment?["status"].string == "applied" && appliedPayment?["purchaseId"].int != nil)
            let booking = try await client.call(.get, "/api/bookings/\(target)", auth: giulia)
            #expect(booking.booking?["status"].string == "confirmed", "\(booking.json)")
            let twice = try await client.call(
                .post,
                "/api/admin/unapplied-payments/\(noBooking)/apply",
                auth: admin,
                json: ["bookingId": .int(target)]
            )
            #expect(twice.status == .conflict && twice.errorCode == "unapplied_payment_resolved")

            // Applying it where it still does not fit refuses and leaves it open.
            let stillWrong = try await client.call(
                .post,
                "/api/admin/unapplied-payments/\(otherProduct)/apply",
                auth: admin,
                json: ["bookingId": .int(giulias)]
            )
            #expect(stillWrong.status == .unprocessableContent && stillWrong.errorCode == "product_mismatch", "\(stillWrong.json)")

            // Mark the gift card for a refund, with a note.
            #expect(
                try await client.call(.post, "/api/admin/unapplied-payments/\(unknown)/refund", auth: admin, json: [:]).errorCode == "missing_field"
            )
            let refund = try await client.call(
                .post,
                "/api/admin/unapplied-payments/\(unknown)/refund",
                auth: admin,
                json: ["note": "not sold here; refund via Apple"]
            )
            #expect(refund.json["unappliedPayment"]["status"].string == "refund_requested", "\(refund.json)")
            #expect(try await client.call(.post, "/api/admin/unapplied-payments/\(unknown)/apply", auth: admin, json: [:]).status == .conflict)
            #expect(
                try await client.call(.post, "/api/admin/unapplied-payments/424242/refund", auth: admin, json: ["note": "x"]).errorCode
                    == "unapplied_payment_not_found"
            )

            // The app retries the one without a booking correctly: applied, and the listing says so.
            let retried = try await client.call(
                .post,
                "/api/verify-purchase",
                auth: giulia,
                json: [
                    "bookingId": .int(giulias), "productId": .string(Self.sunset),
                    "jwsRepresentation": try .string(Self.signed(harness, Self.sunset, "2000000000070006", token: giuliaToken)),
                ]
            )
            #expect(retried.status == .ok, "\(retried.json)")
            let appliedList = try await client.call(.get, "/api/admin/unapplied-payments?status=applied", auth: admin)
            let appliedIds = Set((appliedList.json["items"].array ?? []).compactMap { $0["id"].int64 })
            #expect(appliedIds == [noBooking, noBookingNamed], "\(appliedList.json)")
            #expect(try await client.call(.get, "/api/admin/unapplied-payments?status=open", auth: admin).json["total"].int == 6)
            #expect(
                try await harness.rows("SELECT COUNT(*) AS n FROM webhook_outbox WHERE event_type IN ('payment.applied', 'payment.refund_requested')")
                    .first?["n"] == "2"
            )
        }
    }

    @Test("which refusals keep a payment: not storage trouble, not the caller's credentials, not a Sandbox purchase that pays nothing")
    func whatIsKept() {
        #expect(UnappliedPayment.keeps(DomainError(.notFound, .bookingNotFound, "")))
        #expect(UnappliedPayment.keeps(DomainError(.unprocessable, .unknownProduct, "")))
        #expect(UnappliedPayment.keeps(DomainError(.invalidInput, .missingField, "")))
        #expect(!UnappliedPayment.keeps(DomainError(.unprocessable, .sandboxNotAllowed, "")))
        #expect(!UnappliedPayment.keeps(DomainError(.unavailable, .temporarilyUnavailable, "")))
        #expect(!UnappliedPayment.keeps(DomainError(.unauthenticated, .unauthenticated, "")))
    }
}

extension UnappliedPaymentsTests {
    @Test(
        "T12: an operator applying a payment while another marks it for refund ends one way only: applied (credits granted) or refund requested (nothing granted), never both"
    )
    func applyRacesMarkForRefund() async throws {
        let harness = try await Harness.make(customize: { catalog in
            guard let index = catalog.tenants.firstIndex(where: { $0.id == CreditsTests.stylist }) else { return }
            catalog.tenants[index].appAccountTokenMatchesUserId = true
        })
        defer { harness.close() }
        let server = try await harness.apiKey(CreditsTests.stylist, .server)
        let runtime = try #require(harness.services.tenants.tenant(id: CreditsTests.stylist))
        let resolve = harness.services.resolveUnappliedPayment
        let rounds = 24
        let ids: [Int64] = try await harness.app().test(.router) { client in
            var ids: [Int64] = []
            // Ana sends purchases Bo bought (Bo's token): each is kept as an unapplied payment.
            for round in 0..<rounds {
                let jws = try harness.ca.signTransaction(
                    .testPurchase(
                        bundleId: CreditsTests.stylistBundle,
                        productId: CreditsTests.starter,
                        transactionId: String(3_000_000_000_095_000 + round),
                        appAccountToken: UUID(uuidString: AccountTokens.cordovaPlugin("bo"))
                    )
                )
                let reply = try await client.call(
                    .post,
                    "/api/verify-purchase",
                    auth: server,
                    user: "ana",
                    json: ["productId": .string(CreditsTests.starter), "jwsRepresentation": .string(jws)]
                )
                #expect(reply.errorCode == "account_token_mismatch", "\(reply.json)")
                ids.append(try #require(reply.json["unappliedPayment"]["id"].int64))
            }
            return ids
        }
        // Two operators decide each payment at once: one applies it to Bo, the other marks it for refund.
        for id in ids {
            async let applied: Void = {
                _ = try? await resolve.apply(id, runtime: runtime, actor: Actor.admin(keyId: 1), userId: "bo", bookingId: Int64?.none)
            }()
            async let marked: Void = {
                _ = try? await resolve.markForRefund(id, runtime: runtime, actor: Actor.admin(keyId: 2), note: "duplicate charge")
            }()
            _ = await (applied, marked)
        }
        var appliedCount = 0
        for id in ids {
            let row = try #require(
                try await harness.rows("SELECT u.status AS status, u.transaction_id AS tid FROM unapplied_payments u WHERE u.id = ?", [id]).first
            )
            let status = try #require(row["status"] ?? nil)
            let purchases = try await harness.rows("SELECT status FROM purchases WHERE transaction_id = ?", [row["tid"] ?? ""])
            if status == "applied" {
                appliedCount += 1
                #expect(purchases.count == 1, "applied payment \(id) has its purchase")
            } else {
                #expect(status == "refund_requested", "payment \(id): \(status)")
                #expect(purchases.isEmpty, "payment \(id) was marked for refund and must grant nothing: \(purchases)")
            }
        }
        // Every purchase Berth holds is one of an applied payment.
        #expect(try await harness.count("purchases") == appliedCount)
    }
}

import AppleSignedData
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing
import TestKit

/// Each seed app's client requests exactly as its plan writes them (paths, field names, casing,
/// headers), answered in the shape the client decodes.
@Suite("The seed apps' own clients")
struct SeedClientTests {
    /// Seaboo's StoreKit plugin never sets a quantity: an experience for two seats is paid by two
    /// purchases of one unit, each posted as the plugin resolves it ({bookingId, productId,
    /// transactionId, receipt}); the first leaves the booking pending with one unit to go, the
    /// second confirms it. The booking names the product and quantity to buy.
    @Test("Seaboo (001): a 2-seat experience paid by two quantity-1 purchases, as its plugin sends them")
    func seabooTwoSeats() async throws {
        let harness = try await Harness.make()
        defer { harness.close() }
        try await harness.app().test(.router) { client in
            let token = try await harness.userToken("giulia")
            let slot = Harness.day(3, hour: 17, from: harness.clock.now()).addingTimeInterval(1800)
            let created = try await client.call(.post, "/api/bookings", auth: token, json: ["resourceId": "sunset-cruise", "slot": iso(slot), "seats": 2])
            #expect(created.status == .created, "\(created.json)")
            let booking = try #require(created.json["booking"] as? [String: Any])
            let product = try #require(booking["requiredProductId"] as? String)
            #expect(product == "it.seaboo.experience.sunset")
            #expect(booking["requiredQuantity"] as? Int == 2 && booking["remainingQuantity"] as? Int == 2)
            let bookingId = try #require(booking["id"] as? Int64)

            func pay(_ transactionId: String) async throws -> Reply {
                let receipt = try harness.receipt(product, transactionId: transactionId)
                return try await client.call(.post, "/api/verify-purchase", auth: token,
                                             json: ["bookingId": bookingId, "productId": product, "transactionId": transactionId, "receipt": receipt])
            }
            let first = try await pay("2000000000009001")
            #expect(first.status == .ok, "\(first.json)")
            #expect(first.json["success"] as? Bool == true)
            #expect(first.booking?["status"] as? String == "pending_payment")
            #expect(first.booking?["remainingQuantity"] as? Int == 1, "the app buys one more unit")
            // The plugin retries the same call: nothing more is counted.
            let retried = try await pay("2000000000009001")
            #expect(retried.status == .ok && retried.booking?["paidQuantity"] as? Int == 1)
            let second = try await pay("2000000000009002")
            #expect(second.status == .ok, "\(second.json)")
            #expect(second.booking?["status"] as? String == "confirmed")
            #expect(second.booking?["remainingQuantity"] as? Int == 0)
            #expect(try await harness.count("purchases") == 2)
            // A third unit for a booking already paid is money too: kept for a refund, not lost.
            let third = try await pay("2000000000009003")
            #expect(third.status == .conflict)
            #expect(third.errorCode == "booking_already_paid")
            #expect(try await harness.rows("SELECT status FROM purchases WHERE transaction_id = '2000000000009003'").first?["status"] == "needs_refund")
        }
    }
}

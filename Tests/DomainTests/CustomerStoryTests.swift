import Domain
import Foundation
import Testing

/// The customer page's words come from Domain, from the facts the store returns.
@Suite("Customer story: plain words")
struct CustomerStoryTests {
    @Test("trip times in local words: a rental by its days, an experience by its hours with the offset it had that day")
    func tripTimes() {
        #expect(CustomerStory.tripTime(start: "2026-12-02T00:00:00+01:00", end: "2026-12-03T00:00:00+01:00", rental: true) == "2 Dec 2026, full day")
        #expect(CustomerStory.tripTime(start: "2026-12-02T00:00:00+01:00", end: "2026-12-05T00:00:00+01:00", rental: true) == "2 Dec–5 Dec 2026")
        #expect(CustomerStory.tripTime(start: "2026-12-31T00:00:00+01:00", end: "2027-01-01T00:00:00+01:00", rental: true) == "31 Dec 2026, full day")
        #expect(
            CustomerStory.tripTime(start: "2026-07-14T17:30:00+02:00", end: "2026-07-14T19:30:00+02:00", rental: false)
                == "14 Jul 2026, 17:30–19:30 (+02:00)"
        )
        #expect(CustomerStory.tripTime(start: "2026-01-14T17:30:00+00:00", end: "2026-01-14T19:30:00+00:00", rental: false).hasSuffix("(UTC)"))
        #expect(CustomerStory.tripTime(start: "nonsense", end: nil, rental: false) == "nonsense", "a time it cannot read is shown as given")
    }

    @Test("entries in words: amounts as the currency writes them, stores and actors named, no codes")
    func words() throws {
        let tenant = try #require(try Catalog.decode(Data(contentsOf: RulesTests.catalogURL)).tenant(id: "seaboo-test"))
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        let renewal = TimelineEntry(
            kind: "purchase",
            at: at,
            summary: "",
            detail: [
                "store": "google_play", "environment": "Production", "productId": "p", "status": "refunded", "kind": "subscription",
                "transactionId": "GPA.1..0", "originalTransactionId": "token", "priceMilliunits": "29990", "currency": "EUR",
            ]
        )
        #expect(CustomerStory.words(renewal, tenant: tenant) == "Renewed p for 29.99 EUR through Google Play · refunded")
        let unpriced = TimelineEntry(
            kind: "purchase",
            at: at,
            summary: "",
            detail: ["store": "app_store", "environment": "Sandbox", "productId": "it.seaboo.rental.basic", "status": "applied"]
        )
        let text = CustomerStory.words(unpriced, tenant: tenant)
        #expect(text.hasSuffix("(the store gave no price) through the App Store (test)") && !text.contains("it.seaboo"), "\(text)")
        let refund = TimelineEntry(
            kind: "refund",
            at: at,
            summary: "",
            detail: ["amount": "1500", "currency": "eur", "reason": "fuel", "status": "succeeded"]
        )
        #expect(CustomerStory.words(refund, tenant: tenant) == "Card refund of 15.00 EUR · “fuel” · done")
        let notice = TimelineEntry(kind: "notification", at: at, summary: "", detail: ["type": "REFUND", "outcome": "purchase_refunded"])
        #expect(CustomerStory.words(notice, tenant: tenant) == "Apple said: the payment was refunded → purchase refunded")
        let change = TimelineEntry(
            kind: "booking_change",
            at: at,
            summary: "",
            detail: ["action": "owed.resolved", "actor": "admin:7", "how": "customer_told"]
        )
        #expect(CustomerStory.words(change, tenant: tenant) == "Money owed closed (customer told) · by an operator")
    }
}

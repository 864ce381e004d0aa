import Domain
import Foundation
import Testing

/// The season's rules (issue "Run the season"): price rules by date and weekday, the cancellation
/// policy's tiers and its checks.
@Suite("Season rules: prices, cancellation tiers")
struct SeasonRulesTests {
    static let catalogText = try? String(contentsOf: RulesTests.catalogURL, encoding: .utf8)

    /// The shipped catalog with `edit` applied to its text (a policy or a rule changed), decoded as Berth starts.
    func catalog(_ edit: (String) -> String) throws -> Catalog {
        let text = try #require(Self.catalogText)
        return try Catalog.decode(Data(edit(text).utf8))
    }

    static let policy = CancellationPolicy(
        tiers: [.init(hoursBefore: 48, refundPercent: 100), .init(hoursBefore: 24, refundPercent: 50)],
        changeUntilHoursBefore: 24
    )

    @Test("the tier with the most hours still reached decides: 100 % from 48 h, 50 % from 24 h, nothing later or once started")
    func tiers() {
        #expect(Self.policy.refundPercent(hoursLeft: 72) == 100)
        #expect(Self.policy.refundPercent(hoursLeft: 48) == 100)
        #expect(Self.policy.refundPercent(hoursLeft: 47.9) == 50)
        #expect(Self.policy.refundPercent(hoursLeft: 24) == 50)
        #expect(Self.policy.refundPercent(hoursLeft: 23.9) == 0)
        #expect(Self.policy.refundPercent(hoursLeft: -1) == 0)
        #expect(Self.policy.refundPercent(hoursLeft: .nan) == 0)
        #expect(Self.policy.allowsChange(hoursLeft: 25) && !Self.policy.allowsChange(hoursLeft: 23))
        #expect(CancellationPolicy(tiers: [.init(hoursBefore: 0, refundPercent: 100)]).allowsChange(hoursLeft: 0.5))
    }

    @Test(
        "a quote rounds the refund down to the minor unit and never overflows; an operator always offers 100 %; a paid booking without a policy is the operator's"
    )
    func quotes() {
        let start = Date(timeIntervalSince1970: 2_000_000_000)
        let booking = Booking(
            id: 1,
            tenantId: "t",
            userId: "u",
            resourceId: "r",
            resourceKind: .experience,
            start: start,
            end: start.addingTimeInterval(3600),
            seats: 1,
            priceMinor: 4501,
            currency: "EUR",
            requiredProductId: "p",
            status: .confirmed,
            holdExpiresAt: start,
            createdAt: start,
            updatedAt: start
        )
        let late = start.addingTimeInterval(-30 * 3600)
        let half = CancellationQuote.make(booking: booking, paidMinor: 4501, rail: .card, policy: Self.policy, byOperator: false, now: late)
        #expect(half.allowed && half.refundPercent == 50 && half.refundMinor == 2250)
        let huge = CancellationQuote.make(booking: booking, paidMinor: .max, rail: .card, policy: Self.policy, byOperator: false, now: late)
        #expect(huge.refundMinor == .max / 100 * 50 + (.max % 100) * 50 / 100)
        let operatorQuote = CancellationQuote.make(booking: booking, paidMinor: 4501, rail: .appStore, policy: nil, byOperator: true, now: late)
        #expect(operatorQuote.refundPercent == 100 && operatorQuote.words.contains("Apple"))
        let none = CancellationQuote.make(booking: booking, paidMinor: 4501, rail: .card, policy: nil, byOperator: false, now: late)
        #expect(!none.allowed && none.refusal == .cancellationNotOffered)
        let started = CancellationQuote.make(booking: booking, paidMinor: 4501, rail: .card, policy: Self.policy, byOperator: false, now: start)
        #expect(!started.allowed && started.refusal == .bookingStarted)
    }

    @Test(
        "a policy tier over 100 %, a negative hour, two tiers at one hour or no tier stops the catalog with the tenant named; a resource's policy and price rules are checked too"
    )
    func badPolicies() throws {
        let shipped = #""tiers": [{ "hoursBefore": 48, "refundPercent": 100 }, { "hoursBefore": 24, "refundPercent": 50 }]"#
        #expect(try catalog { $0 }.tenants.first { $0.id == "seaboo-test" }?.cancellation == Self.policy)
        for (bad, words) in [
            (#""tiers": [{ "hoursBefore": 48, "refundPercent": 120 }]"#, "refundPercent is 0...100, not 120"),
            (#""tiers": [{ "hoursBefore": -1, "refundPercent": 50 }]"#, "hoursBefore is 0...8784, not -1"),
            (#""tiers": [{ "hoursBefore": 24, "refundPercent": 50 }, { "hoursBefore": 24, "refundPercent": 20 }]"#, "same hoursBefore"),
            (#""tiers": []"#, "1 to 20 tiers"),
        ] {
            #expect {
                try catalog { $0.replacingOccurrences(of: shipped, with: bad) }
            } throws: { error in
                "\(error)".contains(words) && "\(error)".contains("tenant seaboo")
            }
        }
        #expect {
            try catalog {
                $0.replacingOccurrences(
                    of: #""id": "gozzo-5m","#,
                    with: #""id": "gozzo-5m", "cancellation": {"tiers": [{"hoursBefore": 1, "refundPercent": 101}]},"#
                )
            }
        } throws: { error in
            "\(error)".contains("resource gozzo-5m") && "\(error)".contains("not 101")
        }
        #expect {
            try catalog {
                $0.replacingOccurrences(
                    of: #""id": "gozzo-5m","#,
                    with: #""id": "gozzo-5m", "prices": [{"from": "2027-08-31", "to": "2027-08-01", "pricePerDayMinor": 9000}],"#
                )
            }
        } throws: { error in
            "\(error)".contains("resource gozzo-5m") && "\(error)".contains("before from")
        }
    }

    @Test("price rules: the last rule covering a day wins, weekdays narrow it, days outside keep the resource's price; a rental is priced day by day")
    func priceRules() throws {
        var boat = Resource(id: "b", kind: .rental, name: "B", pricePerDayMinor: 8000)
        boat.prices = [
            PriceRule(from: "2027-08-01", to: "2027-08-31", pricePerDayMinor: 9500),
            PriceRule(from: "2027-08-01", to: "2027-08-31", weekdays: ["sat", "sun"], pricePerDayMinor: 11_000),
        ]
        let rome = try #require(TimeZone(identifier: "Europe/Rome"))
        func instant(_ text: String) throws -> Date { try #require(LocalDateTime.parse(text)?.instants(in: rome).first) }
        // Friday 13 August 2027 → Monday 16 August: Friday 9500, Saturday and Sunday 11000.
        #expect(boat.rentalPrice(start: try instant("2027-08-13"), days: 3, in: rome) == 9500 + 11_000 + 11_000)
        // 31 July (the resource's own) and 1 August (a Sunday).
        #expect(boat.rentalPrice(start: try instant("2027-07-31"), days: 2, in: rome) == 8000 + 11_000)
        #expect(boat.rentalPrice(start: try instant("2027-09-01"), days: 1, in: rome) == 8000)
        var tour = Resource(id: "t", kind: .experience, name: "T", pricePerSeatMinor: 4500)
        tour.prices = [PriceRule(from: "2027-08-01", to: "2027-08-01", pricePerSeatMinor: 5000)]
        #expect(tour.allUnitPrices == [4500, 5000])
    }
}

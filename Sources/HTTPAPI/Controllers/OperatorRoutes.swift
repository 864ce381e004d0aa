import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Hummingbird
import Logging
import UseCases

/// `/api/admin/search`, `/api/admin/customers/{userId}/timeline`, `/api/admin/overview`: where an
/// operator looks first (admin API key, within the key's tenant).
struct OperatorRoutes {
    let views: OperatorViewQueries
    let clock: any BerthClock

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<AdminRequestContext> {
        let router = RouteCollection(context: AdminRequestContext.self)
        router.get("/api/admin/search", use: search)
        router.get("/api/admin/customers/{userId}/timeline", use: timeline)
        router.get("/api/admin/overview", use: overview)
        return router
    }

    func search(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let tenant = context.tenant
        guard let raw = request.uri.queryParameters["q"] else {
            throw APIError(
                .badRequest,
                .invalidQuery,
                "q names what to find: a booking reference or id, a transaction id, an order number, a PaymentIntent, a user id",
                field: "q"
            )
        }
        let text = Text.trimmed(String(raw)).precomposedStringWithCanonicalMapping
        guard !text.isEmpty, text.count <= 200 else { throw APIError(.badRequest, .invalidQuery, "q must be 1 to 200 characters", field: "q") }
        let found = try await views.search(tenant, text: text)
        return try JSONCoding.response(
            SearchResponse(query: text, items: found.hits.map(SearchHitDTO.init), appleOrderLookup: found.appleOrderLookup)
        )
    }

    func timeline(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        guard let raw = context.parameters.get("userId") else { throw APIError(.badRequest, .invalidField, "name a user", field: "userId") }
        let userId = try Authenticator.userId(raw.removingPercentEncoding ?? raw, field: "userId", tenant: context.tenant.tenant)
        let limit: Int
        if let text = request.uri.queryParameters["limit"] {
            guard let value = Int(text), (1...1000).contains(value) else {
                throw APIError(.badRequest, .invalidQuery, "limit must be an integer in 1...1000 (entries of each kind)", field: "limit")
            }
            limit = value
        } else {
            limit = 200
        }
        let (told, facts) = try await views.customer(context.tenant, userId: userId, limit: limit)
        return try JSONCoding.response(
            TimelineResponse(userId: userId, customer: CustomerDTO(facts), items: told.map(TimelineEntryDTO.init), limitPerKind: limit)
        )
    }

    func overview(_ request: Request, _ context: AdminRequestContext) async throws -> Response {
        let now = clock.now()
        let query = request.uri.queryParameters
        var interval = Overview.Interval.day
        if let text = query["interval"] {
            guard let value = Overview.Interval(rawValue: String(text)) else {
                throw APIError(.badRequest, .invalidQuery, "interval must be day, week or month", field: "interval")
            }
            interval = value
        }
        let to = try Paging.time(request, "to") ?? now
        let defaultSpan: TimeInterval = interval == .day ? 30 * 86_400 : interval == .week ? 12 * 7 * 86_400 : 365 * 86_400
        // A period holds at most 400 buckets: an earlier `from` moves up (the answer's `from` says
        // where it starts); a `from` at or after `to` is an empty period.
        let longest: TimeInterval = interval == .day ? 400 * 86_400 : interval == .week ? 400 * 7 * 86_400 : 400 * 28 * 86_400
        let from = max(try Paging.time(request, "from") ?? to.addingTimeInterval(-defaultSpan), to.addingTimeInterval(-longest))
        let (overview, owed) = try await views.overview(context.tenant, from: from, to: to, interval: interval)
        var response = OverviewResponse(overview)
        response.owedToCustomers = OwedTotal.of(owed).map(OwedTotalDTO.init)
        return try JSONCoding.response(response)
    }
}

struct SearchResponse: Codable {
    var query: String
    var items: [SearchHitDTO]
    /// Whether Apple's Look Up Order ID was asked (a query shaped like an order id): `found`,
    /// `found_not_recorded`, `not_found`, `unavailable`, `not_configured`; absent when not asked.
    var appleOrderLookup: String?
}

struct SearchHitDTO: Codable {
    var kind: String
    var id: String
    var matched: String
    var summary: String
    var userId: String?
    var bookingId: Int64?
    var purchaseId: Int64?
    var at: APITime?
    /// Its amount as the currency writes it ("135.00 EUR"), where it has one.
    var amount: String?

    init(_ hit: SearchHit) {
        (kind, id, matched, summary, userId, bookingId, purchaseId) = (
            hit.kind.rawValue, hit.id, hit.matched, hit.summary, hit.userId, hit.bookingId, hit.purchaseId
        )
        at = hit.at.map(APITime.init)
        amount = hit.amount
    }
}

struct TimelineResponse: Codable {
    var userId: String
    /// The customer page's header: totals over the whole history.
    var customer: CustomerDTO
    /// Newest first.
    var items: [TimelineEntryDTO]
    var limitPerKind: Int
}

struct CustomerDTO: Codable {
    /// The overview's amount: a currency and milliunits.
    typealias Amount = OverviewResponse.Amount
    var paid: [Amount]
    var refunded: [Amount]
    var purchases: Int
    var purchasesWithoutAmount: Int
    var bookings: Int
    var firstSeen: APITime?
    var stores: [String]

    init(_ f: CustomerFacts) {
        paid = f.paid.map { Amount(currency: $0.currency, amountMilliunits: $0.milliunits) }
        refunded = f.refunded.map { Amount(currency: $0.currency, amountMilliunits: $0.milliunits) }
        purchases = f.purchases
        purchasesWithoutAmount = f.purchasesWithoutAmount
        bookings = f.bookings
        firstSeen = f.firstSeen.map(APITime.init)
        stores = f.stores
    }
}

struct TimelineEntryDTO: Codable {
    var kind: String
    var at: APITime
    var summary: String
    var detail: [String: String]
    var bookingId: Int64?
    var purchaseId: Int64?

    init(_ entry: TimelineEntry) {
        (kind, at, summary, detail, bookingId, purchaseId) = (
            entry.kind, APITime(entry.at), entry.summary, entry.detail, entry.bookingId, entry.purchaseId
        )
    }
}

struct OverviewResponse: Codable {
    struct MoneyLine: Codable {
        var currency: String
        var store: String
        var count: Int
        var amountMilliunits: Int64
    }
    struct Amount: Codable {
        var currency: String
        var amountMilliunits: Int64
    }
    struct Bucket: Codable {
        var start: APITime
        var label: String
        var moneyIn: [MoneyLine]
        var refunds: [MoneyLine]
        var newSubscriptions: Int
        var endedSubscriptions: Int
        var creditPacksSold: Int
        var creditsSpent: Int64
        var bookingsMade: Int
        var bookingsUnpaid: Int
    }
    struct ResourceLoad: Codable {
        var resourceId: String
        var name: String
        var kind: String
        var confirmed: Int
        var pending: Int
        var seats: Int
        var occupancy: Double?
    }
    struct ProductCount: Codable {
        var productId: String
        var count: Int
    }

    var from: APITime
    var to: APITime
    var interval: String
    var timeZone: String
    var buckets: [Bucket]
    var moneyIn: [Amount]
    var refunds: [Amount]
    var bookingsToday: [ResourceLoad]
    var bookingsNext7Days: [ResourceLoad]
    var activeSubscriptions: [ProductCount]
    var monthlyRecurringRevenue: [Amount]
    var needsAction: [String: Int]
    /// Money owed to customers per currency (minor units): bookings paid that will not take place.
    var owedToCustomers: [OwedTotalDTO] = []
    /// Purchases of the period whose store signed no price, per store: counted here, not in moneyIn.
    var purchasesWithoutAmount: [String: Int]

    init(_ o: Overview) {
        func lines(_ values: [Overview.MoneyLine]) -> [MoneyLine] {
            values.map { MoneyLine(currency: $0.currency, store: $0.store, count: $0.count, amountMilliunits: $0.milliunits) }
        }
        func amounts(_ values: [Overview.Amount]) -> [Amount] { values.map { Amount(currency: $0.currency, amountMilliunits: $0.milliunits) } }
        func loads(_ values: [Overview.ResourceLoad]) -> [ResourceLoad] {
            values.map {
                ResourceLoad(
                    resourceId: $0.resourceId,
                    name: $0.name,
                    kind: $0.kind,
                    confirmed: $0.bookings,
                    pending: $0.pending,
                    seats: $0.seats,
                    occupancy: $0.occupancy.map { ($0 * 1000).rounded() / 1000 }
                )
            }
        }
        from = APITime(o.from)
        to = APITime(o.to)
        interval = o.interval.rawValue
        timeZone = o.timeZone
        buckets = o.buckets.map {
            Bucket(
                start: APITime($0.start),
                label: $0.label,
                moneyIn: lines($0.moneyIn),
                refunds: lines($0.refunds),
                newSubscriptions: $0.newSubscriptions,
                endedSubscriptions: $0.endedSubscriptions,
                creditPacksSold: $0.creditPacksSold,
                creditsSpent: $0.creditsSpent,
                bookingsMade: $0.bookingsMade,
                bookingsUnpaid: $0.bookingsUnpaid
            )
        }
        moneyIn = amounts(o.moneyIn)
        refunds = amounts(o.refunds)
        bookingsToday = loads(o.today)
        bookingsNext7Days = loads(o.next7Days)
        activeSubscriptions = o.activeByProduct.map { ProductCount(productId: $0.productId, count: $0.count) }
        monthlyRecurringRevenue = amounts(o.monthlyRecurringRevenue)
        needsAction = o.needsAction
        purchasesWithoutAmount = o.withoutAmount
    }
}

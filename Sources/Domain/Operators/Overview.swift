import Foundation

/// The operator's home: money in, refunds, subscriptions, credits and bookings of a period, cut
/// into the tenant's local days, weeks (Monday first) or months, and what needs action now.
public struct Overview: Hashable, Sendable {
    public enum Interval: String, Sendable, CaseIterable {
        case day, week, month
    }

    public struct MoneyLine: Hashable, Sendable {
        public var currency: String
        public var store: String
        public var count: Int
        public var milliunits: Int64
    }

    public struct Bucket: Hashable, Sendable {
        public var start: Date
        /// `2026-07-14`, the Monday of a week, or `2026-07`.
        public var label: String
        public var moneyIn: [MoneyLine] = []
        public var refunds: [MoneyLine] = []
        public var newSubscriptions = 0
        public var endedSubscriptions = 0
        public var creditPacksSold = 0
        public var creditsSpent: Int64 = 0
        /// Bookings made in the bucket that something was paid for (in full or in part).
        public var bookingsMade = 0
        /// Bookings made in the bucket that nothing was paid for (holds that lapsed or wait for payment).
        public var bookingsUnpaid = 0
    }

    public struct ResourceLoad: Hashable, Sendable {
        public var resourceId: String
        public var name: String
        public var kind: String
        public var bookings: Int
        public var pending: Int
        public var seats: Int
        /// Booked share of what the resource offers in the window (units × days for rentals,
        /// seats of every slot for experiences), 0…1; nil when the catalog gives no capacity.
        public var occupancy: Double?
    }

    public struct Amount: Hashable, Sendable {
        public var currency: String
        public var milliunits: Int64
    }

    public var from: Date
    public var to: Date
    public var interval: Interval
    public var timeZone: String
    public var buckets: [Bucket]
    public var moneyIn: [Amount]
    public var refunds: [Amount]
    public var today: [ResourceLoad]
    public var next7Days: [ResourceLoad]
    public var activeByProduct: [ProductCount]
    /// Monthly recurring revenue per currency (no conversion): each active subscription's last
    /// price, per month of its cycle; subscriptions whose cycle the catalog does not name are left out.
    public var monthlyRecurringRevenue: [Amount]
    public var needsAction: [String: Int]
    /// Purchases of the period without a signed price, per store (not in `moneyIn`).
    public var withoutAmount: [String: Int]

    public struct ProductCount: Hashable, Sendable {
        public var productId: String
        public var count: Int
    }

    /// Buckets a period may hold at most (a year of days).
    public static let maximumBuckets = 400

    public static func make(_ facts: OverviewFacts, tenant: Tenant, from: Date, to: Date, interval: Interval, now: Date) -> Overview {
        let zone = tenant.timeZone.flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: "UTC") ?? .current
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = zone
        calendar.firstWeekday = 2
        let starts = bucketStarts(calendar: calendar, from: from, to: to, interval: interval)
        func label(_ start: Date) -> String {
            let local = ZonedTime.format(start, in: zone)
            return interval == .month ? String(local.prefix(7)) : String(local.prefix(10))
        }
        var buckets = starts.map { Bucket(start: $0, label: label($0)) }
        func index(ofHour hour: Int64) -> Int? {
            let instant = Date(timeIntervalSince1970: TimeInterval(hour) * 3600)
            guard instant >= from, instant < to, let last = starts.lastIndex(where: { $0 <= instant }) else { return nil }
            return last
        }
        func add(_ lines: inout [MoneyLine], _ money: OverviewFacts.Money) {
            if let at = lines.firstIndex(where: { $0.currency == money.currency && $0.store == money.store }) {
                lines[at].count += money.count
                lines[at].milliunits = Self.sum(lines[at].milliunits, money.milliunits)
            } else {
                lines.append(MoneyLine(currency: money.currency, store: money.store, count: money.count, milliunits: money.milliunits))
            }
        }
        var moneyTotals: [String: Int64] = [:], refundTotals: [String: Int64] = [:]
        for money in facts.money {
            guard let at = index(ofHour: money.hour) else { continue }
            add(&buckets[at].moneyIn, money)
            moneyTotals[money.currency] = Self.sum(moneyTotals[money.currency] ?? 0, money.milliunits)
        }
        // A refund counts on the day the money went back, whenever it was paid.
        for refund in facts.refunds {
            guard let at = index(ofHour: refund.hour) else { continue }
            add(&buckets[at].refunds, refund)
            refundTotals[refund.currency] = Self.sum(refundTotals[refund.currency] ?? 0, refund.milliunits)
        }
        for count in facts.newSubscriptions { if let at = index(ofHour: count.hour) { buckets[at].newSubscriptions += count.count } }
        for count in facts.endedSubscriptions { if let at = index(ofHour: count.hour) { buckets[at].endedSubscriptions += count.count } }
        for count in facts.creditPacks { if let at = index(ofHour: count.hour) { buckets[at].creditPacksSold += count.count } }
        for count in facts.creditsSpent {
            if let at = index(ofHour: count.hour) { buckets[at].creditsSpent = Self.sum(buckets[at].creditsSpent, count.amount) }
        }
        for count in facts.bookingsMade {
            guard let at = index(ofHour: count.hour) else { continue }
            let unpaid = Int(clamping: min(max(count.amount, 0), Int64(count.count)))
            buckets[at].bookingsMade += count.count - unpaid
            buckets[at].bookingsUnpaid += unpaid
        }
        for at in buckets.indices {
            buckets[at].moneyIn.sort { ($0.currency, $0.store) < ($1.currency, $1.store) }
            buckets[at].refunds.sort { ($0.currency, $0.store) < ($1.currency, $1.store) }
        }

        let todayStart = calendar.startOfDay(for: now)
        let tomorrow = calendar.date(byAdding: .day, value: 1, to: todayStart) ?? todayStart.addingTimeInterval(86_400)
        let weekEnd = calendar.date(byAdding: .day, value: 7, to: todayStart) ?? todayStart.addingTimeInterval(7 * 86_400)
        func loads(_ start: Date, _ end: Date) -> [ResourceLoad] { Self.loads(facts.held, tenant: tenant, from: start, to: end) }

        let (recurring, byProduct) = Self.recurring(facts.activeSubscriptions, tenant: tenant)
        func amounts(_ totals: [String: Int64]) -> [Amount] {
            totals.sorted { $0.key < $1.key }.map { Amount(currency: $0.key, milliunits: $0.value) }
        }
        return Overview(
            from: from,
            to: to,
            interval: interval,
            timeZone: ZonedTime.name(zone),
            buckets: buckets,
            moneyIn: amounts(moneyTotals),
            refunds: amounts(refundTotals),
            today: loads(todayStart, tomorrow),
            next7Days: loads(todayStart, weekEnd),
            activeByProduct: byProduct.sorted { $0.key < $1.key }.map { ProductCount(productId: $0.key, count: $0.value) },
            monthlyRecurringRevenue: amounts(recurring),
            needsAction: [
                "unappliedPayments": facts.unappliedPayments, "deadLetters": facts.deadLetters, "webhookBacklog": facts.webhookBacklog,
                "overduePlayAcknowledgements": facts.overduePlayAcknowledgements, "bookingsNeedingRefund": facts.bookingsNeedingRefund,
                "purchasesNeedingRefund": facts.purchasesNeedingRefund,
            ],
            withoutAmount: facts.withoutAmount
        )
    }

    /// Bucket starts: local midnights, Mondays or firsts of the month (at most ``maximumBuckets``).
    static func bucketStarts(calendar: Calendar, from: Date, to: Date, interval: Interval) -> [Date] {
        var starts: [Date] = []
        let first: Date = {
            switch interval {
            case .day: return calendar.startOfDay(for: from)
            case .week: return calendar.dateInterval(of: .weekOfYear, for: from)?.start ?? calendar.startOfDay(for: from)
            case .month: return calendar.dateInterval(of: .month, for: from)?.start ?? calendar.startOfDay(for: from)
            }
        }()
        var cursor = first
        while cursor < to, starts.count < maximumBuckets {
            starts.append(cursor)
            let step: DateComponents =
                interval == .day ? DateComponents(day: 1) : interval == .week ? DateComponents(day: 7) : DateComponents(month: 1)
            guard let next = calendar.date(byAdding: step, to: cursor), next > cursor else { break }
            cursor = next
        }
        return starts
    }

    /// Each resource's bookings, pending holds, seats and occupancy between `start` and `end`.
    static func loads(_ facts: [OverviewFacts.Held], tenant: Tenant, from start: Date, to end: Date) -> [ResourceLoad] {
        tenant.resources.map { resource in
            let held = facts.filter { $0.resourceId == resource.id && $0.start < end && $0.end > start }
            let days = max(1, ZonedTime.days(from: start, to: end, in: tenant.slotTimeZone(resource)))
            var occupancy: Double?
            switch resource.kind {
            case .rental:
                let units = resource.units ?? 1
                if units > 0 {
                    // Unit-days booked in the window over unit-days offered.
                    let booked = held.reduce(0.0) { sum, booking in
                        let overlap = min(booking.end, end).timeIntervalSince(max(booking.start, start))
                        return sum + max(0, overlap) / 86_400
                    }
                    occupancy = min(1, booked / Double(units * days))
                }
            case .experience:
                let offered = (resource.slotTimes?.count ?? 0) * days * (resource.seatsPerSlot ?? 0)
                if offered > 0 { occupancy = min(1, Double(held.reduce(0) { $0 + $1.seats }) / Double(offered)) }
            }
            return ResourceLoad(
                resourceId: resource.id,
                name: resource.name,
                kind: resource.kind.rawValue,
                bookings: held.filter(\.confirmed).count,
                pending: held.filter { !$0.confirmed }.count,
                seats: held.reduce(0) { $0 + $1.seats },
                occupancy: occupancy
            )
        }
    }

    /// Monthly recurring revenue per currency, and the active subscriptions per product.
    static func recurring(_ subscriptions: [OverviewFacts.Active], tenant: Tenant) -> (revenue: [String: Int64], byProduct: [String: Int]) {
        var recurring: [String: Int64] = [:]
        var byProduct: [String: Int] = [:]
        for active in subscriptions {
            byProduct[active.productId, default: 0] += active.count
            guard let currency = active.currency, let price = active.milliunits,
                let months = monthsPerCycle(tenant.products.first { $0.id == active.productId }?.cycle ?? active.productId)
            else { continue }
            let monthly = (Double(price) / months * Double(active.count)).rounded()
            guard monthly.isFinite, abs(monthly) < 9e18 else { continue }
            recurring[currency] = Self.sum(recurring[currency] ?? 0, Int64(monthly))
        }
        return (recurring, byProduct)
    }

    /// Sums of stored amounts saturate instead of trapping (a trap would stop every tenant).
    public static func sum(_ a: Int64, _ b: Int64) -> Int64 {
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : total
    }

    /// Months one period of a cycle lasts, read from the catalog's `cycle` (or, without one, the
    /// product id): month(ly) 1, quarter(ly) 3, half-year 6, year(ly)/annual 12, week(ly) 12/52.
    static func monthsPerCycle(_ text: String) -> Double? {
        let lower = text.lowercased()
        if lower.contains("week") { return 12.0 / 52.0 }
        if lower.contains("quarter") || lower.contains("3month") || lower.contains("3-month") { return 3 }
        if lower.contains("half") || lower.contains("6month") || lower.contains("6-month") { return 6 }
        if lower.contains("year") || lower.contains("annual") { return 12 }
        if lower.contains("month") { return 1 }
        return nil
    }
}

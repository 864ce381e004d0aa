import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// Where an operator looks first: the search box, a customer's story, the overview of a period.
/// Reads only (and Apple's Look Up Order ID for a query shaped like an order number).
public struct OperatorViewQueries: Sendable {
    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// Hits at most, over every kind.
    public static let searchLimit = 50

    /// What a search found, and whether Apple was asked about an order number: `found`,
    /// `found_not_recorded`, `not_found`, `unavailable` (Apple did not answer), `not_configured` (no
    /// App Store Server API key), nil (the query is not shaped like an order number).
    public struct Found: Sendable {
        public var hits: [SearchHit]
        public var appleOrderLookup: String?
    }

    /// Bookings (by reference or id), purchases (transaction or order id), card payments, users
    /// matching `text` (already trimmed and normalized); an Apple order number is resolved by Apple.
    public func search(_ runtime: TenantRuntime, text: String) async throws -> Found {
        let tenantId = runtime.id
        let reference = BookingReference.normalized(text)
        var found = Found(
            hits: try await store.read {
                try $0.operatorViews.search(tenantId: tenantId, text: text, reference: reference, limit: Self.searchLimit)
            }
        )
        guard Self.mayBeAppleOrderId(text) else { return found }
        guard let api = runtime.appStore.serverAPI else {
            found.appleOrderLookup = "not_configured"
            return found
        }
        do {
            let ids = try await api.lookUpOrder(text).compactMap(\.payload.transactionId)
            let recorded = try await store.read { try $0.operatorViews.purchases(tenantId: tenantId, transactionIds: ids) }
            found.appleOrderLookup = ids.isEmpty ? "not_found" : recorded.isEmpty ? "found_not_recorded" : "found"
            for hit in recorded where !found.hits.contains(where: { $0.kind == hit.kind && $0.id == hit.id }) { found.hits.append(hit) }
        } catch {
            logger.warning("Apple's order lookup failed: \(String(describing: type(of: error)))")
            found.appleOrderLookup = "unavailable"
        }
        return found
    }

    /// Apple's order ids are 10 upper-case letters and digits (`MK5TTTVWJH`); nothing else is sent to Apple.
    public static func mayBeAppleOrderId(_ text: String) -> Bool {
        (8...14).contains(text.count) && text.allSatisfy { ($0.isASCII && $0.isUppercase) || ($0.isASCII && $0.isNumber) }
            && text.contains(where: \.isLetter)
    }

    /// A customer's story, told in the tenant's words and zone (at most `limit` entries of each
    /// kind), and the facts about them.
    public func customer(_ runtime: TenantRuntime, userId: String, limit: Int) async throws -> (story: [TimelineEntry], facts: CustomerFacts) {
        let tenantId = runtime.id
        let (entries, facts) = try await store.read { tx in
            (
                try tx.operatorViews.timeline(tenantId: tenantId, userId: userId, limit: limit),
                try tx.operatorViews.customerFacts(tenantId: tenantId, userId: userId)
            )
        }
        return (CustomerStory.tell(entries, tenant: runtime.tenant), facts)
    }

    /// The period [from, to) in buckets of `interval`, with what needs the operator's action, and the
    /// money owed to customers (unresolved), first on the operator's page.
    public func overview(
        _ runtime: TenantRuntime,
        from: Date,
        to: Date,
        interval: Overview.Interval
    ) async throws -> (
        overview: Overview, owed: [OwedPayment]
    ) {
        let now = clock.now(), tenantId = runtime.id
        let heldUntil = now.addingTimeInterval(8 * 86_400)
        let overdue = now.addingTimeInterval(-(runtime.tenant.googlePlay?.alertAfter ?? 24 * 3600))
        let (facts, owedFacts) = try await store.read { tx in
            (
                try tx.operatorViews.overview(tenantId: tenantId, from: from, to: to, now: now, heldUntil: heldUntil, playOverdueBefore: overdue),
                try tx.operatorViews.owedFacts(tenantId: tenantId, now: now, bookingId: nil, limit: OwedToCustomers.limit)
            )
        }
        var overview = Overview.make(facts, tenant: runtime.tenant, from: from, to: to, interval: interval, now: now)
        let owed = owedFacts.flatMap { OwedRules.owed($0, now: now) }.filter { $0.resolved == nil }
        overview.needsAction["owedToCustomers"] = owed.count
        return (overview, owed)
    }

    /// A day's manifest: who sails on `date` (`YYYY-MM-DD`, each resource's local day), on one
    /// resource or all, with what each paid.
    public func manifest(_ runtime: TenantRuntime, date: String, resourceId: String?) async throws -> Manifest {
        // Every zone's local day lies within the UTC day widened by 14 hours each way.
        guard let utcDay = Manifest.day(date, in: ZonedTime.utc) else {
            throw DomainError.invalid("date must be a day, YYYY-MM-DD (the resources' local day)", field: "date")
        }
        let from = utcDay.start.addingTimeInterval(-14 * 3600), to = utcDay.end.addingTimeInterval(14 * 3600)
        let tenantId = runtime.id
        let (bookings, paid) = try await store.read { tx in
            let bookings = try tx.operatorViews.bookingsOverlapping(tenantId: tenantId, from: from, to: to, resourceId: resourceId)
            return (bookings, try tx.operatorViews.bookingPayments(tenantId: tenantId, bookingIds: bookings.map(\.id)))
        }
        return Manifest.make(tenant: runtime.tenant, date: date, resourceId: resourceId, bookings: bookings, paid: paid, now: clock.now())
    }
}

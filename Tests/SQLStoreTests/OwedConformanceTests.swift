import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

/// Money owed to customers on every backend: the store reads what a cancelled paid booking holds,
/// and an operator's closing is recorded once.
extension StoreConformance {
    @Test(
        "owed: a paid booking cancelled is read with its App Store payment; a booking that will take place is not; the closing is recorded once",
        arguments: StoreBackend.available
    )
    func owedFactsAndResolution(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let paid = try await Self.admit(store, user: "ann", quote: Self.quote(Self.rental, start: Self.now.addingTimeInterval(3 * 86_400)))
            _ = try await Self.claim(store, booking: paid, user: "ann", transactionId: "owed-1")
            let kept = try await Self.admit(store, user: "bob", quote: Self.quote(Self.rental, start: Self.now.addingTimeInterval(4 * 86_400)))
            _ = try await Self.claim(store, booking: kept, user: "bob", transactionId: "owed-2")
            #expect(try await store.read { try $0.operatorViews.owedFacts(tenantId: "a", now: Self.now, bookingId: nil, limit: 10) }.isEmpty)
            try await store.write { tx in
                guard var booking = try tx.bookings.booking(id: paid.id, tenantId: "a", forUpdate: true) else { return }
                booking.status = .cancelled
                booking.statusReason = "storm"
                try tx.bookings.update(booking, now: Self.now)
            }
            let facts = try await store.read { try $0.operatorViews.owedFacts(tenantId: "a", now: Self.now, bookingId: nil, limit: 10) }
            #expect(facts.map(\.booking.id) == [paid.id])
            #expect(facts.first?.storePayments.map(\.status) == [.applied] && facts.first?.storePayments.first?.store == .appStore)
            let owed = facts.flatMap { OwedRules.owed($0, now: Self.now) }
            #expect(owed.map(\.rail) == [.appStore] && owed.first?.reason == .cancelled && owed.first?.resolved == nil)
            let resolved = OwedPayment.Resolved(how: .customerTold, note: "asked Apple", actor: "admin:1", at: Self.now)
            #expect(try await store.write { try $0.operatorViews.resolveOwed(tenantId: "a", bookingId: paid.id, resolved: resolved) })
            #expect(try await !store.write { try $0.operatorViews.resolveOwed(tenantId: "a", bookingId: paid.id, resolved: resolved) }, "once")
            let after = try await store.read { try $0.operatorViews.owedFacts(tenantId: "a", now: Self.now, bookingId: paid.id, limit: 1) }
            #expect(after.first?.resolved?.how == .customerTold && after.first?.resolved?.note == "asked Apple")
            #expect(try await store.read { try $0.operatorViews.owedFacts(tenantId: "b", now: Self.now, bookingId: nil, limit: 10) }.isEmpty)
        }
    }
}

import Domain
import Foundation
import SQLStore
import Testing

/// What operators read about bookings (references, time zones), on every backend.
extension StoreConformance {
    @Test("references and zones: a booking keeps both; it is found by its reference within its tenant only; a taken reference is known",
          arguments: StoreBackend.available)
    func bookingReferencesAndZones(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            var quote = Self.quote(Self.experience, start: Self.now.addingTimeInterval(86_400))
            quote.timeZone = "Europe/Rome"
            let booking = try await Self.admit(store, user: "ann", quote: quote)
            #expect(BookingReference.normalized(booking.reference) == booking.reference)
            let read = try await store.read { try $0.bookings.booking(id: booking.id, tenantId: "a", forUpdate: false) }
            #expect(read?.reference == booking.reference && read?.timeZone == "Europe/Rome")
            #expect(read?.localStart == booking.localStart)
            #expect(try await store.read { try $0.bookings.booking(reference: booking.reference, tenantId: "a") }?.id == booking.id)
            #expect(try await store.read { try $0.bookings.booking(reference: booking.reference, tenantId: "b") } == nil)
            #expect(try await store.read { try $0.bookings.referenceTaken(booking.reference, tenantId: "a") })
            #expect(try await !store.read { try $0.bookings.referenceTaken(booking.reference, tenantId: "b") })
            // Listings carry both.
            let listed = try await store.read { try $0.bookings.bookings(tenantId: "a", filter: BookingFilter(userId: "ann"), page: Page(limit: 10, offset: 0)) }
            #expect(listed.items.first?.reference == booking.reference && listed.items.first?.timeZone == "Europe/Rome")
        }
    }
}

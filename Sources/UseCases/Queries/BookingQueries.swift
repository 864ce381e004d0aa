import Domain
import Foundation

/// Bookings as their owners and operators read them: a user's own list and one booking with its
/// card payment, a booking's card payments with their refunds. Reads only.
public struct BookingQueries: Sendable {
    let store: any Store

    public init(store: any Store) { self.store = store }

    /// A page of the user's own bookings, newest first.
    public func list(tenantId: String, userId: String, page: Page) async throws -> (items: [Booking], total: Int) {
        try await store.read { try $0.bookings.bookings(tenantId: tenantId, filter: BookingFilter(userId: userId), page: page) }
    }

    /// The user's booking `id` and its card payment (nil for another user's booking or none).
    public func own(_ id: Int64, tenantId: String, userId: String) async throws -> (booking: Booking, cardPayment: CardPayment?)? {
        try await store.read { tx in
            guard let booking = try tx.bookings.booking(id: id, tenantId: tenantId, forUpdate: false), booking.userId == userId else {
                return nil
            }
            return (booking, try tx.cardPayments.payments(bookingId: id, tenantId: tenantId).first { $0.purpose == .booking })
        }
    }

    /// A booking's card payments, each with its refunds (nil when the tenant has no booking `id`).
    public func cardPayments(of id: Int64, tenantId: String) async throws -> [(payment: CardPayment, refunds: [CardRefund])]? {
        try await store.read { tx in
            guard try tx.bookings.booking(id: id, tenantId: tenantId, forUpdate: false) != nil else { return nil }
            return try tx.cardPayments.payments(bookingId: id, tenantId: tenantId).map { payment in
                (payment, try tx.cardPayments.refunds(paymentId: payment.id, tenantId: tenantId))
            }
        }
    }
}

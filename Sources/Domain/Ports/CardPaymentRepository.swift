import Foundation

/// Card payments of bookings, the refunds Berth asks for, and the provider's events (each once).
public protocol CardPaymentRepository {
    /// A new payment; a second open one for the same booking, or a second row for the same provider id, violates a unique index.
    func insert(_ payment: CardPayment) throws
    /// Writes a payment's state.
    func update(_ payment: CardPayment) throws
    func payment(id: Int64, tenantId: String, forUpdate: Bool) throws -> CardPayment?
    /// The payment of a provider object (`pi_…`) of the tenant.
    func payment(provider: String, providerRef: String, tenantId: String, forUpdate: Bool) throws -> CardPayment?
    /// The booking's payment of `purpose` that Berth still waits for (`creating`, `open`, or an `authorized` deposit), if any.
    func openPayment(bookingId: Int64, purpose: CardPaymentPurpose, tenantId: String, forUpdate: Bool) throws -> CardPayment?
    /// Every payment of a booking, newest first.
    func payments(bookingId: Int64, tenantId: String) throws -> [CardPayment]
    /// Payments Berth still waits for whose check is due at `now`, of every tenant, the most overdue first.
    func dueChecks(now: Date, limit: Int) throws -> [CardPayment]

    func insert(_ refund: CardRefund) throws
    func update(_ refund: CardRefund) throws
    func refund(id: Int64, tenantId: String, forUpdate: Bool) throws -> CardRefund?
    /// The refunds of a payment, oldest first.
    func refunds(paymentId: Int64, tenantId: String) throws -> [CardRefund]
    /// Pending refunds due at `now`, of every tenant, oldest first.
    func dueRefunds(now: Date, limit: Int) throws -> [CardRefund]

    /// Records an event the first time its id is seen (returns true); a redelivery, even one racing
    /// the first, writes nothing and returns false.
    func recordEvent(_ event: PaymentEventRecord) throws -> Bool
    /// What an event that was recorded did (its outcome), or nil when it is new.
    func eventOutcome(tenantId: String, provider: String, eventId: String) throws -> String?
    func setEventOutcome(_ outcome: String, tenantId: String, provider: String, eventId: String) throws
}

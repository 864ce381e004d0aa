import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

/// The card rail's tables on every backend: one open payment per booking, one row per provider id,
/// each provider event once (even under concurrent deliveries), due checks and refunds.
@Suite("CardPaymentConformance")
struct CardPaymentConformance {
    typealias Backend = StoreConformance.StoreBackend
    static let now = StoreConformance.now

    static func payment(_ booking: Booking, ref: String?, key: String, status: CardPaymentStatus = .creating, due: Date? = nil) -> CardPayment {
        CardPayment(
            id: RecordID.next(),
            tenantId: booking.tenantId,
            bookingId: booking.id,
            userId: booking.userId,
            environment: .test,
            providerRef: ref,
            amountMinor: booking.priceMinor,
            currency: "EUR",
            status: status,
            idempotencyKey: key,
            nextCheckAt: due,
            createdAt: now,
            updatedAt: now
        )
    }

    @Test(
        "payments: at most one open per booking, unique provider ids, forward updates read back, due checks oldest first",
        arguments: Backend.available
    )
    func payments(backend: Backend) async throws {
        try await backend.scope { store in
            let booking = try await StoreConformance.admit(
                store,
                user: "u1",
                quote: StoreConformance.quote(StoreConformance.rental, start: Self.now.addingTimeInterval(86_400))
            )
            let first = Self.payment(booking, ref: nil, key: "k1", due: Self.now.addingTimeInterval(600))
            try await store.write { try $0.cardPayments.insert(first) }
            // A second open payment of the same booking is refused by the index.
            await #expect(throws: (any Error).self) {
                try await store.write { try $0.cardPayments.insert(Self.payment(booking, ref: nil, key: "k2")) }
            }
            var opened = first
            opened.providerRef = "pi_1"
            opened.status = .open
            opened.providerStatus = "requires_payment_method"
            let update = opened
            try await store.write { try $0.cardPayments.update(update) }
            let found = try await store.read { try $0.cardPayments.payment(provider: "stripe", providerRef: "pi_1", tenantId: "a", forUpdate: false) }
            #expect(found == opened)
            #expect(
                try await store.read { try $0.cardPayments.payment(provider: "stripe", providerRef: "pi_1", tenantId: "b", forUpdate: false) } == nil
            )
            #expect(
                try await store.read { try $0.cardPayments.openPayment(bookingId: booking.id, purpose: .booking, tenantId: "a", forUpdate: false) }?
                    .id == first.id
            )
            // A deposit of the same booking is another purpose: it may be active beside it.
            var deposit = Self.payment(booking, ref: "pi_d", key: "kd", status: .authorized)
            deposit.purpose = .deposit
            let held = deposit
            try await store.write { try $0.cardPayments.insert(held) }
            #expect(
                try await store.read { try $0.cardPayments.openPayment(bookingId: booking.id, purpose: .deposit, tenantId: "a", forUpdate: false) }
                    == held
            )
            // Due: only open payments whose time has come.
            #expect(try await store.read { try $0.cardPayments.dueChecks(now: Self.now, limit: 10) }.isEmpty)
            #expect(try await store.read { try $0.cardPayments.dueChecks(now: Self.now.addingTimeInterval(601), limit: 10) }.map(\.id) == [first.id])
            // Settled: no longer open, so a new payment of the booking may open; the provider id stays unique.
            var settled = opened
            settled.status = .canceled
            settled.nextCheckAt = nil
            let done = settled
            try await store.write { try $0.cardPayments.update(done) }
            #expect(try await store.read { try $0.cardPayments.dueChecks(now: Self.now.addingTimeInterval(601), limit: 10) }.isEmpty)
            let second = Self.payment(booking, ref: "pi_2", key: "k2", status: .open)
            try await store.write { try $0.cardPayments.insert(second) }
            await #expect(throws: (any Error).self) {
                var clash = Self.payment(booking, ref: "pi_2", key: "k3", status: .canceled)
                clash.status = .canceled
                let row = clash
                try await store.write { try $0.cardPayments.insert(row) }
            }
            #expect(try await store.read { try $0.cardPayments.payments(bookingId: booking.id, tenantId: "a") }.count == 3)
        }
    }

    @Test("refunds: recorded pending with a fixed key, due in order, answered once", arguments: Backend.available)
    func refunds(backend: Backend) async throws {
        try await backend.scope { store in
            let booking = try await StoreConformance.admit(
                store,
                user: "u1",
                quote: StoreConformance.quote(StoreConformance.rental, start: Self.now.addingTimeInterval(86_400))
            )
            let payment = Self.payment(booking, ref: "pi_9", key: "k9", status: .succeeded)
            try await store.write { try $0.cardPayments.insert(payment) }
            let refund = CardRefund(
                id: RecordID.next(),
                tenantId: "a",
                paymentId: payment.id,
                amountMinor: 2000,
                reason: "slot_unavailable",
                initiatedBy: .autoLatePayment,
                actor: "system",
                idempotencyKey: "berth:refund:1:auto",
                nextAttemptAt: Self.now,
                createdAt: Self.now,
                updatedAt: Self.now
            )
            try await store.write { try $0.cardPayments.insert(refund) }
            // The same key twice is refused: one refund per decision.
            await #expect(throws: (any Error).self) {
                var again = refund
                again.id = RecordID.next()
                let row = again
                try await store.write { try $0.cardPayments.insert(row) }
            }
            #expect(try await store.read { try $0.cardPayments.dueRefunds(now: Self.now, limit: 10) }.map(\.id) == [refund.id])
            var answered = refund
            answered.status = .succeeded
            answered.providerRef = "re_1"
            answered.attempts = 1
            answered.nextAttemptAt = nil
            let row = answered
            try await store.write { try $0.cardPayments.update(row) }
            #expect(try await store.read { try $0.cardPayments.dueRefunds(now: Self.now.addingTimeInterval(60), limit: 10) }.isEmpty)
            #expect(try await store.read { try $0.cardPayments.refunds(paymentId: payment.id, tenantId: "a") } == [answered])
            #expect(try await store.read { try $0.cardPayments.refund(id: refund.id, tenantId: "b", forUpdate: false) } == nil)
        }
    }

    @Test("events: 30 concurrent deliveries of one event record it once; its outcome reads back", arguments: Backend.available)
    func eventsOnce(backend: Backend) async throws {
        try await backend.scope { store in
            let record = PaymentEventRecord(
                tenantId: "a",
                provider: "stripe",
                eventId: "evt_1",
                type: "payment_intent.succeeded",
                objectId: "pi_1",
                created: Self.now,
                livemode: false,
                receivedAt: Self.now,
                outcome: "received",
                payloadHash: "h"
            )
            let firsts = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<30 { group.addTask { try await store.write { try $0.cardPayments.recordEvent(record) } } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(firsts == 1)
            try await store.write { try $0.cardPayments.setEventOutcome("booking_confirmed", tenantId: "a", provider: "stripe", eventId: "evt_1") }
            #expect(
                try await store.read { try $0.cardPayments.eventOutcome(tenantId: "a", provider: "stripe", eventId: "evt_1") } == "booking_confirmed"
            )
            // Another tenant's account may use the same id.
            var other = record
            other.tenantId = "b"
            let row = other
            #expect(try await store.write { try $0.cardPayments.recordEvent(row) })
        }
    }
}

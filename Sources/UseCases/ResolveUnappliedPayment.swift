import Domain
import Foundation

/// An operator's decision on a paid transaction Berth could not apply: apply it (to the user, or to
/// another user or booking the operator names) through the same claim as every purchase, or mark it
/// for a refund. Either way once: a payment already decided answers 409.
public struct ResolveUnappliedPayment: Sendable {
    let store: any Store
    let claims: Claims
    let clock: any BerthClock

    public init(store: any Store, claims: Claims, clock: any BerthClock) {
        self.store = store
        self.claims = claims
        self.clock = clock
    }

    /// Claims the kept transaction for `userId` (default: the user it was claimed for) and `bookingId`
    /// (default: none, the product decides). A refusal is thrown as it is and the payment stays open.
    public func apply(
        _ id: Int64,
        runtime: TenantRuntime,
        actor: Actor,
        userId: String?,
        bookingId: Int64?
    ) async throws
        -> (payment: UnappliedPayment, result: VerifyPurchase.Result)
    {
        let payment = try await open(id, runtime: runtime)
        let now = clock.now()
        let emitsEvents = runtime.webhook != nil
        let tenantId = runtime.id
        // The decision is taken in the claim's own unit of work, under the payment's row lock: an
        // operator marking it for a refund meanwhile either comes first (the claim is undone: 409)
        // or finds it applied (T12), never both.
        let result = try await claims.claim(
            proven: payment.proven,
            runtime: runtime,
            userId: userId ?? payment.userId,
            named: bookingId.map { .booking(id: $0) },
            keepsRefusals: false
        ) { tx, outcome in
            let status: UnappliedPayment.Status
            switch outcome {
            case .applied, .repeated: status = .applied
            case .needsRefund: status = .refundRequested
            case .replay, .refused: return
            }
            guard var current = try tx.purchases.unappliedPayment(id: id, tenantId: tenantId, forUpdate: true) else { throw Self.notFound(id) }
            // The stored decision (its transaction now has a purchase: this claim's).
            guard current.status == .open else {
                throw DomainError(.conflict, .unappliedPaymentResolved, "unapplied payment \(id) is already \(current.status.rawValue)", field: "id")
            }
            let purchaseId: Int64? =
                switch outcome {
                case .applied(let purchase), .repeated(let purchase), .needsRefund(let purchase, _, _): purchase.id
                case .replay, .refused: nil
                }
            current.status = status
            current.resolvedAt = now
            current.resolvedBy = actor.rawValue
            current.purchaseId = purchaseId
            try tx.purchases.update(current)
            try tx.audit.append(
                AuditRecord(
                    tenantId: tenantId,
                    actor: actor,
                    action: status == .applied ? .paymentApplied : .paymentRefundRequested,
                    bookingId: bookingId,
                    purchaseId: purchaseId,
                    detail: ["unappliedPaymentId": String(id), "transactionId": current.proven.transactionId],
                    at: now
                )
            )
            if emitsEvents {
                try tx.outbox.enqueue([current.event(status == .applied ? .paymentApplied : .paymentRefundRequested)], tenantId: tenantId, now: now)
            }
        }
        let decided = try await store.read { try $0.purchases.unappliedPayment(id: id, tenantId: tenantId, forUpdate: false) } ?? payment
        return (decided, result)
    }

    /// Marks the payment for a refund (the operator refunds it through Apple's support or tells the
    /// buyer to ask Apple), with a note.
    public func markForRefund(_ id: Int64, runtime: TenantRuntime, actor: Actor, note: String) async throws -> UnappliedPayment {
        let now = clock.now()
        let emitsEvents = runtime.webhook != nil
        return try await store.write { tx in
            guard var payment = try tx.purchases.unappliedPayment(id: id, tenantId: runtime.id, forUpdate: true) else {
                throw Self.notFound(id)
            }
            try Self.checkOpen(payment)
            payment.status = .refundRequested
            payment.resolvedAt = now
            payment.resolvedBy = actor.rawValue
            payment.note = note
            try tx.purchases.update(payment)
            try tx.audit.append(
                AuditRecord(
                    tenantId: runtime.id,
                    actor: actor,
                    action: .paymentRefundRequested,
                    bookingId: payment.bookingId,
                    purchaseId: nil,
                    detail: ["unappliedPaymentId": String(id), "transactionId": payment.proven.transactionId, "note": note],
                    at: now
                )
            )
            if emitsEvents { try tx.outbox.enqueue([payment.event(.paymentRefundRequested)], tenantId: runtime.id, now: now) }
            return payment
        }
    }

    private func open(_ id: Int64, runtime: TenantRuntime) async throws -> UnappliedPayment {
        let tenantId = runtime.id
        guard let payment = try await store.read({ try $0.purchases.unappliedPayment(id: id, tenantId: tenantId, forUpdate: false) }) else {
            throw Self.notFound(id)
        }
        try Self.checkOpen(payment)
        return payment
    }

    static func notFound(_ id: Int64) -> DomainError {
        DomainError(.notFound, .unappliedPaymentNotFound, "no unapplied payment \(id) for this app", field: "id")
    }

    static func checkOpen(_ payment: UnappliedPayment) throws {
        guard payment.currentStatus == .open else {
            throw DomainError(
                .conflict,
                .unappliedPaymentResolved,
                "unapplied payment \(payment.id) is already \(payment.currentStatus.rawValue)",
                field: "id"
            )
        }
    }
}

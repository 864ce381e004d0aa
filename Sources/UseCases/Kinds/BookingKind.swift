import Domain
import Foundation

/// Boat rentals and sea experiences: a payment confirms a pending booking of the user (or pays part
/// of it, when it carries fewer units than the booking needs), or is recorded for a refund when it
/// cannot (the slot was taken, the booking was already paid).
public struct BookingKind: PurchaseKind {
    public struct Loaded {
        var booking: Booking
        var resource: Resource?
        /// How long a part payment extends the booking's hold (the tenant's hold).
        var holdExtension: TimeInterval
        /// What the slot's other bookings hold, read when the booking's hold lapsed (nil otherwise).
        var occupancy: Occupancy?
    }

    public var kind: ProductKind { .booking }

    public init() {}

    public func target(for request: PurchaseRequest, store: any Store) async throws -> PurchaseTarget {
        guard let named = request.named, case .booking = named else {
            throw DomainError(.invalidInput, .missingField, "\(request.productId) pays for a booking: send bookingId", field: "bookingId")
        }
        return named
    }

    public func checkVisible(_ request: PurchaseRequest, store: any Store) async throws {
        guard case .booking(let id)? = request.named else { return }
        let tenantId = request.tenant.id, userId = request.userId
        let owned = try await store.read { try $0.bookings.booking(id: id, tenantId: tenantId, forUpdate: false)?.userId == userId }
        guard owned else { throw DomainError.bookingNotFound(id) }
    }

    public func load(
        _ claim: inout PurchaseClaim,
        proven: ProvenTransaction,
        request: PurchaseRequest,
        tx: any StoreSession,
        now: Date
    ) throws -> Loaded {
        guard case .booking(let id) = claim.target,
            let booking = try tx.bookings.booking(id: id, tenantId: claim.tenantId, forUpdate: true), booking.userId == claim.userId
        else {
            throw DomainError.bookingNotFound(claim.target.bookingId ?? 0)
        }
        guard request.tenant.bookingPaymentRails.contains(.appStore) else {
            // The stores forbid in-app purchase for services used outside the app: kept for a refund (paid is never silent).
            throw DomainError(
                .conflict,
                .storePurchasesNotOffered,
                "this app's bookings are paid by card, not through the App Store",
                field: "bookingId"
            )
        }
        var occupancy: Occupancy?
        if booking.holdLapsed(at: now) {
            // The slot may have been taken since the hold lapsed: take the resource's turn (releasing
            // holds that lapsed) and read what the others hold.
            occupancy = try tx.bookings.admit(booking, now: now)
        }
        return Loaded(
            booking: booking,
            resource: request.tenant.resource(id: booking.resourceId),
            holdExtension: request.tenant.holdDuration,
            occupancy: occupancy
        )
    }

    /// One call into ``BookingPurchaseRules/decide(_:proven:claimedProductId:claimedTransactionId:policy:booking:resource:existing:revokedByApple:holdExtension:occupancy:now:)``,
    /// with what `load` read.
    public func decide(
        _ claim: PurchaseClaim,
        proven: ProvenTransaction,
        request: PurchaseRequest,
        existing: Purchase?,
        revokedByApple: Bool,
        loaded: Loaded,
        tx: any StoreSession,
        now: Date
    ) throws -> (PurchasePlan, PurchasedState) {
        let booking = loaded.booking
        let plan = try BookingPurchaseRules.decide(
            claim,
            proven: proven,
            claimedProductId: request.productId,
            claimedTransactionId: request.transactionId,
            policy: request.policy,
            booking: booking,
            resource: loaded.resource,
            existing: existing,
            revokedByApple: revokedByApple,
            holdExtension: loaded.holdExtension,
            occupancy: loaded.occupancy,
            now: now
        )
        return (plan, .booking(plan.effects.booking ?? booking))
    }

    public func notificationPlan(
        _ notification: IncomingNotification,
        purchase: Purchase,
        tenant: Tenant,
        tx: any StoreSession,
        now: Date
    ) throws -> NotificationPlan {
        let booking = try purchase.bookingId.flatMap { try tx.bookings.booking(id: $0, tenantId: notification.tenantId, forUpdate: true) }
        var slotFree = false
        if BookingRefundRules.needsOccupancy(notification), let booking, let resource = tenant.resource(id: booking.resourceId) {
            let occupancy = try tx.bookings.admit(booking, now: now)
            slotFree = Capacity.fits(resource, seats: booking.seats, occupancy: occupancy)
        }
        return BookingRefundRules.plan(notification, purchase: purchase, booking: booking, slotStillFree: slotFree, now: now)
    }
}

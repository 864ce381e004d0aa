import Domain
import Foundation
import Hummingbird
import UseCases

/// `POST /api/verify-purchase`: decode, call ``VerifyPurchase``, map its outcome to the contract.
struct VerifyPurchaseRoutes {
    let verifyPurchase: VerifyPurchase
    let clock: any BerthClock

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<UserContext> {
        let routes = RouteCollection(context: UserContext.self)
        routes.post("/api/verify-purchase", use: verify)
        return routes
    }

    var metrics: BerthMetrics?
    /// What a validation catches up from the customer's App Store history.
    var catchUp: CatchUpAfterValidation?

    func verify(_ request: Request, _ context: UserContext) async throws -> Response {
        let (runtime, userId) = (context.tenant, context.userId)
        let body = try await JSONCoding.decode(VerifyPurchaseRequest.self, from: request)
        let result: VerifyPurchase.Result
        do {
            result = try await verifyPurchase(
                .init(
                    runtime: runtime,
                    userId: userId,
                    productId: body.productId,
                    proofFields: body.proofFields,
                    target: body.bookingId.map { .booking(id: $0.value) },
                    callerProvesUser: context.caller.provesUser
                )
            )
        } catch {
            metrics?.verificationFailed(error)
            throw error
        }
        metrics?.verification(result.outcome)
        if let catchUp { await catchUp(after: result, runtime: runtime, userId: userId, callerProvesUser: context.caller.provesUser) }
        if let refusal = Self.refusal(
            result.outcome,
            namesBooking: body.bookingId != nil,
            proofField: result.proofField
        ) {
            throw refusal
        }
        guard let purchase = result.outcome.purchase else {
            throw APIError(.internalServerError, .internalError, "no purchase in an accepted outcome")
        }
        switch result.state {
        case .booking(let booking) where booking.status == .pendingPayment:
            // Paid in part (a client that buys one unit of an N-seat booking): applied, not complete.
            let dto = BookingDTO(booking)
            let remaining = dto.remainingQuantity
            let message =
                "payment received for \(booking.paidQuantity) of \(booking.requiredQuantity) units; buy \(remaining) more of \(booking.requiredProductId) to confirm the booking"
            return try JSONCoding.response(
                PartialPaymentResponse(
                    remainingQuantity: remaining,
                    booking: dto,
                    purchase: PurchaseDTO(purchase),
                    error: .init(code: ErrorCode.bookingPartlyPaid.rawValue, message: message, field: "bookingId")
                ),
                status: .accepted
            )
        case .booking(let booking):
            return try JSONCoding.response(VerifyPurchaseResponse(booking: BookingDTO(booking), purchase: PurchaseDTO(purchase)))
        case .credits(let credits):
            return try JSONCoding.response(
                CreditPurchaseResponse(
                    transactionId: purchase.transactionId,
                    creditType: credits.creditType,
                    creditsAdded: purchase.credits ?? 0,
                    newBalance: credits.balance,
                    purchase: PurchaseDTO(purchase)
                )
            )
        case .subscription(let subscription, let inUse):
            return try JSONCoding.response(
                SubscriptionPurchaseResponse(
                    subscription: SubscriptionDTO(subscription, inUse: inUse, now: clock.now()),
                    purchase: PurchaseDTO(purchase)
                )
            )
        case .unlock(let held, _):
            return try JSONCoding.response(
                UnlockPurchaseResponse(entitlement: HeldEntitlementDTO(held, now: clock.now()), purchase: PurchaseDTO(purchase))
            )
        case .none:
            throw APIError(.internalServerError, .internalError, "the purchase was applied but what it paid for was not found")
        }
    }

    /// The API's refusal for an outcome that is not a purchase applied (or repeated): the one
    /// mapping `/api/verify-purchase` and the cordova validator share.
    static func refusal(_ outcome: PurchaseOutcome, namesBooking: Bool, proofField: String = "jwsRepresentation") -> APIError? {
        switch outcome {
        case .applied, .repeated:
            nil
        case .replay(let reason):
            APIError(.conflict, .transactionAlreadyUsed, reason, field: proofField)
        case .needsRefund(_, let code, let message):
            APIError(.conflict, code, message, field: namesBooking ? "bookingId" : "productId")
        case .refused(.linkedToOtherAccount, let message):
            APIError(.conflict, .linkedToOtherAccount, message, field: "transactionId")
        case .refused(let code, let message):
            APIError(.unprocessableContent, code, message, field: "transactionId")
        }
    }
}

// MARK: - Request and answer types of these routes

/// `POST /api/verify-purchase` for a credit pack.
struct CreditPurchaseResponse: Codable {
    var success = true
    var transactionId: String
    var creditType: String
    /// What this transaction granted (the same on a retry).
    var creditsAdded: Int64
    /// The balance now.
    var newBalance: Int64
    var purchase: PurchaseDTO
}

/// `POST /api/verify-purchase` of a subscription product.
struct SubscriptionPurchaseResponse: Codable {
    var subscription: SubscriptionDTO
    var purchase: PurchaseDTO
}

/// `POST /api/verify-purchase` of an unlock product (lifetime or pass): the entitlement after it.
struct UnlockPurchaseResponse: Codable {
    var entitlement: HeldEntitlementDTO
    var purchase: PurchaseDTO
}

/// A payment applied to a booking that it does not complete (HTTP 202): not a success to a client
/// that tests `success`, and still "finish the transaction", with what remains to pay.
struct PartialPaymentResponse: Codable {
    struct Detail: Codable {
        var code: String
        var message: String
        var field: String?
    }

    var success = false
    var finishTransaction = true
    var remainingQuantity: Int
    var booking: BookingDTO
    var purchase: PurchaseDTO
    var error: Detail
}

import Domain
import Foundation
import Hummingbird
import UseCases

/// `POST /api/verify-purchase`: decode, call ``VerifyPurchase``, map its outcome to the contract.
struct VerifyPurchaseRoutes {
    let verifyPurchase: VerifyPurchase
    let rateLimiter: RateLimiter
    let clock: any BerthClock

    func register(on router: Router<BerthRequestContext>) {
        router.post("/api/verify-purchase") { request, context in try await verify(request, context) }
    }

    var metrics: BerthMetrics?

    func verify(_ request: Request, _ context: BerthRequestContext) async throws -> Response {
        do {
            let (response, kind, outcome) = try await verified(request, context)
            metrics?.verification(outcome: outcome, kind: kind)
            return response
        } catch {
            let code = CordovaValidatorRoutes.code(of: error)
            metrics?.verification(outcome: code, kind: code == ErrorCode.transactionAlreadyUsed.rawValue ? "unknown" : nil)
            throw error
        }
    }

    private func verified(_ request: Request, _ context: BerthRequestContext) async throws -> (Response, String, String) {
        let (runtime, userId, _) = try context.requireUser()
        try rateLimiter.check(context, scope: .verification)
        let body = try await JSONCoding.decode(VerifyPurchaseRequest.self, from: request)
        let proof: PurchaseProof
        if let jws = body.jwsRepresentation, !jws.isEmpty {
            proof = .jws(jws)
        } else if let receipt = body.receipt, !receipt.isEmpty {
            proof = .receipt(receipt, transactionId: body.transactionId)
        } else if let transactionId = body.transactionId, !transactionId.isEmpty {
            proof = .transactionId(transactionId)
        } else {
            throw APIError(.badRequest, .missingField, "send jwsRepresentation (StoreKit 2), receipt (base64 app receipt) or transactionId", field: "jwsRepresentation")
        }
        let result = try await verifyPurchase(.init(runtime: runtime, userId: userId, productId: body.productId, transactionId: body.transactionId,
                                                    proof: proof, target: body.bookingId.map { .booking(id: $0.value) }))
        switch result.outcome {
        case .applied(let purchase), .repeated(let purchase):
            let kind = CordovaValidatorRoutes.kind(purchase)
            let outcome = if case .applied = result.outcome { "applied" } else { "repeated" }
            if let subscription = result.subscription {
                return (try JSONCoding.response(SubscriptionPurchaseResponse(subscription: SubscriptionDTO(subscription, inUse: result.inUse, now: clock.now()),
                                                                             purchase: PurchaseDTO(purchase))), kind, outcome)
            }
            if let creditType = purchase.creditType, let credits = result.credits {
                return (try JSONCoding.response(CreditPurchaseResponse(transactionId: purchase.transactionId, creditType: creditType, creditsAdded: purchase.credits ?? 0,
                                                                       newBalance: credits.balance, purchase: PurchaseDTO(purchase))), kind, outcome)
            }
            guard let booking = result.booking else { throw APIError(.internalServerError, .internalError, "the purchase was applied but its booking was not found") }
            return (try JSONCoding.response(VerifyPurchaseResponse(booking: BookingDTO(booking), purchase: PurchaseDTO(purchase))), kind, outcome)
        case .replay(let reason):
            throw APIError(.conflict, .transactionAlreadyUsed, reason, field: "jwsRepresentation")
        case .needsRefund(_, let code, let message):
            throw APIError(.conflict, code, message, field: body.bookingId == nil ? "productId" : "bookingId")
        case .refused(.linkedToOtherAccount, let message):
            throw APIError(.conflict, .linkedToOtherAccount, message, field: "transactionId")
        case .refused(let code, let message):
            throw APIError(.unprocessableContent, code, message, field: "transactionId")
        }
    }
}

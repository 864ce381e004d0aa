import AppleSignedData
import Crypto
import Domain
import Foundation
import Hummingbird
import Logging

/// `POST /api/verify-purchase`: proves a StoreKit transaction, checks it against the booking and
/// applies it exactly once.
struct VerifyPurchaseRoutes {
    let services: BerthServices

    func register(on router: Router<BerthRequestContext>) {
        router.post("/api/verify-purchase") { request, context in try await verify(request, context) }
    }

    func verify(_ request: Request, _ context: BerthRequestContext) async throws -> Response {
        let (runtime, userId, _) = try context.requireUser()
        let body = try await JSONCoding.decode(VerifyPurchaseRequest.self, from: request)
        guard let jws = body.jwsRepresentation, !jws.isEmpty else {
            if body.receipt != nil {
                throw APIError(.unprocessableContent, "unsupported_proof", "app receipts are not accepted yet; send the StoreKit 2 jwsRepresentation", field: "receipt")
            }
            throw APIError(.badRequest, "missing_field", "jwsRepresentation is required", field: "jwsRepresentation")
        }
        let proofHash = SHA256.hash(data: Data(jws.utf8)).map { String(format: "%02x", $0) }.joined()
        let bookingId = body.bookingId.value
        guard let booking = try await services.bookings.booking(id: bookingId, tenantId: runtime.id), booking.userId == userId else {
            throw DomainError.bookingNotFound(bookingId)
        }

        let transaction: TransactionPayload
        do {
            transaction = try await runtime.verifier.verifyTransaction(jws, expecting: runtime.expectations).payload
        } catch {
            context.logger.info("verify-purchase refused", metadata: ["jws.sha256": .string(String(proofHash.prefix(16))), "code": .string(error.code.rawValue)])
            let status: HTTPResponse.Status = error.code == .malformed ? .badRequest : .unprocessableContent
            throw APIError(status, error.code.rawValue, error.reason, field: "jwsRepresentation")
        }
        guard let transactionId = transaction.transactionId, let productId = transaction.productId,
              let environment = transaction.environment else {
            throw APIError(.badRequest, "malformed", "the transaction lacks transactionId, productId or environment", field: "jwsRepresentation")
        }
        guard productId == body.productId else {
            throw APIError(.unprocessableContent, "product_mismatch", "the transaction is for \(productId), not \(body.productId)", field: "productId")
        }
        guard productId == booking.requiredProductId else {
            throw APIError(.unprocessableContent, "product_mismatch", "booking \(bookingId) must be paid with \(booking.requiredProductId), not \(productId)", field: "productId")
        }
        if let claimed = body.transactionId, claimed != transactionId {
            throw APIError(.unprocessableContent, "transaction_mismatch", "transactionId \(claimed) does not match the signed transaction", field: "transactionId")
        }
        if runtime.tenant.appAccountTokenMatchesUserId == true, let token = transaction.appAccountToken,
           token.lowercased() != userId.lowercased() {
            throw APIError(.unprocessableContent, "account_token_mismatch", "the transaction was bought by another account of this app", field: "jwsRepresentation")
        }
        if transaction.revocationDate != nil {
            throw APIError(.unprocessableContent, "transaction_revoked", "Apple has refunded or revoked this transaction", field: "jwsRepresentation")
        }

        let claim = PurchaseClaim(
            tenantId: runtime.id, userId: userId, bookingId: bookingId, environment: environment.rawValue,
            transactionId: transactionId, originalTransactionId: transaction.originalTransactionId ?? transactionId,
            productId: productId, purchasedAt: transaction.purchaseDate?.date ?? services.clock.now(), proofHash: proofHash
        )
        let outcome = try await services.bookings.applyPurchase(
            claim, resource: runtime.tenant.resource(id: booking.resourceId), now: services.clock.now(), decide: PurchaseRules.decide
        )
        let logMetadata: Logger.Metadata = ["jws.sha256": .string(String(proofHash.prefix(16))), "booking": .stringConvertible(bookingId), "transaction": .string(transactionId)]
        switch outcome.decision {
        case .confirm:
            context.logger.info("purchase applied", metadata: logMetadata)
            return try JSONCoding.response(VerifyPurchaseResponse(booking: BookingDTO(outcome.booking), purchase: PurchaseDTO(outcome.purchase)))
        case .repeatOf(let purchase):
            guard purchase.status == .applied else {
                throw APIError(.conflict, purchase.outcomeCode ?? "booking_not_payable", "this payment was recorded earlier but could not be honoured; it awaits a refund", field: "bookingId")
            }
            return try JSONCoding.response(VerifyPurchaseResponse(booking: BookingDTO(outcome.booking), purchase: PurchaseDTO(purchase)))
        case .replay(_, let reason):
            context.logger.warning("replay refused", metadata: logMetadata)
            throw APIError(.conflict, "transaction_already_used", reason, field: "jwsRepresentation")
        case .needsRefund(let code, let message, _):
            context.logger.warning("payment recorded for refund", metadata: logMetadata.merging(["code": .string(code)]) { $1 })
            throw APIError(.conflict, code, message, field: "bookingId")
        }
    }
}

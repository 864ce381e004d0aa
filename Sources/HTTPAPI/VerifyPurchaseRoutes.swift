import AppleSignedData
import AppStoreAPI
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
        try services.rateLimiter.check(context, scope: .verification)
        let body = try await JSONCoding.decode(VerifyPurchaseRequest.self, from: request)
        let bookingId = body.bookingId.value
        guard let booking = try await services.bookings.booking(id: bookingId, tenantId: runtime.id), booking.userId == userId else {
            throw DomainError.bookingNotFound(bookingId)
        }
        let proven: ProvenTransaction
        if let jws = body.jwsRepresentation, !jws.isEmpty {
            proven = try await provenByJWS(jws, runtime: runtime, context: context)
        } else if let receipt = body.receipt, !receipt.isEmpty {
            proven = try await provenByReceipt(receipt, transactionId: body.transactionId, booking: booking, runtime: runtime, context: context)
        } else if let transactionId = body.transactionId, !transactionId.isEmpty {
            proven = try await provenByLookup(transactionId, userId: userId, runtime: runtime, context: context)
        } else {
            throw APIError(.badRequest, "missing_field", "send jwsRepresentation (StoreKit 2), receipt (base64 app receipt) or transactionId", field: "jwsRepresentation")
        }
        try PurchaseRules.check(proven, claimedProductId: body.productId, claimedTransactionId: body.transactionId, booking: booking,
                                userId: userId, policy: runtime.purchasePolicy)
        let transactionId = proven.transactionId
        let productId = proven.productId
        let proofHash = proven.proofHash
        let environment = proven.environment

        let claim = PurchaseClaim(
            tenantId: runtime.id, userId: userId, bookingId: bookingId, environment: environment,
            transactionId: transactionId, originalTransactionId: proven.originalTransactionId,
            productId: productId, purchasedAt: proven.purchasedAt ?? services.clock.now(), proofHash: proofHash,
            emitsEvents: runtime.webhook != nil, priceMilliunits: proven.priceMilliunits, currency: proven.currency,
            quantity: proven.quantity, revoked: proven.revoked, proofKind: proven.kind.rawValue
        )
        let outcome = try await services.bookings.applyPurchase(
            claim, resource: runtime.tenant.resource(id: booking.resourceId), now: services.clock.now(), decide: PurchaseRules.decide
        )
        let logMetadata: Logger.Metadata = ["proof.sha256": .string(String(proofHash.prefix(16))), "booking": .stringConvertible(bookingId), "transaction": .string(transactionId)]
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
        case .refuse(let code, let message):
            context.logger.warning("purchase refused", metadata: logMetadata.merging(["code": .string(code)]) { $1 })
            throw APIError(.unprocessableContent, code, message, field: "transactionId")
        }
    }

    private func provenByJWS(_ jws: String, runtime: TenantRuntime, context: BerthRequestContext) async throws -> ProvenTransaction {
        let proofHash = Self.sha256(Data(jws.utf8))
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
        return ProvenTransaction(
            transactionId: transactionId, originalTransactionId: transaction.originalTransactionId ?? transactionId,
            productId: productId, environment: environment.rawValue, purchasedAt: transaction.purchaseDate?.date,
            revoked: transaction.revocationDate != nil, appAccountToken: transaction.appAccountToken, proofHash: proofHash,
            kind: .jws, priceMilliunits: transaction.price, currency: transaction.currency, quantity: transaction.quantity
        )
    }

    /// A base64 app receipt, verified offline; `transactionId` picks its entry, else the newest entry
    /// of the booking's product.
    private func provenByReceipt(
        _ base64: String, transactionId: String?, booking: Booking, runtime: TenantRuntime, context: BerthRequestContext
    ) async throws -> ProvenTransaction {
        let verified: VerifiedReceipt
        do {
            verified = try await runtime.receiptVerifier.verify(base64: base64, expecting: runtime.expectations)
        } catch {
            context.logger.info("verify-purchase refused", metadata: ["receipt.sha256": .string(String(Self.sha256(Data(base64.utf8)).prefix(16))), "code": .string(error.code.rawValue)])
            let status: HTTPResponse.Status = error.code == .malformed ? .badRequest : .unprocessableContent
            throw APIError(status, error.code.rawValue, error.reason, field: "receipt")
        }
        let entries = verified.receipt.inAppPurchases
        let entry: AppReceipt.InAppPurchase
        if let transactionId {
            guard let match = entries.first(where: { $0.transactionId == transactionId }) else {
                throw APIError(.unprocessableContent, "transaction_not_in_receipt", "the receipt holds no transaction \(transactionId)", field: "transactionId")
            }
            entry = match
        } else {
            let candidates = entries.filter { $0.productId == booking.requiredProductId }
            guard let newest = candidates.max(by: { ($0.purchaseDate ?? AppleTimestamp(millisecondsSince1970: 0)) < ($1.purchaseDate ?? AppleTimestamp(millisecondsSince1970: 0)) }) else {
                throw APIError(.unprocessableContent, "product_mismatch", "the receipt holds no purchase of \(booking.requiredProductId)", field: "receipt")
            }
            entry = newest
        }
        guard let id = entry.transactionId, let productId = entry.productId else {
            throw APIError(.badRequest, "malformed", "the receipt entry lacks its transaction or product id", field: "receipt")
        }
        // Old receipts do not say their environment; then it must be the only one the app accepts.
        let accepted = runtime.tenant.apple.environments
        guard let environment = verified.receipt.environment?.rawValue ?? (accepted.count == 1 ? accepted.first : nil) else {
            throw APIError(.unprocessableContent, "wrong_environment", "the receipt does not say whether it is Production or Sandbox", field: "receipt")
        }
        return ProvenTransaction(
            transactionId: id, originalTransactionId: entry.originalTransactionId ?? id, productId: productId,
            environment: environment, purchasedAt: entry.purchaseDate?.date, revoked: entry.cancellationDate != nil,
            appAccountToken: nil, proofHash: verified.sha256, kind: .receipt, quantity: entry.quantity
        )
    }

    /// A bare transaction id, resolved through the App Store Server API (Get Transaction Info).
    /// Transaction ids are not secrets (they show up in webhooks, listings and support tickets), so
    /// the answer proves a purchase for this caller only when Apple's signed transaction carries the
    /// caller's appAccountToken; otherwise the app must send what StoreKit gave it (JWS or receipt).
    private func provenByLookup(_ transactionId: String, userId: String, runtime: TenantRuntime, context: BerthRequestContext) async throws -> ProvenTransaction {
        guard let api = runtime.serverAPI else {
            throw APIError(.unprocessableContent, "transaction_lookup_unavailable", "this app has no App Store Server API key configured; send jwsRepresentation or receipt", field: "transactionId")
        }
        let verified: VerifiedTransaction
        do {
            verified = try await api.transactionInfo(transactionId)
        } catch let error as AppStoreAPIError {
            context.logger.warning("transaction lookup failed", metadata: ["code": .string(error.code.rawValue)])
            switch error.code {
            case .transactionNotFound, .rejected:
                throw APIError(.unprocessableContent, error.code.rawValue, error.reason, field: "transactionId")
            default:
                throw APIError(.serviceUnavailable, error.code.rawValue, "Apple could not be asked now; retry later (\(error.reason))", headers: [.retryAfter: "5"])
            }
        } catch let error as SignedDataError {
            throw APIError(.unprocessableContent, error.code.rawValue, "Apple's answer did not verify: \(error.reason)", field: "transactionId")
        }
        let transaction = verified.payload
        guard let productId = transaction.productId, let environment = transaction.environment else {
            throw APIError(.unprocessableContent, "malformed", "Apple's transaction lacks productId or environment", field: "transactionId")
        }
        guard let token = transaction.appAccountToken, token.lowercased() == userId.lowercased() else {
            context.logger.warning("bare transaction id refused: not bought with this user's appAccountToken", metadata: ["transaction": .string(transactionId)])
            throw APIError(.unprocessableContent, "proof_required",
                           "a transaction id alone proves a purchase only when it was bought with this user's appAccountToken; send jwsRepresentation or receipt",
                           field: "transactionId")
        }
        return ProvenTransaction(
            transactionId: transaction.transactionId ?? transactionId, originalTransactionId: transaction.originalTransactionId ?? transactionId,
            productId: productId, environment: environment.rawValue, purchasedAt: transaction.purchaseDate?.date,
            revoked: transaction.revocationDate != nil, appAccountToken: transaction.appAccountToken,
            proofHash: Self.sha256(verified.rawPayload), kind: .lookup,
            priceMilliunits: transaction.price, currency: transaction.currency, quantity: transaction.quantity
        )
    }

    private static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}

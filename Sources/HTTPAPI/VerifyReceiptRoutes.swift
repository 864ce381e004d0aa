import AppleSignedData
import Domain
import Foundation
import Hummingbird
import Logging

/// `POST /api/verify-receipt`: the endpoint existing iOS clients call with their base64 app receipt.
/// It answers `{success, isPremium, productId, expirationDate, environment, message}`; 4xx means
/// "do not retry", 5xx (with a retryable code) means "retry later". The receipt is verified offline;
/// only its SHA-256 is stored and logged.
struct VerifyReceiptRoutes {
    let services: BerthServices

    func register(on router: Router<BerthRequestContext>) {
        router.post("/api/verify-receipt") { request, context in
            do {
                return try await verify(request, context)
            } catch let error as APIError {
                return try Self.refusal(error)
            } catch let error as DomainError {
                return try Self.refusal(APIError(error))
            } catch {
                // Storage or other temporary trouble: the client retries 5xx.
                context.logger.error("verify-receipt failed: \(String(reflecting: error))")
                return try Self.refusal(APIError(.serviceUnavailable, "temporarily_unavailable", "temporary server error; retry later", headers: [.retryAfter: "5"]))
            }
        }
    }

    func verify(_ request: Request, _ context: BerthRequestContext) async throws -> Response {
        let runtime: TenantRuntime
        var userId: String?
        switch context.identity {
        case .user(let tenant, let user, _): (runtime, userId) = (tenant, user)
        case .server(let tenant, _): runtime = tenant
        case .admin: throw APIError.forbidden("use the user's token or a server key")
        case nil: throw APIError.unauthenticated("send Authorization: Bearer <user token or API key>")
        }
        try services.rateLimiter.check(context, scope: .verification)
        let body = try await JSONCoding.decode(VerifyReceiptRequest.self, from: request)
        if userId == nil { userId = body.userId }
        if let bundleId = body.bundleId, bundleId != runtime.tenant.apple.bundleId {
            throw APIError(.unprocessableContent, "wrong_bundle", "this server verifies receipts of \(runtime.tenant.apple.bundleId), not \(bundleId)", field: "bundleId")
        }
        let now = services.clock.now()
        let verified: VerifiedReceipt
        do {
            verified = try await runtime.receiptVerifier.verify(base64: body.receiptData, expecting: runtime.expectations)
        } catch {
            let hash = Self.receiptHash(body.receiptData)
            context.logger.info("verify-receipt refused", metadata: ["receipt.sha256": .string(hash), "code": .string(error.code.rawValue)])
            try? await services.receiptChecks.record(ReceiptCheck(tenantId: runtime.id, userId: userId, receiptSHA256: hash, outcome: error.code.rawValue,
                                                                  isPremium: false, productId: nil, expiresAt: nil, at: now))
            let status: HTTPResponse.Status = error.code == .malformed ? .badRequest : .unprocessableContent
            throw APIError(status, error.code.rawValue, "the receipt did not verify: \(error.reason)", field: "receiptData")
        }

        let periods = verified.receipt.inAppPurchases.compactMap { entry -> SubscriptionPeriod? in
            guard let product = entry.productId, let expiry = entry.subscriptionExpirationDate else { return nil }
            return SubscriptionPeriod(productId: product, expiresAt: expiry.date, cancelled: entry.cancellationDate != nil)
        }
        let subscriptions = Set(runtime.tenant.products.filter { $0.kind == .subscription }.map(\.id))
        let entitlement = EntitlementRules.entitlement(from: periods, subscriptionProducts: subscriptions, now: now)
        try await services.receiptChecks.record(ReceiptCheck(tenantId: runtime.id, userId: userId, receiptSHA256: verified.sha256, outcome: "verified",
                                                             isPremium: entitlement.isPremium, productId: entitlement.productId, expiresAt: entitlement.expiresAt, at: now))
        context.logger.info("verify-receipt", metadata: ["receipt.sha256": .string(String(verified.sha256.prefix(16))), "premium": .stringConvertible(entitlement.isPremium)])
        return try JSONCoding.response(VerifyReceiptResponse(
            success: true, isPremium: entitlement.isPremium, productId: entitlement.productId, expirationDate: entitlement.expiresAt.map(APITime.init),
            environment: verified.receipt.environment.map { $0 == .production ? "production" : "sandbox" }, message: entitlement.message
        ))
    }

    /// The clients' error shape (`success`, `isPremium`, `message`) with Berth's `error` object.
    static func refusal(_ error: APIError) throws -> Response {
        var response = try JSONCoding.response(
            VerifyReceiptResponse(success: false, isPremium: false, message: error.message,
                                  error: .init(code: error.code, message: error.message, field: error.field)),
            status: error.status
        )
        for field in error.headers { response.headers.append(field) }
        return response
    }

    private static func receiptHash(_ text: String) -> String {
        guard let data = Data(base64Encoded: text.filter { !$0.isWhitespace }) else { return "not-base64" }
        return String(SHA256Hex.of(data).prefix(64))
    }
}

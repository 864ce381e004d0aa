import AppleSignedData
import Domain
import Foundation
import Hummingbird
import UseCases
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
                return try Self.refusal(APIError(.serviceUnavailable, .temporarilyUnavailable, "temporary server error; retry later", headers: [.retryAfter: "5"]))
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
        let answer = try await services.verifyReceipt(receiptData: body.receiptData, bundleId: body.bundleId, userId: userId, runtime: runtime)
        let entitlement = answer.entitlement
        return try JSONCoding.response(VerifyReceiptResponse(
            success: true, isPremium: entitlement.isPremium, productId: entitlement.productId, expirationDate: entitlement.expiresAt.map(SecondsTime.init),
            environment: answer.environment.map { $0 == .production ? "production" : "sandbox" }, message: entitlement.message
        ))
    }

    /// The clients' error shape (`success`, `isPremium`, `message`) with Berth's `error` object.
    static func refusal(_ error: APIError) throws -> Response {
        var response = try JSONCoding.response(
            VerifyReceiptResponse(success: false, isPremium: false, message: error.message,
                                  error: .init(code: error.code.rawValue, message: error.message, field: error.field)),
            status: error.status
        )
        for field in error.headers { response.headers.append(field) }
        return response
    }
}

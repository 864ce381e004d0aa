import AppleSignedData
import Domain
import Foundation
import Hummingbird
import Logging
import UseCases

/// `POST /api/verify-receipt`: the endpoint existing iOS clients call with their base64 app receipt.
/// It answers `{success, isPremium, productId, expirationDate, environment, message}`; 4xx means
/// "do not retry", 5xx (with a retryable code) means "retry later". The receipt is verified offline;
/// only its SHA-256 is stored and logged.
struct VerifyReceiptRoutes {
    let verifyReceipt: VerifyReceipt

    /// Braindumpster's clients read their own shape for every refusal, 401s included; storage
    /// trouble is a 5xx they retry.
    static let shape = ErrorShape(api: { error in try refusal(error) })

    func register(on routes: GuardedRoutes<ProofContext>) {
        routes.post("/api/verify-receipt", use: verify)
    }

    func verify(_ request: Request, _ context: ProofContext) async throws -> Response {
        let body = try await JSONCoding.decode(VerifyReceiptRequest.self, from: request)
        let named = try body.userId.map { try Authenticator.userId($0, field: "userId", tenant: context.tenant.tenant) }.flatMap {
            $0.isEmpty ? nil : $0
        }
        // A user's token speaks for its subject only; a key names the user (X-User-Id or the body's userId).
        var userId = context.caller.userId
        if context.caller.kind == .userToken {
            if let named, named != userId { throw APIError.forbidden("userId must be the signed-in user's") }
        } else if userId == nil {
            userId = named
        }
        let answer = try await verifyReceipt(receiptData: body.receiptData, bundleId: body.bundleId, userId: userId, runtime: context.tenant)
        let entitlement = answer.entitlement
        return try JSONCoding.response(
            VerifyReceiptResponse(
                success: true,
                isPremium: entitlement.isPremium,
                productId: entitlement.productId,
                expirationDate: entitlement.expiresAt.map(SecondsTime.init),
                environment: answer.environment.map { $0 == .production ? "production" : "sandbox" },
                message: entitlement.message
            )
        )
    }

    /// The clients' error shape (`success`, `isPremium`, `message`) with Berth's `error` object.
    static func refusal(_ error: APIError) throws -> Response {
        // Unexpected failures are temporary for these clients: 503, and they retry.
        let error =
            error.status == .internalServerError
            ? APIError(.serviceUnavailable, .temporarilyUnavailable, "temporary server error; retry later", headers: [.retryAfter: "5"]) : error
        var response = try JSONCoding.response(
            VerifyReceiptResponse(
                success: false,
                isPremium: false,
                message: error.message,
                error: .init(code: error.code.rawValue, message: error.message, field: error.field)
            ),
            status: error.status
        )
        for field in error.headers { response.headers.append(field) }
        return response
    }
}

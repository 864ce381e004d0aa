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

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<ProofContext> {
        let routes = RouteCollection(context: ProofContext.self)
        routes.post("/api/verify-receipt", use: verify)
        return routes
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

// MARK: - Request and answer types of these routes

/// `POST /api/verify-receipt` (the contract of existing iOS clients).
/// Braindumpster's body: the camelCase of its plan's JSON example, or the snake_case its summary
/// names (`receipt_data`, `user_id`, `device_info`, `app_version`, `bundle_id`); camelCase wins.
struct VerifyReceiptRequest: Codable {
    var receiptData: String
    var userId: String?
    var deviceInfo: [String: String]?
    var appVersion: String?
    var bundleId: String?

    enum CodingKeys: String, CodingKey { case receiptData, userId, deviceInfo, appVersion, bundleId }
    enum SnakeKeys: String, CodingKey {
        case receiptData = "receipt_data", userId = "user_id", deviceInfo = "device_info", appVersion = "app_version", bundleId = "bundle_id"
    }

    init(from decoder: any Decoder) throws {
        let camel = try decoder.container(keyedBy: CodingKeys.self)
        let snake = try decoder.container(keyedBy: SnakeKeys.self)
        if camel.contains(.receiptData) || !snake.contains(.receiptData) {
            receiptData = try camel.decode(String.self, forKey: .receiptData)
        } else {
            receiptData = try snake.decode(String.self, forKey: .receiptData)
        }
        userId = try camel.decodeIfPresent(String.self, forKey: .userId) ?? snake.decodeIfPresent(String.self, forKey: .userId)
        deviceInfo =
            try camel.decodeIfPresent([String: String].self, forKey: .deviceInfo) ?? snake.decodeIfPresent([String: String].self, forKey: .deviceInfo)
        appVersion = try camel.decodeIfPresent(String.self, forKey: .appVersion) ?? snake.decodeIfPresent(String.self, forKey: .appVersion)
        bundleId = try camel.decodeIfPresent(String.self, forKey: .bundleId) ?? snake.decodeIfPresent(String.self, forKey: .bundleId)
    }
}

struct VerifyReceiptResponse: Codable {
    struct ErrorDetail: Codable {
        var code: String
        var message: String
        var field: String?
    }
    var success: Bool
    var isPremium: Bool
    var productId: String?
    var expirationDate: SecondsTime?
    /// `production` or `sandbox`.
    var environment: String?
    var message: String
    /// On refusals, the error of every Berth endpoint.
    var error: ErrorDetail?
}

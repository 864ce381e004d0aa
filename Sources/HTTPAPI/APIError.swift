import Domain
import Foundation
import Hummingbird
import NIOCore

/// The one error shape of the API: `{"success": false, "error": {"code", "message", "field"}}`.
public struct APIError: Error, Sendable {
    public var status: HTTPResponse.Status
    public var code: ErrorCode
    public var message: String
    public var field: String?
    public var headers: HTTPFields
    /// For `insufficient_credits`: the balance, beside the error.
    var credits: CreditSummary?

    public init(_ status: HTTPResponse.Status, _ code: ErrorCode, _ message: String, field: String? = nil, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    init(_ error: DomainError) {
        let status: HTTPResponse.Status = switch error.kind {
        case .invalidInput: .badRequest
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .conflict: .conflict
        case .unprocessable: .unprocessableContent
        case .unauthenticated: .unauthorized
        case .unavailable: .serviceUnavailable
        }
        var headers: HTTPFields = [:]
        if let seconds = error.retryAfter { headers[.retryAfter] = String(seconds) }
        self.init(status, error.code, error.message, field: error.field, headers: headers)
        credits = error.credits
    }

    static func unauthenticated(_ message: String) -> APIError {
        APIError(.unauthorized, .unauthenticated, message, headers: [.wwwAuthenticate: "Bearer"])
    }

    static func forbidden(_ message: String) -> APIError {
        APIError(.forbidden, .forbidden, message)
    }

    struct Body: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
            var field: String?
        }
        var success = false
        var error: Detail
        var credits: CreditBalanceDTO?
    }

    func response() -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        let data = (try? JSONEncoder().encode(Body(error: .init(code: code.rawValue, message: message, field: field), credits: credits.map(CreditBalanceDTO.init)))) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns every error into the API's error shape; nothing escapes as a bare 500.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return error.response()
        } catch let error as DomainError {
            return APIError(error).response()
        } catch let error as StoreUnavailable {
            context.logger.warning("store unavailable: \(error.description)")
            var response = APIError(.serviceUnavailable, .temporarilyUnavailable, "the service is temporarily unavailable; nothing was applied, try again").response()
            response.headers[.retryAfter] = String(error.retryAfter)
            return response
        } catch let error as HTTPError {
            let code: ErrorCode = switch error.status {
            case .notFound: .notFound
            case .contentTooLarge: .bodyTooLarge
            case .methodNotAllowed: .methodNotAllowed
            default: .badRequest
            }
            let message = error.status == .contentTooLarge ? "request bodies are limited to 64 KiB" : (error.body ?? error.status.reasonPhrase)
            return APIError(error.status, code, message).response()
        } catch {
            context.logger.error("unexpected error: \(String(reflecting: error))")
            return APIError(.internalServerError, .internalError, "an unexpected error occurred; nothing was applied").response()
        }
    }
}


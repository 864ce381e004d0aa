import Domain
import Foundation
import Hummingbird
import NIOCore

/// The one error shape of the API: `{"success": false, "error": {"code", "message", "field"}}`.
public struct APIError: Error, Sendable {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    public var field: String?
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, field: String? = nil, headers: HTTPFields = [:]) {
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
        }
        self.init(status, error.code, error.message, field: error.field)
    }

    static func unauthenticated(_ message: String) -> APIError {
        APIError(.unauthorized, "unauthenticated", message, headers: [.wwwAuthenticate: "Bearer"])
    }

    static func forbidden(_ message: String) -> APIError {
        APIError(.forbidden, "forbidden", message)
    }

    struct Body: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
            var field: String?
        }
        var success = false
        var error: Detail
    }

    func response() -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        let data = (try? JSONEncoder().encode(Body(error: .init(code: code, message: message, field: field)))) ?? Data()
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
        } catch let error as HTTPError {
            let code = switch error.status {
            case .notFound: "not_found"
            case .contentTooLarge: "body_too_large"
            case .methodNotAllowed: "method_not_allowed"
            default: "bad_request"
            }
            let message = error.status == .contentTooLarge ? "request bodies are limited to 64 KiB" : (error.body ?? error.status.reasonPhrase)
            return APIError(error.status, code, message).response()
        } catch {
            context.logger.error("unexpected error: \(String(reflecting: error))")
            return APIError(.internalServerError, "internal_error", "an unexpected error occurred; nothing was applied").response()
        }
    }
}

import Crypto

/// Hex SHA-256, the only form in which receipts and signed data are kept or logged.
enum SHA256Hex {
    static func of(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}

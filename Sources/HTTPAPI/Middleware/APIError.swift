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
    /// A paid transaction the refusal left unapplied, kept by Berth (the app may finish it).
    var unappliedPayment: UnappliedPayment?
    /// For purchase refusals: what an app can show as it is, in the caller's language.
    var title: String?
    var description: String?

    public init(_ status: HTTPResponse.Status, _ code: ErrorCode, _ message: String, field: String? = nil, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    init(_ error: DomainError) {
        let status: HTTPResponse.Status =
            switch error.kind {
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
        unappliedPayment = error.unappliedPayment
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
            var title: String?
            var description: String?
        }
        var success = false
        var error: Detail
        var credits: CreditBalanceDTO?
        var unappliedPayment: UnappliedPaymentDTO?
        var finishTransaction: Bool?
    }

    func response() -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        let data =
            (try? BerthJSON.shared.encode(
                Body(
                    error: .init(code: code.rawValue, message: message, field: field, title: title, description: description),
                    credits: credits.map(CreditBalanceDTO.init),
                    unappliedPayment: unappliedPayment.map(UnappliedPaymentDTO.init),
                    finishTransaction: unappliedPayment.map { _ in true }
                )
            )) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns every error into the API's error shape; nothing escapes as a bare 500.
///
/// A known path called with a method it does not serve answers 405 with `Allow` (not 404): only
/// requests the router did not match pay for that look-up (authentication ran, but decides nothing
/// for an unmatched route). It was a middleware of its own, one more level of the chain for every request.
///
/// The caller is resolved here too, inside the error handling (``Authenticator``, called directly:
/// one level of the chain less for every request).
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = BerthRequestContext
    /// Resolves the request's credentials before the routes run (nil: none are read).
    var authenticator: Authenticator?
    /// The routes by path pattern, for 405.
    var routes: RouteTable?
    /// A path no route serves answers 404 in the shape of the clients whose routes it looks like
    /// (the first form that matches), else in Berth's.
    var unmatched: [(hasForm: @Sendable (String) -> Bool, shape: ErrorShape)] = []

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            guard let authenticator else { return try await next(request, context) }
            return try await authenticator.handle(request, context: context, next: next)
        } catch {
            if let http = error as? HTTPError, http.status == .notFound {
                if let wrongMethod = methodNotAllowed(request) { return wrongMethod }
                if let form = unmatched.first(where: { $0.hasForm(request.uri.path) }) {
                    return try form.shape.render(APIError(.notFound, .notFound, "nothing is served at this path"), context.logger)
                }
            }
            return APIError.from(error, logger: context.logger).response()
        }
    }

    private func methodNotAllowed(_ request: Request) -> Response? {
        guard let routes else { return nil }
        let allowed = routes.methods(at: request.uri.path)
        guard !allowed.isEmpty, !allowed.contains(request.method.rawValue), !(request.method == .head && allowed.contains("GET")) else {
            return nil
        }
        var response = APIError(
            .methodNotAllowed,
            .methodNotAllowed,
            "\(request.method.rawValue) is not served here; use \(allowed.joined(separator: ", "))"
        ).response()
        response.headers[.allow] = allowed.joined(separator: ", ")
        return response
    }
}

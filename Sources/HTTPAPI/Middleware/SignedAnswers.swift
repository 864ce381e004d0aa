import Domain
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UseCases

/// Signs the answers of a route group for tenants with `answerSigning` (``AnswerSigner``): the
/// body as sent, the request's `X-Berth-Nonce`, the time, the status, the route and the user, so
/// that an app can tell Berth's "isPremium: true" from a proxy's. Every answer of the group is
/// signed, refusals included (rendered here in the group's shape, then signed); an answer without
/// a valid signature is one the app must not trust.
struct SignAnswers: RouterMiddleware {
    typealias Context = BerthRequestContext

    /// The group's refusal shape (nil: Berth's own).
    let shape: ErrorShape?
    let clock: any BerthClock

    /// `+ / = - _ . ~`
    private static let nonceSymbols: Set<UInt8> = [0x2B, 0x2F, 0x3D, 0x2D, 0x5F, 0x2E, 0x7E]

    static let nonceHeader = HTTPField.Name("X-Berth-Nonce")!
    static let signatureHeader = HTTPField.Name("X-Berth-Signature")!
    static let signedAtHeader = HTTPField.Name("X-Berth-Signed-At")!
    static let keyIdHeader = HTTPField.Name("X-Berth-Key-Id")!
    /// Set by a handler whose user is not the caller's (the validator's applicationUsername); never sent.
    static let answerUserHeader = HTTPField.Name("X-Berth-Answer-User")!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard case .authenticated(let caller) = context.authentication, let signer = caller.tenant.answerSigner else {
            return try await next(request, context)
        }
        let nonce = try Self.nonce(request)
        func render(_ error: any Error) throws -> Response {
            try shape?.render(error, context.logger) ?? APIError.from(error, logger: context.logger).response()
        }
        var response: Response
        var answerUser: String?
        do {
            response = try await next(request, context)
        } catch let scoped as AnsweringFor {
            answerUser = scoped.userId
            response = try render(scoped.underlying)
        } catch {
            response = try render(error)
        }
        let userId = answerUser ?? response.headers[Self.answerUserHeader] ?? caller.userId ?? ""
        response.headers[Self.answerUserHeader] = nil
        // Berth's answers are its own JSON, of bounded size (lists are paged): held whole to be signed.
        let collector = BodyCollector()
        try await response.body.write(collector)
        let body = collector.buffer
        // Line breaks would let one signed text read as another (user ids are checked; this keeps it so).
        guard !userId.contains(where: { $0.isNewline }) else {
            return Response(status: response.status, headers: response.headers, body: .init(byteBuffer: body))
        }
        let signedAt = Int64((clock.now().timeIntervalSince1970 * 1000).rounded(.down))
        let answer = AnswerSigner.Answer(
            nonce: nonce,
            signedAt: signedAt,
            status: Int(response.status.code),
            method: request.method.rawValue,
            path: Self.target(request),
            userId: userId,
            body: Data(body.readableBytesView)
        )
        var headers = response.headers
        headers[Self.signatureHeader] = try signer.signature(answer)
        headers[Self.signedAtHeader] = String(signedAt)
        headers[Self.keyIdHeader] = signer.keyId
        if !nonce.isEmpty { headers[Self.nonceHeader] = nonce }
        return Response(status: response.status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The path with its query exactly as received (T9: an answer to `?offset=5` must not verify
    /// as the answer to the plain request).
    static func target(_ request: Request) -> String {
        guard let query = request.uri.query, !query.isEmpty else { return request.uri.path }
        return request.uri.path + "?" + query
    }

    /// The request's nonce: up to 128 characters of base64, base64url, hex or a UUID (`A–Z a–z 0–9
    /// + / = - _ . ~`); "" when it sent none. Anything else is refused before the route runs.
    static func nonce(_ request: Request) throws -> String {
        guard let value = request.headers[nonceHeader] else { return "" }
        let allowed = value.utf8.allSatisfy { (byte: UInt8) -> Bool in
            if byte >= 0x30 && byte <= 0x39 { return true }
            if byte >= 0x41 && byte <= 0x5A { return true }
            if byte >= 0x61 && byte <= 0x7A { return true }
            return Self.nonceSymbols.contains(byte)
        }
        guard (8...128).contains(value.utf8.count), allowed else {
            throw APIError(
                .badRequest,
                .invalidField,
                "X-Berth-Nonce must be 8 to 128 characters of base64, base64url, hex or a UUID; send a fresh random one per request",
                field: "X-Berth-Nonce"
            )
        }
        return value
    }
}

/// A handler's error once it knows whom its answer is about, when that is not the caller's user
/// (the validator's applicationUsername): the signer names that user; everyone else sees the error.
struct AnsweringFor: Error {
    let userId: String
    let underlying: any Error
}

/// Reads a response body back into one buffer (one task writes it, then reads `buffer`).
private final class BodyCollector: ResponseBodyWriter, @unchecked Sendable {
    private(set) var buffer = ByteBuffer()

    func write(_ part: ByteBuffer) async throws {
        var part = part
        buffer.writeBuffer(&part)
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

/// `GET /api/answer-signing/{tenant}`: the public key a tenant signs its answers with, for the
/// app's build to pin (an app that fetched it at run time would trust whoever answers).
struct AnswerSigningRoutes {
    let tenants: TenantRegistry

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<BerthRequestContext> {
        let routes = RouteCollection(context: BerthRequestContext.self)
        routes.get("/api/answer-signing/{tenant}", use: getAnswerSigning)
        return routes
    }

    /// `GET /api/answer-signing/{tenant}`
    func getAnswerSigning(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        guard let id = context.parameters.get("tenant"), let runtime = tenants.tenant(id: id), let signer = runtime.answerSigner else {
            throw APIError(.notFound, .notFound, "this app does not sign its answers (answerSigning is not configured)")
        }
        let (x, y) = signer.publicKeyCoordinates
        return try JSONCoding.response(
            AnswerSigningKey(
                tenant: runtime.id,
                format: AnswerSigner.format,
                keyId: signer.keyId,
                algorithm: "ES256",
                publicKeySPKI: signer.publicKeySPKI,
                publicKeyPEM: signer.publicKeyPEM,
                jwk: .init(kty: "EC", crv: "P-256", x: x, y: y, kid: signer.keyId, alg: "ES256", use: "sig")
            )
        )
    }
}

struct AnswerSigningKey: Encodable {
    struct JWK: Encodable {
        var kty: String
        var crv: String
        var x: String
        var y: String
        var kid: String
        var alg: String
        var use: String
    }

    var tenant: String
    var format: String
    var keyId: String
    var algorithm: String
    var publicKeySPKI: String
    var publicKeyPEM: String
    var jwk: JWK
}

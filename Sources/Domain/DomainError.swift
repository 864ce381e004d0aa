/// A refusal by the business rules, with a stable machine-readable code.
/// HTTPAPI maps `kind` to a status code; nothing below HTTP knows about HTTP.
public struct DomainError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable {
        /// The input is malformed or incomplete.
        case invalidInput
        /// The caller may not do this.
        case forbidden
        /// The thing does not exist (or belongs to someone else).
        case notFound
        /// The request conflicts with the current state (already used, slot taken, wrong status).
        case conflict
        /// Well-formed but unacceptable (wrong product, failed verification).
        case unprocessable
        /// The caller is not authenticated.
        case unauthenticated
        /// Something Berth depends on (Apple, the database) cannot answer now; retry after `retryAfter` seconds.
        case unavailable
    }

    public var kind: Kind
    public var code: ErrorCode
    public var message: String
    public var field: String?
    /// For `unavailable`: seconds after which a retry may succeed.
    public var retryAfter: Int?
    /// For `insufficient_credits`: the balance, so that the app can open its purchase screen.
    public var credits: CreditSummary?
    /// For a paid transaction that could not be applied: the unapplied payment that keeps it (the
    /// app may finish the transaction; an operator applies or refunds it).
    public var unappliedPayment: UnappliedPayment?

    public init(_ kind: Kind, _ code: ErrorCode, _ message: String, field: String? = nil, retryAfter: Int? = nil) {
        self.retryAfter = retryAfter
        self.kind = kind
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { "\(code): \(message)" }

    public static func invalid(_ message: String, field: String? = nil, code: ErrorCode = .invalidRequest) -> DomainError {
        DomainError(.invalidInput, code, message, field: field)
    }

    public static func bookingNotFound(_ id: Int64) -> DomainError {
        DomainError(.notFound, .bookingNotFound, "no booking \(id) for this user", field: "bookingId")
    }
}

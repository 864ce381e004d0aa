/// A failure talking to one of Apple's network services, with a stable code and whether a retry
/// later could succeed (callers answer 503 for retryable failures and 4xx for the others).
public struct AppStoreAPIError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Apple does not know the transaction (in either environment).
        public static let transactionNotFound = Code(rawValue: "transaction_not_found")
        /// Apple refused our credentials (401).
        public static let unauthorized = Code(rawValue: "apple_unauthorized")
        /// Apple asked us to slow down (429) and retries ran out.
        public static let rateLimited = Code(rawValue: "apple_rate_limited")
        /// Apple failed (5xx) and retries ran out.
        public static let unavailable = Code(rawValue: "apple_unavailable")
        /// No answer in time, or the connection failed.
        public static let timeout = Code(rawValue: "apple_timeout")
        /// Apple answered something we cannot read.
        public static let invalidResponse = Code(rawValue: "apple_invalid_response")
        /// Apple refused the request (4xx with an errorCode).
        public static let rejected = Code(rawValue: "apple_rejected")
        /// A legacy verifyReceipt status that means the receipt is bad (21002, 21003, 21010, …).
        public static let receiptInvalid = Code(rawValue: "receipt_invalid")
        /// verifyReceipt: the shared secret does not match (21004).
        public static let sharedSecretMismatch = Code(rawValue: "shared_secret_mismatch")
        /// Configuration is missing or unusable (no key, bad key).
        public static let notConfigured = Code(rawValue: "apple_not_configured")

        /// Every code above (the API contract lists them).
        public static let all: [Code] = [
            .transactionNotFound, .unauthorized, .rateLimited, .unavailable, .timeout, .invalidResponse, .rejected, .receiptInvalid,
            .sharedSecretMismatch, .notConfigured,
        ]
    }

    public var code: Code
    public var reason: String
    public var retryable: Bool
    /// Apple's numeric errorCode (App Store Server API) or status (verifyReceipt), when it sent one.
    public var appleCode: Int?

    public init(_ code: Code, _ reason: String, retryable: Bool = false, appleCode: Int? = nil) {
        self.code = code
        self.reason = reason
        self.retryable = retryable
        self.appleCode = appleCode
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}

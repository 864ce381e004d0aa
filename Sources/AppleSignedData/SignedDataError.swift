/// Why a piece of Apple-signed data was refused.
///
/// `code` is stable and machine-readable (it ends up in API error bodies and CLI output);
/// `reason` is a human explanation that may change between versions.
public struct SignedDataError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The input is not a compact JWS / receipt, or its JSON or base64 is broken.
        public static let malformed = Code(rawValue: "malformed")
        /// The JWS header names an algorithm other than ES256.
        public static let unsupportedAlgorithm = Code(rawValue: "unsupported_algorithm")
        /// The x5c header is missing, not three certificates, unparsable, or the links do not verify.
        public static let badChain = Code(rawValue: "bad_chain")
        /// The chain does not end at one of the configured trusted roots.
        public static let untrustedRoot = Code(rawValue: "untrusted_root")
        /// The intermediate or leaf certificate lacks Apple's marker extension.
        public static let missingAppleOID = Code(rawValue: "missing_apple_oid")
        /// A certificate of the chain had expired at the payload's signedDate.
        public static let certificateExpired = Code(rawValue: "certificate_expired")
        /// A certificate of the chain was not yet valid at the payload's signedDate.
        public static let certificateNotYetValid = Code(rawValue: "certificate_not_yet_valid")
        /// The ES256 signature does not verify with the leaf certificate's key.
        public static let badSignature = Code(rawValue: "bad_signature")
        /// The payload belongs to another app (bundle id).
        public static let wrongBundle = Code(rawValue: "wrong_bundle")
        /// The payload belongs to another app (App Store app id).
        public static let wrongAppAppleId = Code(rawValue: "wrong_app_apple_id")
        /// The payload's environment is not the expected one (includes refused Xcode/LocalTesting data).
        public static let wrongEnvironment = Code(rawValue: "wrong_environment")
        /// Production expectations were built without the app's App Store id.
        public static let missingAppAppleId = Code(rawValue: "missing_app_apple_id")
        /// A trusted root supplied by configuration could not be read.
        public static let invalidRoot = Code(rawValue: "invalid_root")

        /// Every code above (the API contract lists them).
        public static let all: [Code] = [
            .malformed, .unsupportedAlgorithm, .badChain, .untrustedRoot, .missingAppleOID, .certificateExpired, .certificateNotYetValid,
            .badSignature, .wrongBundle, .wrongAppAppleId, .wrongEnvironment, .missingAppAppleId, .invalidRoot,
        ]
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}

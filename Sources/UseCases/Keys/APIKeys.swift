import AppleSignedData
import Crypto
import Domain
import Foundation
import Synchronization

/// API key format and hashing: a key is shown once; only its SHA-256 is stored.
public enum APIKeys {
    public static let prefix = "berth_"

    /// A new random key, `berth_<tenant>_<43 base64url characters>` (256 bits).
    public static func generate(tenantId: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "\(prefix)\(tenantId)_\(Base64URL.encode(bytes))"
    }

    public static func hash(_ key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).hexString
    }

    /// What a listing shows of a key: its tenant prefix and 4 characters of the secret (24 bits of 256).
    public static func hint(_ key: String) -> String {
        String(key.prefix(max(0, key.count - 39))) + "…"
    }
}

/// A key just made: the stored record and the secret, shown once.
public struct IssuedAPIKey: Sendable {
    public var key: APIKey
    public var secret: String
}

extension DomainError {
    static func keyNotFound(_ id: Int64) -> DomainError {
        DomainError(.notFound, .keyNotFound, "no API key \(id) for this app", field: "id")
    }
}

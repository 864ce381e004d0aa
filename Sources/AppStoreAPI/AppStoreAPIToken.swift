import AppleSignedData
import Crypto
import Foundation

/// The credentials of an App Store Connect in-app purchase key and the ES256 bearer tokens made
/// from them (header `kid`; claims `iss`, `iat`, `exp`, `aud` = `appstoreconnect-v1`, `bid`).
public struct AppStoreAPICredentials: Sendable {
    public var issuerId: String
    public var keyId: String
    public var bundleId: String
    public var privateKey: P256.Signing.PrivateKey
    /// Tokens live this long (Apple accepts up to an hour).
    public var tokenLifetime: TimeInterval

    public init(issuerId: String, keyId: String, bundleId: String, privateKey: P256.Signing.PrivateKey, tokenLifetime: TimeInterval = 300) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.bundleId = bundleId
        self.privateKey = privateKey
        self.tokenLifetime = tokenLifetime
    }

    /// Reads the `.p8` PEM key App Store Connect hands out.
    public init(issuerId: String, keyId: String, bundleId: String, privateKeyPEM: String) throws(AppStoreAPIError) {
        do {
            self.init(issuerId: issuerId, keyId: keyId, bundleId: bundleId, privateKey: try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM))
        } catch {
            throw AppStoreAPIError(.notConfigured, "the App Store Server API key is not a P-256 PEM private key")
        }
    }

    struct Header: Codable {
        var alg = "ES256"
        var kid: String
        var typ = "JWT"
    }
    struct Claims: Codable {
        var iss: String
        var iat: Int64
        var exp: Int64
        var aud = "appstoreconnect-v1"
        var bid: String
    }

    /// A fresh bearer token, valid from `now` for `tokenLifetime`.
    public func token(now: Date) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let issued = Int64(now.timeIntervalSince1970)
        let header = Base64URL.encode(try encoder.encode(Header(kid: keyId)))
        let claims = Base64URL.encode(try encoder.encode(Claims(iss: issuerId, iat: issued, exp: issued + Int64(tokenLifetime), bid: bundleId)))
        let input = "\(header).\(claims)"
        let signature = try privateKey.signature(for: Data(input.utf8))
        return "\(input).\(Base64URL.encode(signature.rawRepresentation))"
    }
}

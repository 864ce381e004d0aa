import AppleSignedData
import Crypto
import Domain
import Foundation

/// Signs a tenant's answers with its ES256 key (``AnswerSigningSettings``): what the app checks is
/// ``signedText(_:)``, the signature is the raw 64-byte r‖s form (what WebCrypto and CryptoKit
/// verify directly), base64url without padding.
public struct AnswerSigner: Sendable {
    /// The first line of every signed text: the format's version.
    public static let format = "berth-answer-v1"

    public let keyId: String
    private let key: P256.Signing.PrivateKey

    public init(keyId: String, key: P256.Signing.PrivateKey) {
        self.keyId = keyId
        self.key = key
    }

    /// Loads the tenant's key from its variable (or the file its variable names). A tenant that
    /// asked for signed answers does not start without its key: apps that pinned it would refuse
    /// every unsigned answer.
    public static func load(_ settings: AnswerSigningSettings, tenant: String, environment: [String: String]) throws -> AnswerSigner {
        let pem: String
        if let written = settings.testPrivateKeyPEM {
            pem = written
        } else if let name = settings.privateKeyEnv {
            guard let value = environment[name], !value.isEmpty else {
                throw ConfigurationError(
                    "tenant \(tenant) signs its answers: set \(name) to the PEM private key (P-256) of answerSigning.keyId \(settings.keyId)"
                )
            }
            pem = value
        } else if let name = settings.privateKeyFileEnv {
            guard let path = environment[name], !path.isEmpty else {
                throw ConfigurationError(
                    "tenant \(tenant) signs its answers: set \(name) to the file of the PEM private key (P-256) of answerSigning.keyId \(settings.keyId)"
                )
            }
            do {
                pem = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ConfigurationError(
                    "tenant \(tenant): the answer-signing key file \(path) (from \(name)) cannot be read: \(error.localizedDescription)"
                )
            }
        } else {
            throw ConfigurationError("tenant \(tenant): answerSigning names no key variable")
        }
        do {
            return AnswerSigner(keyId: settings.keyId, key: try P256.Signing.PrivateKey(pemRepresentation: pem))
        } catch {
            throw ConfigurationError(
                "tenant \(tenant): the answer-signing key is not a PEM P-256 private key (openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt makes one)"
            )
        }
    }

    /// What one answer's signature covers.
    public struct Answer: Sendable, Hashable {
        /// The request's `X-Berth-Nonce` ("" when it sent none).
        public var nonce: String
        /// When Berth signed, in milliseconds since 1970 (`X-Berth-Signed-At`).
        public var signedAt: Int64
        /// The answer's HTTP status.
        public var status: Int
        public var method: String
        /// The request's path as Berth received it, without the query.
        public var path: String
        /// The user the answer is about ("" when the caller named none).
        public var userId: String
        /// The answer's body, byte for byte.
        public var body: Data

        public init(nonce: String, signedAt: Int64, status: Int, method: String, path: String, userId: String, body: Data) {
            self.nonce = nonce
            self.signedAt = signedAt
            self.status = status
            self.method = method
            self.path = path
            self.userId = userId
            self.body = body
        }
    }

    /// The lines the signature covers, joined by `\n`: the format, the key id, the nonce, the
    /// signing time, the status, `METHOD path`, the user id and the base64url SHA-256 of the body.
    /// Nonce and user id are checked by the caller to be free of line breaks.
    public func signedText(_ answer: Answer) -> String {
        [
            Self.format, keyId, answer.nonce, String(answer.signedAt), String(answer.status), "\(answer.method) \(answer.path)", answer.userId,
            Base64URL.encode(Data(SHA256.hash(data: answer.body))),
        ].joined(separator: "\n")
    }

    /// The signature of an answer: base64url of r‖s.
    public func signature(_ answer: Answer) throws -> String {
        Base64URL.encode(try key.signature(for: Data(signedText(answer).utf8)).rawRepresentation)
    }

    public var publicKey: P256.Signing.PublicKey { key.publicKey }

    /// The public key as SubjectPublicKeyInfo DER, base64 (what WebCrypto's `importKey("spki")`
    /// and CryptoKit's `derRepresentation` take).
    public var publicKeySPKI: String { key.publicKey.derRepresentation.base64EncodedString() }

    /// The public key as a JWK's coordinates (base64url, 32 bytes each).
    public var publicKeyCoordinates: (x: String, y: String) {
        let point = key.publicKey.x963Representation  // 0x04 ‖ X ‖ Y
        let x = point.dropFirst().prefix(32), y = point.dropFirst(33)
        return (Base64URL.encode(x), Base64URL.encode(y))
    }

    /// The public key as PEM.
    public var publicKeyPEM: String { key.publicKey.pemRepresentation }
}

import Crypto
import Foundation
import _CryptoExtras

/// A Google service account's JSON key, as the Cloud console downloads it (only the members Berth
/// reads). Its RSA private key signs the OAuth2 JWT-bearer assertions that buy access tokens.
public struct ServiceAccount: Sendable {
    public var clientEmail: String
    public var privateKeyId: String?
    /// Where access tokens are bought (`https://oauth2.googleapis.com/token`).
    public var tokenURI: String
    public var projectId: String?
    public let privateKey: _RSA.Signing.PrivateKey

    struct File: Decodable {
        var type: String?
        var client_email: String?
        var private_key: String?
        var private_key_id: String?
        var token_uri: String?
        var project_id: String?
    }

    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    public init(
        clientEmail: String,
        privateKeyId: String?,
        tokenURI: String = ServiceAccount.defaultTokenURI,
        projectId: String? = nil,
        privateKey: _RSA.Signing.PrivateKey
    ) {
        self.clientEmail = clientEmail
        self.privateKeyId = privateKeyId
        self.tokenURI = tokenURI
        self.projectId = projectId
        self.privateKey = privateKey
    }

    /// Reads a service-account JSON key. Throws ``PlayError`` naming what is missing (never the key itself).
    public init(json: Data) throws(PlayError) {
        let file: File
        do { file = try JSONDecoder().decode(File.self, from: json) } catch {
            throw PlayError(status: nil, reason: "service_account", message: "the service account key is not JSON")
        }
        guard file.type == nil || file.type == "service_account" else {
            throw PlayError(status: nil, reason: "service_account", message: "the key is of type \(file.type ?? ""), not service_account")
        }
        guard let email = file.client_email, !email.isEmpty, let pem = file.private_key, !pem.isEmpty else {
            throw PlayError(status: nil, reason: "service_account", message: "the service account key lacks client_email or private_key")
        }
        let key: _RSA.Signing.PrivateKey
        do { key = try _RSA.Signing.PrivateKey(pemRepresentation: pem) } catch {
            throw PlayError(status: nil, reason: "service_account", message: "the service account's private_key is not an RSA key in PEM")
        }
        self.init(
            clientEmail: email,
            privateKeyId: file.private_key_id,
            tokenURI: file.token_uri ?? Self.defaultTokenURI,
            projectId: file.project_id,
            privateKey: key
        )
    }

    /// The JSON key file for this account (what `berth testkit play init` writes).
    public func json() -> Data {
        let object: [String: String] = [
            "type": "service_account", "project_id": projectId ?? "", "private_key_id": privateKeyId ?? "",
            "private_key": privateKey.pkcs8PEMRepresentation,
            "client_email": clientEmail, "token_uri": tokenURI,
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(object)) ?? Data()
    }
}

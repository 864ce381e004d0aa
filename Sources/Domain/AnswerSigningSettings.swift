/// Where a tenant's answer-signing key comes from: an ES256 (P-256) private key, never the catalog.
/// The app pins the public half (published at `GET /api/answer-signing/{tenant}`) by its id.
public struct AnswerSigningSettings: Codable, Hashable, Sendable {
    /// The id the app pins the key under (`X-Berth-Key-Id`): 1 to 64 letters, digits, `.`, `_` or `-`.
    public var keyId: String
    /// A variable holding the PEM private key (PKCS #8 or SEC 1).
    public var privateKeyEnv: String?
    /// A variable naming a file that holds it.
    public var privateKeyFileEnv: String?
    /// The PEM key written in the catalog itself: for test tenants only (everyone who reads the
    /// catalog can sign as it), refused for a tenant that accepts Production purchases. The shipped
    /// `seaboo-test` and `aistylist-test` use one so that a client pinning their key can be tried
    /// without setting anything; a real app's key comes from `privateKeyEnv` or `privateKeyFileEnv`.
    public var testPrivateKeyPEM: String?

    public init(keyId: String, privateKeyEnv: String? = nil, privateKeyFileEnv: String? = nil, testPrivateKeyPEM: String? = nil) {
        self.keyId = keyId
        self.privateKeyEnv = privateKeyEnv
        self.privateKeyFileEnv = privateKeyFileEnv
        self.testPrivateKeyPEM = testPrivateKeyPEM
    }

    /// Whether a key id is one the header and the signed text carry unambiguously.
    public static func isValidKeyId(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2E || byte == 0x5F
                    || byte == 0x2D
            }
    }

    /// The settings on their own (the tenant checks that a test key is not used where Production is accepted).
    func validate(tenant: String) throws {
        guard Self.isValidKeyId(keyId) else {
            throw CatalogError("tenant \(tenant): answerSigning.keyId must be 1 to 64 letters, digits, ., _ or -")
        }
        guard [privateKeyEnv, privateKeyFileEnv, testPrivateKeyPEM].count(where: { $0 != nil }) == 1 else {
            throw CatalogError(
                "tenant \(tenant): answerSigning needs exactly one of privateKeyEnv (a variable holding the PEM key) or privateKeyFileEnv (a variable naming its file)"
            )
        }
    }
}

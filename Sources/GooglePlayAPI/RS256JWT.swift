import Crypto
import Foundation
import _CryptoExtras

/// Compact RS256 JSON Web Tokens: what a service account signs to buy an access token, and what
/// Pub/Sub's push tokens are (Google signs those; the Play stand-in signs its own).
public enum RS256JWT {
    /// Signs `claims` (a JSON object) with `key`, naming `kid` in the header.
    public static func sign(claims: [String: JSONValue], kid: String?, key: _RSA.Signing.PrivateKey) throws -> String {
        var header: [String: JSONValue] = ["alg": .string("RS256"), "typ": .string("JWT")]
        if let kid { header["kid"] = .string(kid) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let signingInput = Base64URL.encode(try encoder.encode(header)) + "." + Base64URL.encode(try encoder.encode(claims))
        let signature = try key.signature(for: SHA256.hash(data: Data(signingInput.utf8)), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// A token's parts, not yet verified: header and claims decoded, and the signed bytes.
    public struct Parts: Sendable {
        public var header: [String: JSONValue]
        public var claims: [String: JSONValue]
        public var signingInput: Data
        public var signature: Data

        public var kid: String? { header["kid"]?.string }

        /// Whether `key` made the signature (RS256 only: the header's `alg` must say so).
        public func verified(by key: _RSA.Signing.PublicKey) -> Bool {
            guard header["alg"]?.string == "RS256" else { return false }
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: SHA256.hash(data: signingInput),
                padding: .insecurePKCS1v1_5
            )
        }
    }

    /// Splits and decodes a compact JWT (at most 16 KiB); nil when it is not one.
    public static func parts(_ token: String) -> Parts? {
        guard token.utf8.count <= 16_384 else { return nil }
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 3, let headerData = Base64URL.decode(pieces[0]), let claimsData = Base64URL.decode(pieces[1]),
            let signature = Base64URL.decode(pieces[2]),
            case .object(let header)? = try? JSONDecoder().decode(JSONValue.self, from: headerData),
            case .object(let claims)? = try? JSONDecoder().decode(JSONValue.self, from: claimsData)
        else { return nil }
        return Parts(header: header, claims: claims, signingInput: Data("\(pieces[0]).\(pieces[1])".utf8), signature: signature)
    }
}

/// Base64url without padding (RFC 7515).
public enum Base64URL {
    public static func encode(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "=",
            with: ""
        )
    }

    public static func decode(_ text: some StringProtocol) -> Data? {
        guard text.utf8.allSatisfy({ $0.isBase64URL }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = base64.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { base64 += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: base64)
    }
}

extension UInt8 {
    fileprivate var isBase64URL: Bool {
        (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) || (0x30...0x39).contains(self) || self == 0x2D || self == 0x5F
    }
}

/// Any JSON value (the claims of a token, the free-form parts of Google's answers).
public enum JSONValue: Codable, Hashable, Sendable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case object([String: JSONValue])
    case array([JSONValue])
    case null

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 9e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .bool(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }

    public var string: String? { if case .string(let value) = self { value } else { nil } }
    public var number: Double? { if case .number(let value) = self { value } else { nil } }
    public var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
}

extension JSONValue: ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(elements, uniquingKeysWith: { $1 })) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

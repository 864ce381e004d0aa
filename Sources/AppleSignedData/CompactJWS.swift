import Foundation

/// A compact JWS split into its parts, with nothing verified yet.
struct CompactJWS {
    struct Header: Decodable {
        var alg: String?
        var x5c: [String]?
    }

    let header: Header
    let payload: Data
    let signature: Data
    /// `base64url(header) "." base64url(payload)`: the bytes the signature covers.
    let signingInput: Substring.UTF8View

    init(_ text: String) throws(SignedDataError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw SignedDataError(.malformed, "a compact JWS has 3 dot-separated parts, found \(parts.count)")
        }
        guard let headerBytes = Base64URL.decode(parts[0]) else {
            throw SignedDataError(.malformed, "JWS header is not base64url")
        }
        guard let payload = Base64URL.decode(parts[1]), !payload.isEmpty else {
            throw SignedDataError(.malformed, "JWS payload is not base64url")
        }
        guard let signature = Base64URL.decode(parts[2]) else {
            throw SignedDataError(.malformed, "JWS signature is not base64url")
        }
        do {
            header = try JSONDecoder().decode(Header.self, from: headerBytes)
        } catch {
            throw SignedDataError(.malformed, "JWS header is not a JSON object with string alg and x5c")
        }
        self.payload = payload
        self.signature = signature
        let end = parts[1].endIndex
        signingInput = trimmed[trimmed.startIndex..<end].utf8
    }
}

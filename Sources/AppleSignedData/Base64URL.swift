import Foundation

/// base64url (RFC 4648 §5) without padding, as used by compact JWS.
enum Base64URL {
    static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url; refuses padding, whitespace and characters of the standard alphabet.
    static func decode(_ text: Substring) -> Data? {
        var base64 = String()
        base64.reserveCapacity(text.utf8.count + 3)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9": base64.unicodeScalars.append(scalar)
            case "-": base64.append("+")
            case "_": base64.append("/")
            default: return nil
            }
        }
        switch base64.utf8.count % 4 {
        case 0: break
        case 2: base64.append("==")
        case 3: base64.append("=")
        default: return nil
        }
        // Refuse non-canonical encodings (stray bits in the last character): one text, one byte string.
        guard let bytes = Data(base64Encoded: base64), encode(bytes) == text else { return nil }
        return bytes
    }
}

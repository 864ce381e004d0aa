import Foundation

/// base64url (RFC 4648 §5) without padding, as used by compact JWS.
public enum Base64URL {
    /// Encodes without padding.
    public static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes canonical base64url: no padding, no whitespace, no characters of the standard
    /// alphabet, and no stray bits in the last character (so one text means one byte string).
    public static func decode(_ text: Substring) -> Data? {
        let utf8 = text.utf8
        var base64 = [UInt8]()
        base64.reserveCapacity(utf8.count + 3)
        var lastValue: UInt8 = 0
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): lastValue = byte - UInt8(ascii: "A"); base64.append(byte)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): lastValue = byte - UInt8(ascii: "a") + 26; base64.append(byte)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): lastValue = byte - UInt8(ascii: "0") + 52; base64.append(byte)
            case UInt8(ascii: "-"): lastValue = 62; base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): lastValue = 63; base64.append(UInt8(ascii: "/"))
            default: return nil
            }
        }
        switch base64.count % 4 {
        case 0: break
        case 2:
            guard lastValue & 0b1111 == 0 else { return nil }
            base64.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")])
        case 3:
            guard lastValue & 0b11 == 0 else { return nil }
            base64.append(UInt8(ascii: "="))
        default: return nil
        }
        return Data(base64Encoded: Data(base64))
    }
}

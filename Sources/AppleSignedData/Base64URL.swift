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
    /// One pass over the bytes, six bits at a time (no intermediate copy in the standard alphabet).
    public static func decode(_ text: Substring) -> Data? {
        var text = text
        return text.withUTF8 { decode(bytes: $0) }
    }

    static func decode(bytes: UnsafeBufferPointer<UInt8>) -> Data? {
        guard bytes.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(bytes.count / 4 * 3 + 2)
        var pending: UInt32 = 0  // bits read but not yet written, in the low `bits` bits
        var bits = 0
        for byte in bytes {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte &- UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte &- UInt8(ascii: "a") &+ 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte &- UInt8(ascii: "0") &+ 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            pending = (pending << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: pending >> UInt32(bits)))
                pending &= (1 << UInt32(bits)) - 1
            }
        }
        // 2 or 4 bits left over (a text of 3 or 2 characters mod 4) must be zero: canonical only.
        guard pending == 0 else { return nil }
        return Data(output)
    }
}

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

    /// Each byte's six-bit value in the base64url alphabet; 0xFF for every other byte.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

    /// Four characters (24 bits) to three bytes at a time through a table, into the answer's own
    /// storage (a character at a time with a switch and an append was 4 % of a notification's CPU).
    static func decode(bytes: UnsafeBufferPointer<UInt8>) -> Data? {
        let count = bytes.count
        let rest = count % 4
        guard rest != 1 else { return nil }
        let whole = count / 4
        var output = Data(count: whole * 3 + (rest == 0 ? 0 : rest - 1))
        let valid = values.withUnsafeBufferPointer { table in
            output.withUnsafeMutableBytes { (out: UnsafeMutableRawBufferPointer) -> Bool in
                var input = 0
                var written = 0
                for _ in 0..<whole {
                    let a = table[Int(bytes[input])], b = table[Int(bytes[input + 1])]
                    let c = table[Int(bytes[input + 2])], d = table[Int(bytes[input + 3])]
                    guard (a | b | c | d) & 0x80 == 0 else { return false }
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[written] = UInt8(truncatingIfNeeded: group >> 16)
                    out[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    out[written + 2] = UInt8(truncatingIfNeeded: group)
                    input += 4
                    written += 3
                }
                switch rest {
                case 2:
                    let a = table[Int(bytes[input])], b = table[Int(bytes[input + 1])]
                    // 12 bits for one byte: the last 4 must be zero (canonical only).
                    guard (a | b) & 0x80 == 0, b & 0x0F == 0 else { return false }
                    out[written] = a << 2 | b >> 4
                case 3:
                    let a = table[Int(bytes[input])], b = table[Int(bytes[input + 1])], c = table[Int(bytes[input + 2])]
                    // 18 bits for two bytes: the last 2 must be zero.
                    guard (a | b | c) & 0x80 == 0, c & 0x03 == 0 else { return false }
                    out[written] = a << 2 | b >> 4
                    out[written + 1] = (b & 0x0F) << 4 | c >> 2
                default:
                    break
                }
                return true
            }
        }
        return valid ? output : nil
    }
}

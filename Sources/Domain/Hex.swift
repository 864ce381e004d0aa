import Foundation

extension Sequence where Element == UInt8 {
    /// Lower-case hexadecimal, two digits per byte: the one form in which Berth writes digests
    /// (SHA-256 of proofs, keys and migrations; HMAC signatures).
    public var hexString: String {
        var text = ""
        text.reserveCapacity(64)
        for byte in self {
            text.append(Self.digits[Int(byte >> 4)])
            text.append(Self.digits[Int(byte & 0x0f)])
        }
        return text
    }

    private static var digits: [Character] { ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"] }
}

import Foundation

/// The JSON of signed data is read only if every object in it names each member once (RFC 7515
/// §5.2 and RFC 8259 leave duplicates to the parser; Foundation keeps one value, another parser
/// another, so a signed payload with a duplicate key could be checked on one value and shown or
/// stored with the other). Also bounds nesting. A scanner over the bytes: no allocation per value,
/// no recursion beyond `maximumDepth`, nothing that can trap on any input.
public enum StrictJSON {
    public static let maximumDepth = 32

    public enum Problem: Error, Equatable, Sendable {
        case malformed
        case duplicateKey
        case tooDeep
    }

    /// Throws when `data` is not one JSON value, names a member twice in an object, or nests
    /// deeper than `maximumDepth`.
    public static func check(_ data: Data) throws(Problem) {
        let problem: Problem? = data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Problem? in
            var scanner = Scanner(bytes: raw.bindMemory(to: UInt8.self))
            do throws(Problem) {
                scanner.skipSpace()
                try scanner.value(depth: 0)
                scanner.skipSpace()
                return scanner.index == scanner.bytes.count ? nil : .malformed
            } catch {
                return error
            }
        }
        if let problem { throw problem }
    }

    /// A member name as a run of the input (no escapes) or its decoded bytes, with their hash.
    struct Name {
        var raw: Range<Int>
        var decoded: [UInt8]?
        var hash: Int

        init(raw: Range<Int>, decoded: [UInt8]?, in bytes: UnsafeBufferPointer<UInt8>) {
            self.raw = raw
            self.decoded = decoded
            var hasher = Hasher()
            if let decoded {
                decoded.withUnsafeBytes { hasher.combine(bytes: $0) }
            } else {
                hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[raw])))
            }
            hash = hasher.finalize()
        }

        func bytes(in input: UnsafeBufferPointer<UInt8>) -> [UInt8] {
            decoded ?? Array(input[raw])
        }
    }

    struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func expect(_ byte: UInt8) throws(Problem) {
            guard current == byte else { throw .malformed }
            index += 1
        }

        mutating func value(depth: Int) throws(Problem) {
            guard depth < StrictJSON.maximumDepth else { throw .tooDeep }
            switch current {
            case UInt8(ascii: "{"): try object(depth: depth)
            case UInt8(ascii: "["): try array(depth: depth)
            case UInt8(ascii: "\""): _ = try string(decoding: false)
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case let byte? where byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte): try number()
            default: throw .malformed
            }
        }

        mutating func object(depth: Int) throws(Problem) {
            try expect(UInt8(ascii: "{"))
            skipSpace()
            if current == UInt8(ascii: "}") {
                index += 1
                return
            }
            var names: [Name] = []
            while true {
                skipSpace()
                let name = try key()
                for earlier in names where earlier.hash == name.hash && earlier.bytes(in: bytes).elementsEqual(name.bytes(in: bytes)) {
                    throw .duplicateKey
                }
                names.append(name)
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                try value(depth: depth + 1)
                skipSpace()
                if current == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                return
            }
        }

        mutating func array(depth: Int) throws(Problem) {
            try expect(UInt8(ascii: "["))
            skipSpace()
            if current == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                skipSpace()
                try value(depth: depth + 1)
                skipSpace()
                if current == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "]"))
                return
            }
        }

        /// A member name: the raw bytes when it has no escape (no allocation), else decoded, with
        /// the hash of its decoded bytes (so `"a"` and `"\u0061"` are the same name).
        mutating func key() throws(Problem) -> Name {
            let start = index + 1
            var probe = start
            while probe < bytes.count, bytes[probe] != UInt8(ascii: "\""), bytes[probe] != UInt8(ascii: "\\"), bytes[probe] >= 0x20 { probe += 1 }
            if probe < bytes.count, bytes[probe] == UInt8(ascii: "\"") {
                try expect(UInt8(ascii: "\""))
                index = probe + 1
                return Name(raw: start..<probe, decoded: nil, in: bytes)
            }
            return Name(raw: 0..<0, decoded: try string(decoding: true), in: bytes)
        }

        /// A string; its decoded UTF-8 bytes when `decoding` (values are only checked).
        mutating func string(decoding: Bool) throws(Problem) -> [UInt8] {
            try expect(UInt8(ascii: "\""))
            var decoded: [UInt8] = []
            var pendingHigh: UInt32?
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard pendingHigh == nil else { throw .malformed }
                    return decoded
                case UInt8(ascii: "\\"):
                    guard let escape = current else { throw .malformed }
                    index += 1
                    if escape == UInt8(ascii: "u") {
                        let unit = try hex4()
                        if let high = pendingHigh {
                            guard (0xDC00...0xDFFF).contains(unit) else { throw .malformed }
                            pendingHigh = nil
                            if decoding { append(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00), to: &decoded) }
                        } else if (0xD800...0xDBFF).contains(unit) {
                            pendingHigh = unit
                        } else {
                            guard !(0xDC00...0xDFFF).contains(unit) else { throw .malformed }
                            if decoding { append(unit, to: &decoded) }
                        }
                        continue
                    }
                    guard pendingHigh == nil else { throw .malformed }
                    let plain: UInt8
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): plain = escape
                    case UInt8(ascii: "b"): plain = 0x08
                    case UInt8(ascii: "f"): plain = 0x0C
                    case UInt8(ascii: "n"): plain = 0x0A
                    case UInt8(ascii: "r"): plain = 0x0D
                    case UInt8(ascii: "t"): plain = 0x09
                    default: throw .malformed
                    }
                    if decoding { decoded.append(plain) }
                case 0x00..<0x20:
                    throw .malformed
                default:
                    guard pendingHigh == nil else { throw .malformed }
                    if decoding { decoded.append(byte) }
                }
            }
            throw .malformed
        }

        mutating func hex4() throws(Problem) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = current else { throw .malformed }
                index += 1
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a")) + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A")) + 10
                default: throw .malformed
                }
                value = value << 4 | digit
            }
            return value
        }

        func append(_ scalar: UInt32, to bytes: inout [UInt8]) {
            guard let scalar = Unicode.Scalar(scalar) else { return }
            bytes.append(contentsOf: Array(String(Character(scalar)).utf8))
        }

        mutating func literal(_ word: StaticString) throws(Problem) {
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            for byte in expected {
                guard current == byte else { throw .malformed }
                index += 1
            }
        }

        mutating func number() throws(Problem) {
            let start = index
            while let byte = current,
                byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            {
                index += 1
            }
            guard index > start else { throw .malformed }
        }
    }
}

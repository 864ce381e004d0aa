import Foundation

/// One web origin a tenant's app calls Berth from (CORS): `scheme://host` or `scheme://host:port`
/// exactly, or `scheme://host:*` for any port (development servers). Never `*`, never a path.
/// Compared with a browser's `Origin` header: scheme and host in lowercase, the port as written
/// (a browser leaves out a scheme's default port, and so must the catalog).
public struct AllowedOrigin: Hashable, Sendable, CustomStringConvertible {
    public var scheme: String
    public var host: String
    /// nil: no port; `anyPort`: any port, or none.
    public var port: Port

    public enum Port: Hashable, Sendable {
        case none
        case number(Int)
        case any
    }

    /// The origin `text` names, or nil when it is not one (a path, a query, `*`, `null`, no host).
    public init?(_ text: String) {
        guard let separator = text.range(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        let rest = text[separator.upperBound...].lowercased()
        guard !scheme.isEmpty, scheme.utf8.allSatisfy({ Self.isSchemeByte($0) }), let first = scheme.utf8.first, Self.isLetter(first) else {
            return nil
        }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("?"), !rest.contains("#"), !rest.contains("@") else { return nil }
        var host = Substring(rest)
        var port = Port.none
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            let digits = rest[rest.index(after: colon)...]
            host = rest[..<colon]
            if digits == "*" {
                port = .any
            } else {
                guard !digits.isEmpty, digits.count <= 5, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(digits),
                    (1...65535).contains(number)
                else {
                    return nil
                }
                port = .number(number)
            }
        }
        guard !host.isEmpty, host != "*", host.utf8.allSatisfy({ Self.isHostByte($0) }) else { return nil }
        self.scheme = scheme
        self.host = String(host)
        self.port = port
    }

    /// Whether a browser's `Origin` header value is this origin.
    public func matches(_ origin: String) -> Bool {
        guard let other = AllowedOrigin(origin), other.port != .any else { return false }
        guard other.scheme == scheme, other.host == host else { return false }
        switch port {
        case .any: return true
        case .none, .number: return other.port == port
        }
    }

    public var description: String {
        switch port {
        case .none: "\(scheme)://\(host)"
        case .number(let number): "\(scheme)://\(host):\(number)"
        case .any: "\(scheme)://\(host):*"
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) }
    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2B || byte == 0x2D || byte == 0x2E
    }
    private static func isHostByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E || byte == 0x5B || byte == 0x5D || byte == 0x3A
    }
}

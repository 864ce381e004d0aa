import Crypto
import Foundation

/// Stripe's webhook signature: the header `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`,
/// each `v1` the hex HMAC-SHA256 of "<t>.<raw body>" under an endpoint secret (several `v1` while a
/// secret is rolled). Verified on the raw bytes, before any JSON is decoded.
public enum StripeSignature {
    /// How old (or, against clock skew, how far in the future) a signature's timestamp may be: Stripe's
    /// libraries' default.
    public static let defaultTolerance: TimeInterval = 300
    /// Longer headers are refused before they are parsed.
    public static let maximumHeaderLength = 4096

    /// Why a signature was refused (stable codes).
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public enum Code: String, Sendable {
            case missingHeader = "missing_signature"
            case malformedHeader = "malformed_signature"
            case noMatch = "signature_mismatch"
            case stale = "signature_stale"
        }
        public var code: Code
        public var message: String
        public var description: String { "\(code.rawValue): \(message)" }
    }

    /// The hex HMAC-SHA256 of "<timestamp>.<payload>" under `secret`.
    public static func signature(payload: some DataProtocol, secret: String, timestamp: Int64) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        hmac.update(data: Data("\(timestamp).".utf8))
        hmac.update(data: Data(payload))
        return Data(hmac.finalize()).map { byte in String(format: "%02x", byte) }.joined()
    }

    /// A `Stripe-Signature` header for `payload`: one `v1` per secret (as during a roll).
    public static func header(payload: some DataProtocol, secrets: [String], timestamp: Int64) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + signature(payload: payload, secret: $0, timestamp: timestamp) }).joined(separator: ",")
    }

    /// Checks `header` over `payload` against every secret; returns the signed timestamp.
    @discardableResult
    public static func verify(
        payload: Data,
        header: String?,
        secrets: [String],
        now: Date,
        tolerance: TimeInterval = defaultTolerance
    ) throws(Failure) -> Int64 {
        guard let header, !header.isEmpty else { throw Failure(code: .missingHeader, message: "no Stripe-Signature header") }
        guard header.utf8.count <= maximumHeaderLength else {
            throw Failure(code: .malformedHeader, message: "the Stripe-Signature header is too long")
        }
        var timestamp: Int64?
        var candidates: [[UInt8]] = []
        for item in header.split(separator: ",", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let key = parts[0].trimmingCharacters(in: .whitespaces), value = parts[1].trimmingCharacters(in: .whitespaces)
            switch key {
            case "t":
                guard value.utf8.count <= 12, value.allSatisfy(\.isASCIIDigit), let seconds = Int64(value) else {
                    throw Failure(code: .malformedHeader, message: "the signature's timestamp is not a number of seconds")
                }
                timestamp = seconds
            case "v1":
                // Other schemes (v0 test signatures) are ignored, as Stripe's libraries do.
                if let bytes = hexBytes(value), bytes.count == 32, candidates.count < 16 { candidates.append(bytes) }
            default:
                continue
            }
        }
        guard let timestamp else { throw Failure(code: .malformedHeader, message: "the Stripe-Signature header has no timestamp") }
        guard !candidates.isEmpty else { throw Failure(code: .malformedHeader, message: "the Stripe-Signature header has no v1 signature") }
        var matched = false
        for secret in secrets where !secret.isEmpty {
            var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
            hmac.update(data: Data("\(timestamp).".utf8))
            hmac.update(data: payload)
            let expected = Array(hmac.finalize())
            for candidate in candidates where constantTimeEqual(candidate, expected) { matched = true }
        }
        guard matched else { throw Failure(code: .noMatch, message: "no v1 signature matches a configured webhook secret") }
        let age = now.timeIntervalSince1970 - TimeInterval(timestamp)
        guard abs(age) <= tolerance else {
            throw Failure(code: .stale, message: "the signature's timestamp is \(Int(age)) s from now; at most \(Int(tolerance)) s are accepted")
        }
        return timestamp
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, digits.count <= 128 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

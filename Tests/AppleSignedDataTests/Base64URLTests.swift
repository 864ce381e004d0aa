import Foundation
import Testing

@testable import AppleSignedData

@Suite("Base64URL: canonical decoding only")
struct Base64URLTests {
    /// Foundation's decoder, given the standard alphabet with padding: the reference for valid texts.
    static func reference(_ text: String) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard)
    }

    @Test("every byte string of lengths 0 to 70 round-trips, and decodes as Foundation decodes it")
    func roundTrips() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...70 {
            for _ in 0..<20 {
                let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
                let text = Base64URL.encode(bytes)
                #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
                #expect(Base64URL.decode(text[...]) == bytes, "\(text)")
                #expect(Self.reference(text) == bytes)
            }
        }
    }

    @Test("padding, the standard alphabet, whitespace, a lone last character and stray bits are refused")
    func refusals() {
        #expect(Base64URL.decode(""[...]) == Data())
        #expect(Base64URL.decode("QQ"[...]) == Data("A".utf8))
        #expect(Base64URL.decode("QUI"[...]) == Data("AB".utf8))
        #expect(Base64URL.decode("QUJD"[...]) == Data("ABC".utf8))
        for text in ["QQ==", "QUI=", "a+b/", "QU JD", "QUJD\n", "Q", "QUJDR", "QR", "QUJ", "é", "QU\u{0}D"] {
            #expect(Base64URL.decode(text[...]) == nil, "\(text.debugDescription) must be refused")
        }
        // "QR" and "QUJ" carry non-zero bits past the last byte: another text for the same bytes.
        #expect(Self.reference("QR") == Data("A".utf8), "Foundation is lenient where Berth is not")
    }

    @Test("a slice of a larger string decodes only its own characters")
    func substrings() {
        let jws = "eyJhbGciOiJFUzI1NiJ9.QUJD.c2ln"
        let parts = jws.split(separator: ".")
        #expect(Base64URL.decode(parts[1]) == Data("ABC".utf8))
        #expect(Base64URL.decode(parts[2]) == Data("sig".utf8))
    }
}

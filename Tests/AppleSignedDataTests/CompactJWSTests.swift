import Foundation
import Testing

@testable import AppleSignedData

@Suite("Compact JWS: split into three parts on its dots")
struct CompactJWSTests {
    @Test("three parts split where the dots are, surrounding whitespace ignored; the signing input is header.payload")
    func splitsOnDots() throws {
        let jws = try CompactJWS("  eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.AQID\n")
        #expect(jws.headerSegment == "eyJhbGciOiJFUzI1NiJ9")
        #expect(jws.signingInput == "eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ")
        #expect(String(decoding: jws.payload, as: UTF8.self) == #"{"a":1}"#)
        #expect(jws.signature == Data([1, 2, 3]))
    }

    @Test("any other number of parts is malformed, and says how many it found", arguments: ["a", "a.b", "a.b.c.d", "a.b.c.d.e", "..", ""])
    func otherPartCounts(_ text: String) {
        #expect(throws: SignedDataError.self) { try CompactJWS(text) }
        do {
            _ = try CompactJWS(text)
        } catch {
            let dots = text.filter { $0 == "." }.count
            let found = text.isEmpty ? 1 : min(dots, 3) + 1
            if dots != 2 { #expect("\(error)".contains("found \(found)"), "\(error)") }
        }
    }

    @Test("a string that is not contiguous UTF-8 (bridged) splits the same")
    func nonContiguous() throws {
        let native = "eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.AQID"
        let bridged = String(NSString(string: native))
        #expect(try CompactJWS(bridged).signingInput == CompactJWS(native).signingInput)
    }
}

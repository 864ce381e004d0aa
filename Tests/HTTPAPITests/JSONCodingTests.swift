import Foundation
import Testing

@testable import HTTPAPI

@Suite("JSONCoding: the null scan")
struct JSONCodingTests {
    @Test(
        "holdsNull finds the token null anywhere, and nothing else",
        arguments: [
            ("null", true), (#"{"a":null}"#, true), (#"{"a":1,"b":null"#, true), (#"{"nul":"nu","n":"l"}"#, false),
            ("nul", false), ("", false), ("n", false), ("nnull", true), (#"{"a":"nulL"}"#, false), ("xxxnul", false),
        ]
    )
    func holdsNull(_ text: String, _ expected: Bool) {
        #expect(JSONCoding.holdsNull(Data(text.utf8)) == expected)
        // The same as Foundation's search, on every case.
        #expect(JSONCoding.holdsNull(Data(text.utf8)) == (Data(text.utf8).range(of: Data("null".utf8)) != nil))
    }
}

import Foundation
import StripeAPI
import Testing

/// Berth's check of `Stripe-Signature` against vectors made by Stripe's own Python library
/// (Tests/Fixtures/stripe-signatures.json), and the refusals around it.
@Suite("Stripe signatures")
struct StripeSignatureTests {
    struct Vectors: Decodable {
        struct Vector: Decodable {
            var payload: String
            var secret: String
            var timestamp: Int64
            var header: String
        }
        var vectors: [Vector]
    }

    static func vectors() throws -> [Vectors.Vector] {
        try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: Harness.fixture("stripe-signatures.json"))).vectors
    }

    @Test("headers signed by stripe-python verify, and Berth signs the same bytes the same way")
    func goldenVectors() throws {
        let vectors = try Self.vectors()
        #expect(vectors.count == 3)
        for vector in vectors {
            let at = Date(timeIntervalSince1970: TimeInterval(vector.timestamp))
            #expect(
                try StripeSignature.verify(
                    payload: Data(vector.payload.utf8),
                    header: vector.header,
                    secrets: ["whsec_other", vector.secret],
                    now: at
                ) == vector.timestamp
            )
            #expect(
                StripeSignature.header(payload: Data(vector.payload.utf8), secrets: [vector.secret], timestamp: vector.timestamp) == vector.header
            )
        }
    }

    @Test("refused: another secret, a changed byte, outside the tolerance either way, no timestamp, no v1, junk")
    func refusals() throws {
        let vector = try #require(try Self.vectors().first)
        let at = Date(timeIntervalSince1970: TimeInterval(vector.timestamp))
        let payload = Data(vector.payload.utf8)
        func code(_ payload: Data, _ header: String?, secrets: [String]? = nil, now: Date? = nil) -> StripeSignature.Failure.Code? {
            do {
                try StripeSignature.verify(payload: payload, header: header, secrets: secrets ?? [vector.secret], now: now ?? at)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code(payload, vector.header) == nil)
        #expect(code(payload, vector.header, secrets: ["whsec_other"]) == .noMatch)
        #expect(code(Data((vector.payload + " ").utf8), vector.header) == .noMatch)
        #expect(code(payload, vector.header, now: at.addingTimeInterval(301)) == .stale)
        #expect(code(payload, vector.header, now: at.addingTimeInterval(-301)) == .stale)
        #expect(code(payload, vector.header, now: at.addingTimeInterval(299)) == nil)
        #expect(code(payload, nil) == .missingHeader)
        #expect(code(payload, String(vector.header.drop { $0 != "," }.dropFirst())) == .malformedHeader)
        #expect(code(payload, "t=\(vector.timestamp)") == .malformedHeader)
        #expect(code(payload, "t=abc,v1=00") == .malformedHeader)
        #expect(code(payload, "t=99999999999999999999,v1=00") == .malformedHeader)
        #expect(code(payload, String(repeating: "v1=00,", count: 1000)) == .malformedHeader)
        // A v0 (test) signature alone does not count; a second v1 beside a good one does not hurt.
        #expect(code(payload, vector.header.replacingOccurrences(of: "v1=", with: "v0=")) == .malformedHeader)
        #expect(code(payload, vector.header + ",v1=" + String(repeating: "0", count: 64)) == nil)
    }
}

import AppleSignedData
import Foundation
import Testing

@Suite("Legacy app receipts (PKCS#7), genuine Apple samples")
struct ReceiptTests {
    struct Sample: Sendable, CustomStringConvertible {
        var file: String
        var bundleId: String
        var version: String
        var entries: Int
        var digest: String
        var created: String
        var description: String { file }
    }

    static let samples = [
        Sample(
            file: "receipt-production-2015-sha1.b64",
            bundleId: "com.mustafadur.Kargotakip",
            version: "1.1.2",
            entries: 0,
            digest: "SHA-1",
            created: "2015-09-16T19:48:24Z"
        ),
        Sample(
            file: "receipt-sandbox-2016-nine-purchases.b64",
            bundleId: "com.whalerock.golfwang",
            version: "1.4",
            entries: 9,
            digest: "SHA-1",
            created: "2016-08-27T06:06:32Z"
        ),
        Sample(
            file: "receipt-production-2024-sha256.b64",
            bundleId: "org.getpure.pure-iphone",
            version: "15741",
            entries: 4,
            digest: "SHA-256",
            created: "2024-02-23T17:27:16Z"
        ),
    ]

    @Test("each genuine receipt verifies offline with the bundled Apple Inc. root at its creation date", arguments: samples)
    func verifies(sample: Sample) async throws {
        let verified = try await ReceiptVerifier.apple().verify(base64: try Fixture.text(sample.file), expecting: .inspectOnly)
        #expect(verified.receipt.bundleId == sample.bundleId)
        #expect(verified.receipt.applicationVersion == sample.version)
        #expect(verified.receipt.inAppPurchases.count == sample.entries)
        #expect(verified.digestAlgorithm == sample.digest)
        #expect(verified.receipt.creationDate?.date == (try Date(sample.created, strategy: .iso8601)))
        #expect(verified.sha256.count == 64)
        #expect(verified.trust == .chain(rootFingerprint: "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024"))
        for entry in verified.receipt.inAppPurchases {
            #expect(entry.productId?.isEmpty == false)
            #expect(entry.transactionId?.isEmpty == false)
            #expect(entry.purchaseDate != nil)
        }
    }

    @Test("the sandbox receipt's entries and environment decode")
    func sandboxEntries() async throws {
        let expectations = try AppExpectations(bundleId: "com.whalerock.golfwang", appAppleId: nil, environment: .sandbox)
        let receipt = try await ReceiptVerifier.apple().verify(
            base64: try Fixture.text("receipt-sandbox-2016-nine-purchases.b64"),
            expecting: expectations
        ).receipt
        #expect(receipt.receiptType == "ProductionSandbox")
        #expect(receipt.environment == .sandbox)
        #expect(receipt.inAppPurchases.allSatisfy { $0.quantity == 1 && $0.originalTransactionId != nil })
    }

    @Test("another app, environment or root is refused", arguments: samples)
    func refusals(sample: Sample) async throws {
        let text = try Fixture.text(sample.file)
        let otherApp = try AppExpectations(bundleId: "it.seaboo.app", appAppleId: nil, environment: .sandbox)
        #expect(await rejectionCode { _ = try await ReceiptVerifier.apple().verify(base64: text, expecting: otherApp) } == .wrongBundle)
        let untrusting = ReceiptVerifier(roots: try TrustedRoots.apple())
        #expect(await rejectionCode { _ = try await untrusting.verify(base64: text, expecting: .inspectOnly) } == .untrustedRoot)
    }

    @Test("a flipped byte in the signed content or the signature fails", arguments: samples)
    func flippedBytes(sample: Sample) async throws {
        let bytes = [UInt8](Data(base64Encoded: try Fixture.text(sample.file).filter { !$0.isWhitespace })!)
        let verifier = try ReceiptVerifier.apple()
        // Positions across the blob: the payload sits early, the signature at the end.
        let positions =
            Array(0..<120) + Array(stride(from: 120, to: bytes.count, by: max(1, bytes.count / 400))) + Array(bytes.count - 256..<bytes.count)
        var accepted: [Int] = []
        for position in positions {
            var tampered = bytes
            tampered[position] ^= 0x01
            if (try? await verifier.verify(der: tampered, expecting: .inspectOnly)) != nil { accepted.append(position) }
        }
        #expect(accepted.isEmpty, "accepted after flipping bytes at \(accepted)")
    }

    @Test("malformed receipts are refused as malformed", arguments: ["", "not base64!", "AAAA", "MIIT"])
    func malformed(text: String) async throws {
        #expect(await rejectionCode { _ = try await ReceiptVerifier.apple().verify(base64: text, expecting: .inspectOnly) } == .malformed)
    }

    @Test("a truncated receipt is refused")
    func truncated() async throws {
        let bytes = [UInt8](Data(base64Encoded: try Fixture.text("receipt-production-2024-sha256.b64").filter { !$0.isWhitespace })!)
        #expect(
            await rejectionCode { _ = try await ReceiptVerifier.apple().verify(der: Array(bytes.prefix(bytes.count / 2)), expecting: .inspectOnly) }
                == .malformed
        )
    }
}

import AppleSignedData
import Foundation
import TestKit
import Testing
import X509

/// RSA key generation is slow in debug builds: one receipt CA serves the suite.
private let receiptCA = Result { try TestReceiptCA.generate() }
private let strangerCA = Result { try TestReceiptCA.generate(commonNamePrefix: "Stranger") }

@Suite("Receipt rejections with TestKit receipts")
struct ReceiptRejectionTests {
    let ca: TestReceiptCA
    let verifier: ReceiptVerifier
    let expectations: AppExpectations

    init() throws {
        ca = try receiptCA.get()
        verifier = ReceiptVerifier(roots: ca.trustedRoots)
        expectations = try AppExpectations(bundleId: "it.seaboo.app", appAppleId: nil, environment: .sandbox)
    }

    static let created = Date()

    func receipt(_ type: String = "ProductionSandbox", bundle: String = "it.seaboo.app") -> AppReceipt {
        // A fixed creation time: receipts carry whole seconds, and tests compare two receipt() calls.
        .testReceipt(
            bundleId: bundle,
            productId: "it.seaboo.rental.basic",
            transactionId: "2000000000000777",
            receiptType: type,
            created: Self.created
        )
    }

    @Test("a TestKit receipt round-trips through the verifier, SHA-1 and SHA-256", arguments: [TestReceiptCA.Digest.sha1, .sha256])
    func roundTrip(digest: TestReceiptCA.Digest) async throws {
        let original = receipt()
        let verified = try await verifier.verify(der: try ca.signReceipt(original, digest: digest), expecting: expectations)
        #expect(verified.receipt == original)
        #expect(verified.receipt.inAppPurchases.first?.transactionId == "2000000000000777")
        #expect(verified.digestAlgorithm == (digest == .sha1 ? "SHA-1" : "SHA-256"))
    }

    @Test("a receipt from an untrusted chain is refused")
    func untrustedChain() async throws {
        let der = try strangerCA.get().signReceipt(receipt())
        #expect(await rejectionCode { _ = try await verifier.verify(der: der, expecting: expectations) } == .untrustedRoot)
        // Apple's real root does not vouch for TestKit receipts either.
        #expect(
            await rejectionCode { _ = try await ReceiptVerifier.apple().verify(der: try ca.signReceipt(receipt()), expecting: expectations) }
                == .untrustedRoot
        )
    }

    @Test("a receipt signed by another key is refused")
    func badSignature() async throws {
        let der = try ca.signReceipt(receipt(), signingKey: try strangerCA.get().leafKey)
        #expect(await rejectionCode { _ = try await verifier.verify(der: der, expecting: expectations) } == .badSignature)
    }

    @Test("a receipt for another bundle or environment is refused")
    func wrongApp() async throws {
        #expect(
            await rejectionCode { _ = try await verifier.verify(der: try ca.signReceipt(receipt(bundle: "com.other")), expecting: expectations) }
                == .wrongBundle
        )
        #expect(
            await rejectionCode { _ = try await verifier.verify(der: try ca.signReceipt(receipt("Production")), expecting: expectations) }
                == .wrongEnvironment
        )
    }

    @Test("malformed DER and truncated receipts are refused as malformed")
    func malformed() async throws {
        let der = try ca.signReceipt(receipt())
        #expect(await rejectionCode { _ = try await verifier.verify(der: Array(der.prefix(der.count - 40)), expecting: expectations) } == .malformed)
        #expect(await rejectionCode { _ = try await verifier.verify(der: [0x30, 0x03, 0x02, 0x01, 0x01], expecting: expectations) } == .malformed)
        #expect(await rejectionCode { _ = try await verifier.verify(der: Array(der.dropFirst(4)), expecting: expectations) } == .malformed)
        var undated = receipt()
        undated.creationDate = nil
        #expect(await rejectionCode { _ = try await verifier.verify(der: try ca.signReceipt(undated), expecting: expectations) } == .malformed)
    }

    @Test("an Xcode receipt is refused unless local testing is allowed")
    func xcodeReceipt() async throws {
        let der = try strangerCA.get().signReceipt(receipt("Xcode"))
        #expect(await rejectionCode { _ = try await verifier.verify(der: der, expecting: expectations) } == .wrongEnvironment)
        let allowing = try AppExpectations(bundleId: "it.seaboo.app", appAppleId: nil, environment: .sandbox, allowsLocalTesting: true)
        let verified = try await verifier.verify(der: der, expecting: allowing)
        #expect(verified.trust == .localTesting)
        // Its signature must still hold.
        var tampered = der
        tampered[tampered.count - 3] ^= 0x01
        #expect(await rejectionCode { _ = try await verifier.verify(der: tampered, expecting: allowing) } == .badSignature)
    }

    @Test("a receipt created after its signing certificate expired is refused")
    func expiredSigner() async throws {
        var late = receipt()
        late.creationDate = AppleTimestamp(ca.leaf.notValidAfter.addingTimeInterval(86_400))
        #expect(await rejectionCode { _ = try await verifier.verify(der: try ca.signReceipt(late), expecting: expectations) } == .certificateExpired)
    }

    @Test("a receipt signed by a certificate without Apple's receipt-signing OID is refused, whatever root it chains to")
    func signerWithoutAppleOID() async throws {
        // Shaped like a developer certificate Apple issues (push, Developer ID): trusted root, no markers.
        let developer = try ca.withoutAppleOIDs(leaf: true, intermediate: true)
        #expect(
            await rejectionCode { _ = try await verifier.verify(der: try developer.signReceipt(receipt()), expecting: expectations) }
                == .missingAppleOID
        )
        let leafOnly = try ca.withoutAppleOIDs(leaf: true, intermediate: false)
        #expect(
            await rejectionCode { _ = try await verifier.verify(der: try leafOnly.signReceipt(receipt()), expecting: expectations) }
                == .missingAppleOID
        )
    }

    @Test("a receipt whose intermediate lacks Apple's WWDR OID is refused")
    func intermediateWithoutAppleOID() async throws {
        let stripped = try ca.withoutAppleOIDs(leaf: false, intermediate: true)
        #expect(stripped.leaf.extensions.contains { $0.oid == AppleCertificateOIDs.receiptSigningLeaf })
        #expect(
            await rejectionCode { _ = try await verifier.verify(der: try stripped.signReceipt(receipt()), expecting: expectations) }
                == .missingAppleOID
        )
    }

    @Test("a receipt carrying more certificates than one chain is refused before any chain is built")
    func tooManyCertificates() async throws {
        let padded = try ca.signReceipt(receipt(), certificates: [ca.leaf, ca.intermediate, ca.root, try strangerCA.get().root])
        #expect(await rejectionCode { _ = try await verifier.verify(der: padded, expecting: expectations) } == .badChain)
        // Dozens of cross-signed certificates under one name: refused by count, not explored.
        let mesh = try ca.crossSignedReceipt(receipt(), keyCount: 9)
        let error = await rejection { _ = try await verifier.verify(der: mesh, expecting: expectations) }
        #expect(error?.code == .badChain)
        #expect(error?.reason.contains("carries 82") == true, "\(String(describing: error))")
    }

    @Test("a receipt whose signer's issuer is missing, or not issued by a trusted root, is refused")
    func brokenLinks() async throws {
        let withoutIntermediate = try ca.signReceipt(receipt(), certificates: [ca.leaf, ca.root])
        #expect(await rejectionCode { _ = try await verifier.verify(der: withoutIntermediate, expecting: expectations) } == .badChain)
        // The leaf named with the stranger's intermediate subject: the only candidate does not sign it.
        let stranger = try strangerCA.get()
        let foreignIntermediate = try ca.signReceipt(receipt(), certificates: [ca.leaf, stranger.intermediate, stranger.root])
        #expect(await rejectionCode { _ = try await verifier.verify(der: foreignIntermediate, expecting: expectations) } == .badChain)
    }

    @Test("signed attributes must carry the content's message digest")
    func signedAttributes() async throws {
        let withDigest = try ca.signReceipt(receipt(), signedAttributes: .withMessageDigest)
        #expect(try await verifier.verify(der: withDigest, expecting: expectations).receipt == receipt())
        let withoutDigest = try ca.signReceipt(receipt(), signedAttributes: .withoutMessageDigest)
        #expect(await rejectionCode { _ = try await verifier.verify(der: withoutDigest, expecting: expectations) } == .badSignature)
        // The signature covers the attributes; the digest in them must still match the content.
        var tampered = withDigest
        let bundle = Array("it.seaboo.app".utf8)
        let at = try #require((0...(tampered.count - bundle.count)).first { Array(tampered[$0..<$0 + bundle.count]) == bundle })
        tampered[at + bundle.count - 1] ^= 0x01
        #expect(await rejectionCode { _ = try await verifier.verify(der: tampered, expecting: expectations) } == .badSignature)
    }

    @Test("a receipt larger than the limit is refused as malformed without parsing")
    func oversized() async throws {
        let huge = [UInt8](repeating: 0x30, count: ReceiptVerifier.maximumReceiptBytes + 1)
        #expect(await rejectionCode { _ = try await verifier.verify(der: huge, expecting: expectations) } == .malformed)
    }
}

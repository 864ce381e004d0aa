import AppleSignedData
import Crypto
import Foundation
import TestKit
import Testing
import X509

@Suite("TestKit CA")
struct TestCATests {
    @Test("the CA is shaped like Apple's: P-384 root and intermediate, P-256 leaf, marker OIDs")
    func shape() throws {
        let ca = try TestCA.generate()
        #expect(P384.Signing.PublicKey(ca.root.publicKey) != nil)
        #expect(P384.Signing.PublicKey(ca.intermediate.publicKey) != nil)
        #expect(P256.Signing.PublicKey(ca.leaf.publicKey) != nil)
        #expect(ca.intermediate.extensions.contains { $0.oid == AppleCertificateOIDs.wwdrIntermediate })
        #expect(ca.leaf.extensions.contains { $0.oid == AppleCertificateOIDs.receiptSigningLeaf })
        #expect(ca.leaf.issuer == ca.intermediate.subject)
        #expect(ca.intermediate.issuer == ca.root.subject)
        #expect(ca.root.issuer == ca.root.subject)
        #expect(try ca.x5c.count == 3)
    }

    @Test("options remove the marker OIDs and set validity")
    func brokenVariants() throws {
        let now = Date()
        var options = TestCA.Options(now: now)
        options.intermediateHasAppleOID = false
        options.leafHasAppleOID = false
        options.leafValidity = now.addingTimeInterval(-100)...now.addingTimeInterval(100)
        let ca = try TestCA.generate(options)
        #expect(!ca.intermediate.extensions.contains { $0.oid == AppleCertificateOIDs.wwdrIntermediate })
        #expect(!ca.leaf.extensions.contains { $0.oid == AppleCertificateOIDs.receiptSigningLeaf })
        #expect(abs(ca.leaf.notValidAfter.timeIntervalSince(now.addingTimeInterval(100))) < 1)
    }

    @Test("a CA written to disk and read back signs data the original root verifies")
    func roundTripThroughFiles() async throws {
        let ca = try TestCA.generate()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-ca-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try ca.write(to: directory)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(TestCA.FileName.leafKey).path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        let loaded = try TestCA.load(from: directory)
        #expect(loaded.root == ca.root)
        #expect(loaded.leaf == ca.leaf)
        let jws = try loaded.signTransaction(.testPurchase(bundleId: "b", productId: "p"))
        let expectations = try AppExpectations(bundleId: "b", appAppleId: nil, environment: .sandbox)
        let verified = try await SignedDataVerifier(roots: ca.trustedRoots).verifyTransaction(jws, expecting: expectations)
        #expect(verified.payload.productId == "p")
    }

    @Test("TestKit data never verifies against Apple's root")
    func notApple() async throws {
        let jws = try TestCA.generate().signTransaction(.testPurchase(bundleId: "b", productId: "p"))
        let verifier = try SignedDataVerifier.apple()
        await #expect(throws: SignedDataError.self) { _ = try await verifier.verifyTransaction(jws, expecting: .inspectOnly) }
    }
}

import AppleSignedData
import Foundation
import SwiftASN1
import TestKit
import Testing
import X509

@Suite("Trusted roots")
struct TrustedRootsTests {
    @Test("the bundled roots are Apple's")
    func bundledRoots() throws {
        let g3 = try TrustedRoots.appleRootCAG3
        #expect(g3.subject.description.contains("Apple Root CA - G3"))
        let inc = try TrustedRoots.appleIncRoot
        #expect(inc.subject.description.contains("Apple Root CA"))
        #expect(try TrustedRoots.apple().certificates == [g3])
    }

    @Test("extra roots load from PEM and DER files")
    func loadsFiles() throws {
        let ca = try TestCA.generate()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-roots-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let pem = directory.appendingPathComponent("root.pem")
        try Data(try ca.rootPEM.utf8).write(to: pem)
        #expect(try TrustedRoots.load(contentsOf: pem) == [ca.root])

        let der = directory.appendingPathComponent("root.der")
        try Data(base64Encoded: try ca.root.derBase64())!.write(to: der)
        #expect(try TrustedRoots.load(contentsOf: der) == [ca.root])

        let bundle = directory.appendingPathComponent("two.pem")
        try Data((try ca.rootPEM + "\n" + (try TrustedRoots.appleRootCAG3.serializeAsPEM().pemString)).utf8).write(to: bundle)
        #expect(try TrustedRoots.load(contentsOf: bundle).count == 2)

        let junk = directory.appendingPathComponent("junk.pem")
        try Data("hello".utf8).write(to: junk)
        #expect(throws: SignedDataError.self) { try TrustedRoots.load(contentsOf: junk) }
        #expect(throws: SignedDataError.self) { try TrustedRoots.load(contentsOf: directory.appendingPathComponent("missing.pem")) }
    }

    @Test("Apple's intermediate is not a trust anchor")
    func intermediateIsNotAnAnchor() async throws {
        let intermediate = try TrustedRoots.load(contentsOf: try Fixture.url("AppleWWDRCAG6-intermediate.pem"))
        let verifier = SignedDataVerifier(roots: TrustedRoots(intermediate))
        let jws = try Fixture.text("transaction-sandbox-consumable-2025.jws")
        #expect(await rejectionCode { _ = try await verifier.verifyTransaction(jws, expecting: .inspectOnly) } == .untrustedRoot)
    }
}

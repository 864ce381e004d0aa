import Foundation
import Testing

/// Operators install one file: the migrations, the admin page, the API document and Apple's roots
/// are compiled into `berth`, so a copy of the binary alone creates its database, serves the pages and
/// verifies Apple's signatures.
@Suite("the berth binary is self-contained")
struct SelfContainedBinaryTests {
    @Test("the binary looks for no resource bundle of berth's modules (SwiftPM's Bundle.module accessor names its folder)")
    func noResourceBundleLookups() throws {
        let binary = try Data(contentsOf: try BerthProcess.executable)
        for module in ["HTTPAPI", "AppleSignedData", "SQLStore"] {
            #expect(binary.range(of: Data("Berth_\(module).resources".utf8)) == nil, "berth would look for Berth_\(module).resources beside it")
        }
    }

    static func textFileBusy(_ error: NSError) -> Bool {
        (error.userInfo[NSUnderlyingErrorKey] as? NSError).map { $0.domain == NSPOSIXErrorDomain && $0.code == Int(ETXTBSY) } ?? false
            || (error.domain == NSPOSIXErrorDomain && error.code == Int(ETXTBSY))
    }

    @Test("a copy of the binary alone verifies Apple's JWS and receipts and serves the admin page, /docs and /openapi.yaml")
    func copyAlone() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let alone = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: alone) }
        let copy = alone.appendingPathComponent("berth")
        try FileManager.default.copyItem(at: try BerthProcess.executable, to: copy)
        // A child another test forks while the copy is being written inherits its write descriptor
        // until that child execs; meanwhile executing the copy fails with ETXTBSY. Wait it out.
        for attempt in 1...50 {
            do {
                _ = try await BerthProcess.run(["--help"], executable: copy)
                break
            } catch let error as NSError where Self.textFileBusy(error) && attempt < 50 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }

        for sample in ["transaction-sandbox-consumable-2025.jws", "receipt-production-2024-sha256.b64"] {
            let verified = try await BerthProcess.run(["verify", try BerthProcess.fixture(sample)], executable: copy)
            #expect(verified.status == 0, "\(sample): \(verified.stderr)")
        }

        #expect(
            !FileManager.default.fileExists(atPath: server.directory.appendingPathComponent("migrations").path),
            "no migrations folder beside the server"
        )
        try await server.start(executable: copy)
        let page = try await server.request("GET", "/admin", headers: [:])
        #expect(page.status == 200 && String(decoding: page.data, as: UTF8.self).contains("Admin API key"))
        let script = try await server.request("GET", "/admin/admin.js", headers: [:])
        #expect(script.status == 200 && String(decoding: script.data, as: UTF8.self).contains("/api/admin/app"))
        let yaml = try await server.request("GET", "/openapi.yaml", headers: [:])
        let contract = try Data(contentsOf: ServerProcess.repository.appendingPathComponent("contract/openapi.yaml"))
        #expect(yaml.data == contract, "the served document is the contract")
        let docs = try await server.request("GET", "/docs", headers: [:])
        #expect(String(decoding: docs.data, as: UTF8.self).contains("<h2>Operations</h2>"), "the docs page is rendered, not its fallback")
    }
}

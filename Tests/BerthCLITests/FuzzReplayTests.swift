import Foundation
import Testing

/// The fuzz targets outside libFuzzer: every seed (TestKit output, Apple's samples, the contract's
/// request bodies) and every saved input in fuzz/regressions (inputs that crashed Berth once, or the
/// review's one-request crashes) runs through the same target code; a trap or a 500 fails the test.
@Suite("Fuzz targets: seeds and regressions replay")
struct FuzzReplayTests {
    @Test("BerthFuzz seed writes inputs for every target, and replaying them and fuzz/regressions ends without a crash")
    func replay() async throws {
        let tool = try BerthProcess.executable.deletingLastPathComponent().appendingPathComponent("BerthFuzz")
        try #require(FileManager.default.isExecutableFile(atPath: tool.path), "build the BerthFuzz product first (swift build)")
        let repository = ServerProcess.repository
        let seeds = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: seeds) }
        func run(_ arguments: [String]) async throws -> BerthProcess.Result {
            let process = Process()
            process.executableURL = tool
            process.arguments = arguments
            process.currentDirectoryURL = repository
            process.environment = ProcessInfo.processInfo.environment.merging(["BERTH_FUZZ_REPOSITORY": repository.path]) { $1 }
            let output = Pipe.forChild(), errors = Pipe.forChild()
            process.standardOutput = output
            process.standardError = errors
            let (out, err) = try await OffPool.run {
                try process.runAlone()
                let out = output.fileHandleForReading.readDataToEndOfFile(), err = errors.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return (out, err)
            }
            return BerthProcess.Result(
                status: process.terminationStatus,
                stdout: String(decoding: out, as: UTF8.self),
                stderr: String(decoding: err, as: UTF8.self)
            )
        }
        let seeded = try await run(["seed", seeds.path])
        #expect(seeded.status == 0, "\(seeded.stderr)")
        for target in ["jws", "receipt", "json", "jwt", "http", "play"] {
            let regressions = repository.appendingPathComponent("fuzz/regressions/\(target)")
            let replayed = try await run(["replay", target, seeds.appendingPathComponent(target).path, regressions.path])
            #expect(replayed.status == 0, "\(target): \(replayed.stdout) \(replayed.stderr.suffix(2000))")
            let count = replayed.stdout.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            #expect(count > 0, "\(target) replayed inputs: \(replayed.stdout)")
        }
    }
}

// Throughput of offline JWS verification, cold (a new leaf, so a full chain build, every time)
// and warm (one leaf, chain cached). Run in release mode:
//
//     swift run -c release BerthBenchmarks [--iterations N]
//
// Signing and certificate generation happen before the clock starts; only verification is timed.
import AppleSignedData
import Foundation
import TestKit

func measure(_ label: String, count: Int, _ body: () async throws -> Void) async throws {
    let clock = ContinuousClock()
    let elapsed = try await clock.measure { try await body() }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let perSecond = Double(count) / seconds
    let micros = seconds / Double(count) * 1e6
    print(String(format: "%-34@ %8d verifications  %10.0f /s  %8.1f µs each", label as NSString, count, perSecond, micros))
}

func machine() -> String {
    let cpu =
        (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
        .split(separator: "\n").first { $0.hasPrefix("model name") }
        .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" } ?? "unknown CPU"
    return "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores"
}

/// Cold and warm JWS verification throughput.
func benchmarkJWSVerification(count: Int) async throws {
    let bundle = "it.seaboo.app"
    let expectations = try AppExpectations(bundleId: bundle, appAppleId: nil, environment: .sandbox)
    let base = try TestCA.generate()

    print("machine: \(machine())")
    print("preparing \(count) cold and \(count) warm JWS…")
    var coldJWS: [String] = []
    for _ in 0..<count {
        let leaf = try base.withNewLeaf()
        coldJWS.append(try leaf.signTransaction(.testPurchase(bundleId: bundle, productId: "it.seaboo.rental.basic")))
    }
    let warmJWS = try (0..<count).map { _ in try base.signTransaction(.testPurchase(bundleId: bundle, productId: "it.seaboo.rental.basic")) }

    /// Verifies every JWS once, spread over `tasks` child tasks (off the main actor, as a server would).
    func verifyAll(_ items: [String], with verifier: SignedDataVerifier, tasks: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for slice in 0..<tasks {
                group.addTask {
                    for index in stride(from: slice, to: items.count, by: tasks) {
                        _ = try await verifier.verifyTransaction(items[index], expecting: expectations)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    let cores = ProcessInfo.processInfo.activeProcessorCount
    let coldVerifier = SignedDataVerifier(roots: base.trustedRoots, cacheCapacity: count + 1)
    try await measure("cold (new leaf, chain built), 1 task", count: count) {
        try await verifyAll(coldJWS, with: coldVerifier, tasks: 1)
    }
    precondition(coldVerifier.cacheStatistics.builds == count, "cold run must build every chain")

    let warmVerifier = SignedDataVerifier(roots: base.trustedRoots)
    _ = try await warmVerifier.verifyTransaction(warmJWS[0], expecting: expectations)
    try await measure("warm (cached chain), 1 task", count: count) {
        try await verifyAll(warmJWS, with: warmVerifier, tasks: 1)
    }
    try await measure("warm (cached chain), \(cores) tasks", count: count) {
        try await verifyAll(warmJWS, with: warmVerifier, tasks: cores)
    }
    precondition(warmVerifier.cacheStatistics.builds == 1, "warm runs must reuse the cached chain")

    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fixtures/transaction-sandbox-consumable-2025.jws")
    if let genuine = try? String(contentsOf: url, encoding: .utf8) {
        let apple = try SignedDataVerifier.apple()
        let inspect = AppExpectations.inspectOnly
        try await measure("warm, genuine Apple transaction", count: count) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { for _ in 0..<count { _ = try await apple.verifyTransaction(genuine, expecting: inspect) } }
                try await group.waitForAll()
            }
        }
    }

}

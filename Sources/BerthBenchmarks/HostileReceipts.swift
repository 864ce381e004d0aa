// How long hostile receipts keep a verifier busy before they are refused. Run in release mode:
//
//     swift run -c release BerthBenchmarks hostile-receipts [--iterations N]
//
// A receipt carrying keyCount² cross-signed certificates under one name made the earlier path
// builder explore on the order of keyCount! paths (42 certificates: 17 s, 72: over a minute). Each
// must now be refused in microseconds, whatever its size; a genuine-shaped TestKit receipt is timed
// beside them for scale.
import AppleSignedData
import Foundation
import TestKit

func benchmarkHostileReceipts(count: Int) async throws {
    let ca = try TestReceiptCA.generate()
    let verifier = ReceiptVerifier(roots: ca.trustedRoots)
    let expectations = try AppExpectations(bundleId: "it.seaboo.app", appAppleId: nil, environment: .sandbox)
    let receipt = AppReceipt.testReceipt(bundleId: "it.seaboo.app", productId: "it.seaboo.rental.basic")
    print("machine: \(machine())")

    let valid = try ca.signReceipt(receipt)
    try await measure("valid TestKit receipt", count: count) {
        for _ in 0..<count { _ = try await verifier.verify(der: valid, expecting: expectations) }
    }
    for keyCount in [6, 9, 12] {
        let hostile = try ca.crossSignedReceipt(receipt, keyCount: keyCount)
        var code = "accepted"
        try await measure("\(keyCount * keyCount + 1) certificates (\(hostile.count / 1024) KiB)", count: count) {
            for _ in 0..<count {
                do { _ = try await verifier.verify(der: hostile, expecting: expectations) } catch let error as SignedDataError {
                    code = error.code.rawValue
                }
            }
        }
        print("    refused as \(code)")
    }
    let developer = try ca.withoutAppleOIDs().signReceipt(receipt)
    var code = "accepted"
    try await measure("signer without Apple's OIDs", count: count) {
        for _ in 0..<count {
            do { _ = try await verifier.verify(der: developer, expecting: expectations) } catch let error as SignedDataError {
                code = error.code.rawValue
            }
        }
    }
    print("    refused as \(code)")
}

import AppleSignedData
import Foundation
import TestKit
import Testing

enum Fixture {
    static func url(_ name: String) throws -> URL {
        // The genuine Apple samples live once, in Tests/Fixtures, for every test target.
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
        try #require(FileManager.default.fileExists(atPath: url.path), "no fixture \(name)")
        return url
    }

    static func text(_ name: String) throws -> String {
        try String(contentsOf: url(name), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static let jwsSamples = [
        "notification-sandbox-test-2022.jws",
        "notification-production-consumption-request-2023.jws",
        "transaction-sandbox-subscription-2022.jws",
        "transaction-sandbox-consumable-2025.jws",
        "renewal-info-sandbox-2023.jws",
    ]
}

/// Runs `body` and returns the code of the `SignedDataError` it throws (recording an issue if it
/// does not throw one).
func rejectionCode(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> SignedDataError.Code? {
    do {
        try await body()
        Issue.record("expected a SignedDataError, but verification succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as SignedDataError {
        return error.code
    } catch {
        Issue.record("expected a SignedDataError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

extension TestCA {
    /// A verifier that trusts only this CA's root.
    var verifier: SignedDataVerifier { SignedDataVerifier(roots: trustedRoots) }
}

let bundleId = "it.seaboo.app"

func sandbox(_ bundle: String = bundleId, allowsLocalTesting: Bool = false) throws -> AppExpectations {
    try AppExpectations(bundleId: bundle, appAppleId: nil, environment: .sandbox, allowsLocalTesting: allowsLocalTesting)
}

/// Splits a compact JWS, applies `change` to the decoded bytes of one part and re-encodes it.
func tamper(_ jws: String, part: Int, _ change: (inout [UInt8]) -> Void) -> String {
    var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    var base64 = parts[part].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    var bytes = [UInt8](Data(base64Encoded: base64)!)
    change(&bytes)
    parts[part] = Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
    return parts.joined(separator: ".")
}

/// Decoded byte count of one part of a compact JWS.
func partLength(_ jws: String, part: Int) -> Int {
    var count = 0
    _ = tamper(jws, part: part) { count = $0.count }
    return count
}

/// Runs `body` and returns the `SignedDataError` it throws (recording an issue if it does not throw one).
func rejection(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> SignedDataError? {
    do {
        try await body()
        Issue.record("expected a SignedDataError, but verification succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as SignedDataError {
        return error
    } catch {
        Issue.record("expected a SignedDataError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

import AppleSignedData
import ArgumentParser
import Foundation

/// `berth verify`: verifies Apple-signed data offline and prints its decoded payload.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a signed transaction, renewal info, app transaction, notification or app receipt offline.",
        discussion: """
            Reads a compact JWS (or a notification body {"signedPayload": "..."}), or a base64 app
            receipt, from PATH, or from standard input when PATH is '-'. The kind is told from the
            payload's fields unless --kind names it (a payload with only common fields, such as
            {"environment":"Sandbox","signedDate":…}, needs --kind). On
            success prints the decoded payload as JSON on stdout (a notification with its nested
            signed data decoded in place) and exits 0. Otherwise prints "error: <code>: <reason>" on
            stderr and exits 1. JWS are anchored at Apple Root CA - G3, receipts at Apple Inc. Root.
            """
    )

    @Option(name: .customLong("bundle-id"), help: "Require this bundle id.")
    var bundleId: String?

    @Option(help: "Require this environment: Production or Sandbox.")
    var environment: String?

    @Option(name: .customLong("app-apple-id"), help: "Require this App Store app id (needed with --environment Production).")
    var appAppleId: Int64?

    @Option(help: "The kind of signed data: transaction, renewal-info, notification or app-transaction (default: told from its fields).")
    var kind: String?

    @Flag(name: .customLong("allow-xcode"), help: "Accept Xcode/LocalTesting data (never with Production).")
    var allowXcode = false

    @Option(name: .customLong("root"), help: "Also trust this root certificate (PEM or DER); repeatable.")
    var roots: [String] = []

    @Argument(help: "File holding the JWS, or '-' for standard input.")
    var path: String

    func run() async throws {
        do {
            let expectedKind = try kind.map(Self.parseKind)
            let input = try readInput()
            let environment = try environment.map(Self.parseEnvironment)
            let expectations = try AppExpectations.inspecting(
                bundleId: bundleId,
                appAppleId: appAppleId,
                environment: environment,
                allowsLocalTesting: allowXcode
            )
            var trusted = try TrustedRoots.apple()
            for root in roots {
                trusted = trusted.adding(try TrustedRoots.load(contentsOf: URL(fileURLWithPath: root)))
            }
            if expectedKind == nil, Self.looksLikeReceipt(input) {
                var receiptRoots = TrustedRoots([try TrustedRoots.appleIncRoot])
                for root in roots {
                    receiptRoots = receiptRoots.adding(try TrustedRoots.load(contentsOf: URL(fileURLWithPath: root)))
                }
                let verified = try await ReceiptVerifier(roots: receiptRoots).verify(base64: input, expecting: expectations)
                print(try VerifiedOutput.render(verified.receipt))
                Diagnostics.write("verified app receipt, \(verified.digestAlgorithm) signature, sha256 \(verified.sha256.prefix(16))…")
                return
            }
            let verifier = SignedDataVerifier(roots: trusted)
            let verified =
                if let expectedKind {
                    try await verifier.verify(input, as: expectedKind, expecting: expectations)
                } else {
                    try await verifier.verifyAny(input, expecting: expectations)
                }
            let (kind, json, trust) = try VerifiedOutput.render(verified)
            print(json)
            Diagnostics.write("verified \(kind) (\(trust))")
        } catch let error as SignedDataError {
            Diagnostics.write("error: \(error.code.rawValue): \(error.reason)")
            throw ExitCode(1)
        }
    }

    private func readInput() throws(SignedDataError) -> String {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
                throw SignedDataError(.malformed, "cannot read \(path)")
            }
        }
        guard let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
            throw SignedDataError(.malformed, "the input is empty or not UTF-8 text")
        }
        if text.hasPrefix("{") {
            guard let body = try? JSONDecoder().decode(NotificationRequestBody.self, from: Data(text.utf8)) else {
                throw SignedDataError(.malformed, "JSON input must be a notification body {\"signedPayload\": \"...\"}")
            }
            return body.signedPayload
        }
        return text
    }

    /// A receipt is one base64 blob (no dots); a JWS has three dot-separated parts.
    static func looksLikeReceipt(_ text: String) -> Bool {
        !text.contains(".") && text.count > 64
    }

    static func parseKind(_ text: String) throws(SignedDataError) -> SignedPayloadKind {
        guard let kind = SignedPayloadKind(rawValue: text.lowercased()) else {
            throw SignedDataError(.malformed, "--kind must be one of \(SignedPayloadKind.names), not \(text)")
        }
        return kind
    }

    static func parseEnvironment(_ text: String) throws(SignedDataError) -> AppStoreEnvironment {
        switch text.lowercased() {
        case "production": return .production
        case "sandbox": return .sandbox
        default: throw SignedDataError(.wrongEnvironment, "environment must be Production or Sandbox, not \(text)")
        }
    }
}

enum Diagnostics {
    static func write(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

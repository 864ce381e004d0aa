import Foundation
import Testing

@Suite("berth verify")
struct VerifyCommandTests {
    @Test("a genuine Apple transaction verifies with the bundled root and prints its payload")
    func genuineTransaction() async throws {
        let result = try await BerthProcess.run(["verify", try BerthProcess.fixture("transaction-sandbox-subscription-2022.jws")])
        #expect(result.status == 0, "\(result.stderr)")
        let payload = try jsonObject(result.stdout)
        #expect(payload["productId"] as? String == "Com.VoiceRecording.Telephone.103")
        #expect(payload["transactionId"] as? String == "2000000184445477")
        #expect(payload["type"] as? String == "Auto-Renewable Subscription")
    }

    @Test(
        "every genuine sample verifies",
        arguments: [
            "notification-sandbox-test-2022.jws", "notification-production-consumption-request-2023.jws",
            "transaction-sandbox-consumable-2025.jws", "renewal-info-sandbox-2023.jws",
        ]
    )
    func genuineSamples(name: String) async throws {
        let result = try await BerthProcess.run(["verify", try BerthProcess.fixture(name)])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try jsonObject(result.stdout)["signedDate"] is NSNumber)
    }

    @Test("--kind names the kind instead of telling it from the fields")
    func namedKind() async throws {
        let path = try BerthProcess.fixture("renewal-info-sandbox-2023.jws")
        let named = try await BerthProcess.run(["verify", "--kind", "renewal-info", path])
        #expect(named.status == 0, "\(named.stderr)")
        #expect(named.stderr.contains("verified renewal info"), "\(named.stderr)")
        #expect(try jsonObject(named.stdout)["autoRenewProductId"] is String)

        let unknown = try await BerthProcess.run(["verify", "--kind", "receipt", path])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("--kind must be one of transaction, renewal-info, notification, app-transaction"), "\(unknown.stderr)")
    }

    @Test("a notification prints with its nested transaction decoded, and checks the app when asked")
    func notificationWithNestedData() async throws {
        let path = try BerthProcess.fixture("notification-production-consumption-request-2023.jws")
        let result = try await BerthProcess.run([
            "verify", "--bundle-id", "com.jrjj.keysns", "--environment", "Production", "--app-apple-id", "1601830814", path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let data = try #require(try jsonObject(result.stdout)["data"] as? [String: Any])
        let transaction = try #require(data["signedTransactionInfo"] as? [String: Any])
        #expect(transaction["productId"] as? String == "com.keysns.JR1200")

        let wrong = try await BerthProcess.run([
            "verify", "--bundle-id", "it.seaboo.app", "--environment", "Production", "--app-apple-id", "1601830814", path,
        ])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("wrong_bundle"))
        #expect(wrong.stdout.isEmpty)

        let noAppId = try await BerthProcess.run(["verify", "--environment", "Production", path])
        #expect(noAppId.status == 1)
        #expect(noAppId.stderr.contains("missing_app_apple_id"))
    }

    @Test("a flipped byte exits 1 with the error code on stderr")
    func tampered() async throws {
        var jws = try String(contentsOfFile: try BerthProcess.fixture("transaction-sandbox-consumable-2025.jws"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // Change one character of the signature part into another valid base64url character.
        let index = jws.index(jws.endIndex, offsetBy: -10)
        jws.replaceSubrange(index...index, with: jws[index] == "A" ? "B" : "A")
        let result = try await BerthProcess.run(["verify", "-"], stdin: jws)
        #expect(result.status == 1)
        #expect(result.stderr.contains("error: bad_signature"))
        #expect(result.stdout.isEmpty)
    }

    @Test("unreadable or empty input is a clean error")
    func badInput() async throws {
        let missing = try await BerthProcess.run(["verify", "/nonexistent/file.jws"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("malformed"))
        let empty = try await BerthProcess.run(["verify", "-"], stdin: "")
        #expect(empty.status == 1)
        #expect(empty.stderr.contains("malformed"))
    }
}

@Suite("berth verify with app receipts")
struct VerifyReceiptCommandTests {
    @Test("a genuine base64 receipt is detected, verified offline and printed with its in-app entries")
    func genuineReceipt() async throws {
        let result = try await BerthProcess.run(["verify", try BerthProcess.fixture("receipt-production-2024-sha256.b64")])
        #expect(result.status == 0, "\(result.stderr)")
        let receipt = try jsonObject(result.stdout)
        #expect(receipt["bundleId"] as? String == "org.getpure.pure-iphone")
        #expect((receipt["inAppPurchases"] as? [Any])?.count == 4)
        #expect(result.stderr.contains("SHA-256"))
    }

    @Test("a receipt for another bundle or with a flipped byte exits 1 with a code")
    func refusedReceipts() async throws {
        let path = try BerthProcess.fixture("receipt-production-2015-sha1.b64")
        let wrong = try await BerthProcess.run(["verify", "--bundle-id", "it.seaboo.app", path])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("wrong_bundle"))
        var bytes = [UInt8](Data(base64Encoded: try String(contentsOfFile: path, encoding: .utf8).filter { !$0.isWhitespace })!)
        bytes[bytes.count - 5] ^= 0x40
        let tampered = try await BerthProcess.run(["verify", "-"], stdin: Data(bytes).base64EncodedString())
        #expect(tampered.status == 1)
        #expect(tampered.stderr.contains("bad_signature"))
    }
}

extension VerifyCommandTests {
    @Test("berth --version prints the release and the commit it was built from")
    func version() async throws {
        let result = try await BerthProcess.run(["--version"])
        #expect(result.status == 0)
        let text = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(text.range(of: #"^[0-9]+\.[0-9]+\.[0-9]+ \([^)]+\)$"#, options: .regularExpression) != nil, "\(text)")
        let changelog = try String(contentsOf: ServerProcess.repository.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        #expect(changelog.contains("## " + (text.split(separator: " ").first.map(String.init) ?? "?")), "CHANGELOG.md has a section for this release")
    }
}

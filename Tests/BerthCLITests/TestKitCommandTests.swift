import Foundation
import Testing

@Suite("berth testkit")
struct TestKitCommandTests {
    @Test("init, sign-transaction and verify --root work together; the test root is not trusted by default")
    func signAndVerify() throws {
        let directory = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca").path

        let made = try BerthProcess.run(["testkit", "init", ca])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("root.pem"))
        let again = try BerthProcess.run(["testkit", "init", ca])
        #expect(again.status != 0, "init must not silently replace an existing CA")

        let signed = try BerthProcess.run([
            "testkit", "sign-transaction", "--ca", ca, "--bundle-id", "it.seaboo.app", "--product", "it.seaboo.rental.basic",
            "--transaction-id", "2000000000000042", "--app-account-token", "7D8A0C2E-3A39-4F0E-9D51-2B8F2D2F7A11",
        ])
        #expect(signed.status == 0, "\(signed.stderr)")
        let jws = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let untrusted = try BerthProcess.run(["verify", "-"], stdin: jws)
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr.contains("untrusted_root"))

        let verified = try BerthProcess.run(["verify", "--root", "\(ca)/root.pem", "--bundle-id", "it.seaboo.app", "--environment", "Sandbox", "-"], stdin: jws)
        #expect(verified.status == 0, "\(verified.stderr)")
        let payload = try jsonObject(verified.stdout)
        #expect(payload["transactionId"] as? String == "2000000000000042")
        #expect(payload["productId"] as? String == "it.seaboo.rental.basic")
        #expect(payload["appAccountToken"] as? String == "7d8a0c2e-3a39-4f0e-9d51-2b8f2d2f7a11")
        #expect(payload["environment"] as? String == "Sandbox")
    }

    @Test("sign-notification nests a signed transaction given as JWS or as fields")
    func signNotification() throws {
        let directory = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca").path
        #expect(try BerthProcess.run(["testkit", "init", ca]).status == 0)

        let transaction = try BerthProcess.run(["testkit", "sign-transaction", "--ca", ca, "--bundle-id", "it.seaboo.app", "--product", "it.seaboo.experience.diving", "--transaction-id", "2000000000000077"])
        let body = try BerthProcess.run(["testkit", "sign-notification", "--ca", ca, "--type", "REFUND", "--bundle-id", "it.seaboo.app", "--transaction", transaction.stdout])
        #expect(body.status == 0, "\(body.stderr)")
        #expect(try jsonObject(body.stdout)["signedPayload"] is String)

        let verified = try BerthProcess.run(["verify", "--root", "\(ca)/root.pem", "--bundle-id", "it.seaboo.app", "--environment", "Sandbox", "-"], stdin: body.stdout)
        #expect(verified.status == 0, "\(verified.stderr)")
        let notification = try jsonObject(verified.stdout)
        #expect(notification["notificationType"] as? String == "REFUND")
        let data = try #require(notification["data"] as? [String: Any])
        let nested = try #require(data["signedTransactionInfo"] as? [String: Any])
        #expect(nested["transactionId"] as? String == "2000000000000077")

        let fromFields = try BerthProcess.run([
            "testkit", "sign-notification", "--ca", ca, "--type", "REVOKE", "--bundle-id", "it.seaboo.app", "--raw",
            "--transaction", #"{"productId": "it.seaboo.experience.fishing", "transactionId": "2000000000000099"}"#,
        ])
        #expect(fromFields.status == 0, "\(fromFields.stderr)")
        let check = try BerthProcess.run(["verify", "--root", "\(ca)/root.pem", "--bundle-id", "it.seaboo.app", "-"], stdin: fromFields.stdout)
        #expect(check.status == 0, "\(check.stderr)")
        let fieldsData = try #require(try jsonObject(check.stdout)["data"] as? [String: Any])
        let fieldsNested = try #require(fieldsData["signedTransactionInfo"] as? [String: Any])
        #expect(fieldsNested["productId"] as? String == "it.seaboo.experience.fishing")
        #expect(fieldsNested["bundleId"] as? String == "it.seaboo.app")

        let bad = try BerthProcess.run(["testkit", "sign-notification", "--ca", ca, "--type", "REFUND", "--bundle-id", "x", "--transaction", "{not json"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--transaction"))
    }
}

import Foundation
import Testing

@Suite("berth testkit")
struct TestKitCommandTests {
    @Test("init, sign-transaction and verify --root work together; the test root is not trusted by default")
    func signAndVerify() async throws {
        let directory = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca").path

        let made = try await BerthProcess.run(["testkit", "init", ca])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("root.pem"))
        let root = try String(contentsOfFile: "\(ca)/root.pem", encoding: .utf8)
        let again = try await BerthProcess.run(["testkit", "init", ca])
        #expect(again.status == 0, "init on an existing CA keeps it (a walk-through runs again): \(again.stderr)")
        #expect(again.stderr.contains("kept the test CA"))
        #expect(try String(contentsOfFile: "\(ca)/root.pem", encoding: .utf8) == root, "init must not silently replace an existing CA")
        // Half a CA is not used as if it were one.
        let partial = directory.appendingPathComponent("partial").path
        try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: true)
        try Data(root.utf8).write(to: URL(fileURLWithPath: "\(partial)/root.pem"))
        let broken = try await BerthProcess.run(["testkit", "init", partial])
        #expect(broken.status != 0 && broken.stderr.contains("--force"), "\(broken.stderr)")

        let signed = try await BerthProcess.run([
            "testkit", "sign-transaction", "--ca", ca, "--bundle-id", "it.seaboo.app", "--product", "it.seaboo.rental.basic",
            "--transaction-id", "2000000000000042", "--app-account-token", "7D8A0C2E-3A39-4F0E-9D51-2B8F2D2F7A11",
        ])
        #expect(signed.status == 0, "\(signed.stderr)")
        let jws = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let untrusted = try await BerthProcess.run(["verify", "-"], stdin: jws)
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr.contains("untrusted_root"))

        let verified = try await BerthProcess.run(
            ["verify", "--root", "\(ca)/root.pem", "--bundle-id", "it.seaboo.app", "--environment", "Sandbox", "-"],
            stdin: jws
        )
        #expect(verified.status == 0, "\(verified.stderr)")
        let payload = try jsonObject(verified.stdout)
        #expect(payload["transactionId"] as? String == "2000000000000042")
        #expect(payload["productId"] as? String == "it.seaboo.rental.basic")
        #expect(payload["appAccountToken"] as? String == "7d8a0c2e-3a39-4f0e-9d51-2b8f2d2f7a11")
        #expect(payload["environment"] as? String == "Sandbox")
    }

    @Test("sign-notification nests a signed transaction given as JWS or as fields")
    func signNotification() async throws {
        let directory = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca").path
        #expect(try await BerthProcess.run(["testkit", "init", ca]).status == 0)

        let transaction = try await BerthProcess.run([
            "testkit", "sign-transaction", "--ca", ca, "--bundle-id", "it.seaboo.app", "--product", "it.seaboo.experience.diving", "--transaction-id",
            "2000000000000077",
        ])
        let body = try await BerthProcess.run([
            "testkit", "sign-notification", "--ca", ca, "--type", "REFUND", "--bundle-id", "it.seaboo.app", "--transaction", transaction.stdout,
        ])
        #expect(body.status == 0, "\(body.stderr)")
        #expect(try jsonObject(body.stdout)["signedPayload"] is String)

        let verified = try await BerthProcess.run(
            ["verify", "--root", "\(ca)/root.pem", "--bundle-id", "it.seaboo.app", "--environment", "Sandbox", "-"],
            stdin: body.stdout
        )
        #expect(verified.status == 0, "\(verified.stderr)")
        let notification = try jsonObject(verified.stdout)
        #expect(notification["notificationType"] as? String == "REFUND")
        let data = try #require(notification["data"] as? [String: Any])
        let nested = try #require(data["signedTransactionInfo"] as? [String: Any])
        #expect(nested["transactionId"] as? String == "2000000000000077")

        let fromFields = try await BerthProcess.run([
            "testkit", "sign-notification", "--ca", ca, "--type", "REVOKE", "--bundle-id", "it.seaboo.app", "--raw",
            "--transaction", #"{"productId": "it.seaboo.experience.fishing", "transactionId": "2000000000000099"}"#,
        ])
        #expect(fromFields.status == 0, "\(fromFields.stderr)")
        let check = try await BerthProcess.run(["verify", "--root", "\(ca)/root.pem", "--bundle-id", "it.seaboo.app", "-"], stdin: fromFields.stdout)
        #expect(check.status == 0, "\(check.stderr)")
        let fieldsData = try #require(try jsonObject(check.stdout)["data"] as? [String: Any])
        let fieldsNested = try #require(fieldsData["signedTransactionInfo"] as? [String: Any])
        #expect(fieldsNested["productId"] as? String == "it.seaboo.experience.fishing")
        #expect(fieldsNested["bundleId"] as? String == "it.seaboo.app")

        let bad = try await BerthProcess.run([
            "testkit", "sign-notification", "--ca", ca, "--type", "REFUND", "--bundle-id", "x", "--transaction", "{not json",
        ])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--transaction"))
    }

    @Test("notifications in Apple's shape: TEST carries no bundleVersion; data.status and renewal info follow from a subscription given as JWS")
    func notificationShapes() async throws {
        let directory = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca").path
        #expect(try await BerthProcess.run(["testkit", "init", ca]).status == 0)
        func data(_ arguments: [String]) async throws -> [String: Any] {
            let body = try await BerthProcess.run(["testkit", "sign-notification", "--ca", ca, "--bundle-id", "com.braindumpster.app"] + arguments)
            #expect(body.status == 0, "\(body.stderr)")
            let verified = try await BerthProcess.run(
                ["verify", "--root", "\(ca)/root.pem", "--bundle-id", "com.braindumpster.app", "-"],
                stdin: body.stdout
            )
            #expect(verified.status == 0, "\(verified.stderr)")
            return try #require(try jsonObject(verified.stdout)["data"] as? [String: Any])
        }
        // Apple's TEST: {"bundleId", "environment"} (and appAppleId in Production), nothing else.
        let test = try await data(["--type", "TEST"])
        #expect(Set(test.keys) == ["bundleId", "environment"], "\(test.keys.sorted())")
        #expect(try await data(["--type", "DID_RENEW", "--transaction", #"{"productId":"credits_50"}"#])["bundleVersion"] as? String == "1")

        let subscription = try await BerthProcess.run([
            "testkit", "sign-transaction", "--ca", ca, "--bundle-id", "com.braindumpster.app",
            "--product", "brain_dumpster_yearly_premium", "--type", "Auto-Renewable Subscription",
            "--transaction-id", "2000000000000701", "--expires-date", "2099-01-01T00:00:00Z",
        ])
        #expect(subscription.status == 0, "\(subscription.stderr)")
        let renewed = try await data(["--type", "DID_RENEW", "--transaction", subscription.stdout, "--renewal-info", "{}"])
        #expect(renewed["status"] as? Int == 1, "a live subscription's notification says ACTIVE: \(renewed.keys.sorted())")
        let renewal = try #require(renewed["signedRenewalInfo"] as? [String: Any])
        #expect(
            renewal["originalTransactionId"] as? String == "2000000000000701" && renewal["productId"] as? String == "brain_dumpster_yearly_premium"
        )
        #expect(
            renewal["renewalDate"] != nil && renewal["recentSubscriptionStartDate"] != nil && renewal["appTransactionId"] != nil,
            "\(renewal.keys.sorted())"
        )
    }

    @Test("sign-renewal-info, sign-app-transaction and sign-receipt with several entries and subscription periods verify, with Apple's fields")
    func renewalInfoAppTransactionAndReceipts() async throws {
        let directory = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca").path
        #expect(try await BerthProcess.run(["testkit", "init", ca]).status == 0)
        func verified(_ text: String, _ extra: [String] = []) async throws -> [String: Any] {
            let result = try await BerthProcess.run(
                ["verify", "--root", "\(ca)/root.pem", "--root", "\(ca)/receipt-root.pem", "--bundle-id", "com.braindumpster.app"] + extra + ["-"],
                stdin: text
            )
            #expect(result.status == 0, "\(result.stderr)")
            return try jsonObject(result.stdout)
        }

        let renewal = try await BerthProcess.run([
            "testkit", "sign-renewal-info", "--ca", ca, "--original-transaction-id", "2000000000000501",
            "--product", "brain_dumpster_yearly_premium", "--renewal-date", "2027-01-01T00:00:00Z",
            "--auto-renew-off", "--win-back-offer", "winback50",
        ])
        #expect(renewal.status == 0, "\(renewal.stderr)")
        let info = try await verified(renewal.stdout)
        #expect(info["originalTransactionId"] as? String == "2000000000000501" && info["productId"] as? String == "brain_dumpster_yearly_premium")
        #expect(info["autoRenewProductId"] as? String == "brain_dumpster_yearly_premium" && info["autoRenewStatus"] as? Int == 0)
        #expect(info["renewalDate"] != nil && info["recentSubscriptionStartDate"] != nil && info["appTransactionId"] != nil)
        #expect(info["eligibleWinBackOfferIds"] as? [String] == ["winback50"])

        let app = try await BerthProcess.run([
            "testkit", "sign-app-transaction", "--ca", ca, "--bundle-id", "com.braindumpster.app",
            "--original-application-version", "1.4", "--app-transaction-id", "704000000000000001",
        ])
        #expect(app.status == 0, "\(app.stderr)")
        let appTransaction = try await verified(app.stdout)
        #expect(
            appTransaction["appTransactionId"] as? String == "704000000000000001" && appTransaction["originalApplicationVersion"] as? String == "1.4"
        )
        #expect(appTransaction["receiptType"] as? String == "Sandbox" && appTransaction["originalPlatform"] as? String == "iOS")
        #expect(
            try await BerthProcess.run(["testkit", "sign-app-transaction", "--ca", ca, "--bundle-id", "x", "--environment", "Production"]).status
                != 0,
            "a Production app transaction needs the app's Apple ID"
        )

        let receipt = try await BerthProcess.run([
            "testkit", "sign-receipt", "--ca", ca, "--bundle-id", "com.braindumpster.app",
            "--product", "brain_dumpster_yearly_premium", "--product", "extra_pack",
            "--transaction-id", "2000000000000601", "--purchase-date", "2026-06-01T00:00:00Z",
            "--expires-date", "2026-07-01T00:00:00Z", "--renewals", "1", "--cancellation-date", "2026-06-15T00:00:00Z",
        ])
        #expect(receipt.status == 0, "\(receipt.stderr)")
        let decoded = try await verified(receipt.stdout)
        let entries = try #require(decoded["inAppPurchases"] as? [[String: Any]])
        #expect(entries.count == 4, "two periods of each product")
        let yearly = entries.filter { $0["productId"] as? String == "brain_dumpster_yearly_premium" }
        #expect(Set(yearly.compactMap { $0["originalTransactionId"] as? String }).count == 1)
        #expect(yearly.allSatisfy { $0["subscriptionExpirationDate"] != nil && $0["webOrderLineItemId"] != nil })
        #expect(yearly.contains { $0["transactionId"] as? String == "2000000000000601" && $0["cancellationDate"] != nil })
        #expect(yearly.filter { $0["cancellationDate"] != nil }.count == 1, "only the latest period was refunded")

        let one = try await BerthProcess.run([
            "testkit", "sign-receipt", "--ca", ca, "--bundle-id", "com.braindumpster.app", "--product", "pack", "--transaction-id",
            "2000000000000701",
        ])
        let single = try #require(try await verified(one.stdout)["inAppPurchases"] as? [[String: Any]])
        #expect(
            single.count == 1 && single.first?["transactionId"] as? String == "2000000000000701" && single.first?["subscriptionExpirationDate"] == nil
        )
        #expect(
            try await BerthProcess.run(["testkit", "sign-receipt", "--ca", ca, "--bundle-id", "x", "--product", "p", "--renewals", "2"]).status != 0,
            "--renewals needs --expires-date"
        )
    }
}

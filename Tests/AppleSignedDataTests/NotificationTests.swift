import AppleSignedData
import Foundation
import TestKit
import Testing

@Suite("Notifications and their nested signed data")
struct NotificationTests {
    let ca: TestCA

    init() throws {
        ca = try TestCA.generate()
    }

    @Test("a REFUND notification verifies with its nested transaction and renewal info")
    func refundWithNestedData() async throws {
        let transaction = TransactionPayload.testPurchase(bundleId: bundleId, productId: "it.seaboo.rental.premium")
        let renewal = RenewalInfoPayload(
            originalTransactionId: transaction.originalTransactionId,
            productId: "p",
            autoRenewStatus: .on,
            signedDate: AppleTimestamp(Date()),
            environment: .sandbox
        )
        let jws = try ca.signNotification(type: .refund, bundleId: bundleId, transaction: transaction, renewalInfo: renewal)
        let verified = try await ca.verifier.verifyNotification(jws, expecting: try sandbox())
        #expect(verified.payload.notificationType == .refund)
        #expect(verified.transaction?.payload == transaction)
        #expect(verified.renewalInfo?.payload == renewal)
    }

    @Test("a notification whose inner transaction is signed by an untrusted chain is refused")
    func nestedUntrustedChain() async throws {
        let stranger = try TestCA.generate()
        let inner = try stranger.signTransaction(.testPurchase(bundleId: bundleId, productId: "x"))
        let payload = NotificationPayload(
            notificationType: .refund,
            notificationUUID: UUID().uuidString,
            data: NotificationData(environment: .sandbox, bundleId: bundleId, signedTransactionInfo: inner),
            version: "2.0",
            signedDate: AppleTimestamp(Date())
        )
        let jws = try ca.signNotification(payload)
        let expectations = try sandbox()
        do {
            _ = try await ca.verifier.verifyNotification(jws, expecting: expectations)
            Issue.record("a nested transaction from an untrusted chain was accepted")
        } catch {
            #expect(error.code == .untrustedRoot)
            #expect(error.reason.hasPrefix("data.signedTransactionInfo"))
        }
    }

    @Test("a notification whose inner renewal info is tampered is refused")
    func nestedTamperedRenewal() async throws {
        let renewal = try ca.signRenewalInfo(
            RenewalInfoPayload(originalTransactionId: "1", signedDate: AppleTimestamp(Date()), environment: .sandbox)
        )
        let payload = NotificationPayload(
            notificationType: .didRenew,
            notificationUUID: UUID().uuidString,
            data: NotificationData(environment: .sandbox, bundleId: bundleId, signedRenewalInfo: tamper(renewal, part: 2) { $0[5] ^= 1 }),
            version: "2.0",
            signedDate: AppleTimestamp(Date())
        )
        #expect(
            await rejectionCode { _ = try await ca.verifier.verifyNotification(try ca.signNotification(payload), expecting: try sandbox()) }
                == .badSignature
        )
    }

    @Test("a nested transaction for another app is refused even under inspection")
    func nestedForeignTransaction() async throws {
        let jws = try ca.signNotification(type: .refund, bundleId: bundleId, transaction: .testPurchase(bundleId: "com.other", productId: "x"))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyNotification(jws, expecting: .inspectOnly) } == .wrongBundle)
        #expect(await rejectionCode { _ = try await ca.verifier.verifyNotification(jws, expecting: try sandbox()) } == .wrongBundle)
    }

    @Test("a foreign-bundle notification is refused")
    func foreignNotification() async throws {
        let jws = try ca.signNotification(type: .refund, bundleId: "com.other", transaction: .testPurchase(bundleId: "com.other", productId: "x"))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyNotification(jws, expecting: try sandbox()) } == .wrongBundle)
    }

    @Test("a production notification must carry the expected appAppleId")
    func productionAppAppleId() async throws {
        let expectations = try AppExpectations(bundleId: bundleId, appAppleId: 1234, environment: .production)
        let good = try ca.signNotification(type: .test, bundleId: bundleId, appAppleId: 1234, environment: .production)
        #expect(try await ca.verifier.verifyNotification(good, expecting: expectations).payload.notificationType == .test)
        let missing = try ca.signNotification(type: .test, bundleId: bundleId, appAppleId: nil, environment: .production)
        #expect(await rejectionCode { _ = try await ca.verifier.verifyNotification(missing, expecting: expectations) } == .wrongAppAppleId)
        let other = try ca.signNotification(type: .test, bundleId: bundleId, appAppleId: 999, environment: .production)
        #expect(await rejectionCode { _ = try await ca.verifier.verifyNotification(other, expecting: expectations) } == .wrongAppAppleId)
    }

    @Test("app transactions verify and check bundle, environment and appAppleId")
    func appTransaction() async throws {
        let payload = AppTransactionPayload(
            receiptType: .production,
            appAppleId: 1234,
            bundleId: bundleId,
            applicationVersion: "3",
            signedDate: AppleTimestamp(Date())
        )
        let expectations = try AppExpectations(bundleId: bundleId, appAppleId: 1234, environment: .production)
        let verified = try await ca.verifier.verifyAppTransaction(try ca.signAppTransaction(payload), expecting: expectations)
        #expect(verified.payload == payload)
        var foreign = payload
        foreign.appAppleId = 1
        #expect(
            await rejectionCode { _ = try await ca.verifier.verifyAppTransaction(try ca.signAppTransaction(foreign), expecting: expectations) }
                == .wrongAppAppleId
        )
        if case .appTransaction = try await ca.verifier.verifyAny(try ca.signAppTransaction(payload), expecting: .inspectOnly) {
        } else {
            Issue.record("verifyAny did not recognise an app transaction")
        }
    }
}

import AppleSignedData
import Foundation
import Testing

@Suite("Genuine Apple-signed samples")
struct GenuineAppleSamplesTests {
    let verifier: SignedDataVerifier

    init() throws {
        verifier = try SignedDataVerifier.apple()
    }

    @Test("every sample verifies with the bundled Apple Root CA - G3", arguments: Fixture.jwsSamples)
    func verifiesWithBundledRoot(sample: String) async throws {
        let result = try await verifier.verifyAny(try Fixture.text(sample), expecting: .inspectOnly)
        let appleRoot = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"
        switch result {
        case .transaction(let verified):
            #expect(verified.payload.transactionId?.isEmpty == false)
            #expect(verified.trust == .chain(rootFingerprint: appleRoot))
        case .notification(let notification):
            #expect(notification.notification.trust == .chain(rootFingerprint: appleRoot))
            if notification.payload.notificationType == .test {
                #expect(notification.transaction == nil)
            } else {
                #expect(notification.transaction?.trust == .chain(rootFingerprint: appleRoot))
            }
        case .renewalInfo(let verified):
            #expect(verified.payload.originalTransactionId == "2000000335310644")
            #expect(verified.trust == .chain(rootFingerprint: appleRoot))
        case .appTransaction:
            Issue.record("no app transaction sample exists")
        }
    }

    @Test("the consumable transaction decodes into typed fields")
    func consumableTransactionFields() async throws {
        let expectations = try AppExpectations(bundleId: "com.goodheartapp", appAppleId: nil, environment: .sandbox)
        let verified = try await verifier.verifyTransaction(try Fixture.text("transaction-sandbox-consumable-2025.jws"), expecting: expectations)
        let payload = verified.payload
        #expect(payload.productId == "gh_super_good_ticket_1")
        #expect(payload.transactionId == "2000000847061981")
        #expect(payload.type == .consumable)
        #expect(payload.environment == .sandbox)
        #expect(payload.price == 230000)
        #expect(payload.currency == "JPY")
        #expect(payload.signedDate == AppleTimestamp(millisecondsSince1970: 1739161772561))
        #expect(verified.signedDate.millisecondsSince1970 == 1739161772561)
    }

    @Test("the subscription transaction keeps its appAccountToken and offer type")
    func subscriptionTransactionFields() async throws {
        let expectations = try AppExpectations(bundleId: "Com.VoiceRecording.Telephone", appAppleId: nil, environment: .sandbox)
        let payload = try await verifier.verifyTransaction(try Fixture.text("transaction-sandbox-subscription-2022.jws"), expecting: expectations)
            .payload
        #expect(payload.type == .autoRenewableSubscription)
        #expect(payload.appAccountToken == "207262da-1ac8-4e0a-a399-5aa62a82800f")
        #expect(payload.offerType == .introductoryOffer)
        #expect(payload.expiresDate == AppleTimestamp(millisecondsSince1970: 1666615993000))
    }

    @Test("the production CONSUMPTION_REQUEST verifies with its nested transaction")
    func consumptionRequestWithNestedTransaction() async throws {
        let expectations = try AppExpectations(bundleId: "com.jrjj.keysns", appAppleId: 1601830814, environment: .production)
        let verified = try await verifier.verifyNotification(
            try Fixture.text("notification-production-consumption-request-2023.jws"),
            expecting: expectations
        )
        #expect(verified.payload.notificationType == .consumptionRequest)
        #expect(verified.payload.data?.appAppleId == 1601830814)
        let transaction = try #require(verified.transaction)
        #expect(transaction.payload.bundleId == "com.jrjj.keysns")
        #expect(transaction.payload.environment == .production)
        #expect(transaction.payload.type == .consumable)
    }

    @Test("genuine data for another app or environment is refused")
    func genuineDataForOtherApp() async throws {
        let notification = try Fixture.text("notification-production-consumption-request-2023.jws")
        let otherBundle = try AppExpectations(bundleId: "it.seaboo.app", appAppleId: 1601830814, environment: .production)
        #expect(await rejectionCode { _ = try await verifier.verifyNotification(notification, expecting: otherBundle) } == .wrongBundle)
        let otherApp = try AppExpectations(bundleId: "com.jrjj.keysns", appAppleId: 42, environment: .production)
        #expect(await rejectionCode { _ = try await verifier.verifyNotification(notification, expecting: otherApp) } == .wrongAppAppleId)
        let sandboxOnly = try AppExpectations(bundleId: "com.jrjj.keysns", appAppleId: 1601830814, environment: .sandbox)
        #expect(await rejectionCode { _ = try await verifier.verifyNotification(notification, expecting: sandboxOnly) } == .wrongEnvironment)
    }

    @Test("genuine samples are not trusted without Apple's root")
    func notTrustedWithoutAppleRoot() async throws {
        let bare = SignedDataVerifier(roots: TrustedRoots([]))
        for sample in Fixture.jwsSamples {
            #expect(await rejectionCode { _ = try await bare.verifyAny(try Fixture.text(sample), expecting: .inspectOnly) } == .untrustedRoot)
        }
    }

    @Test("flipping any single byte of payload or signature fails with a stable code", arguments: Fixture.jwsSamples)
    func everySingleByteFlipFails(sample: String) async throws {
        let jws = try Fixture.text(sample)
        let stableCodes: Set<SignedDataError.Code> = [.malformed, .badSignature, .certificateExpired, .certificateNotYetValid, .wrongEnvironment]
        var failures = 0
        var accepted: [String] = []
        for part in [1, 2] {
            for index in 0..<partLength(jws, part: part) {
                let tampered = tamper(jws, part: part) { $0[index] ^= 0x01 }
                do {
                    _ = try await verifier.verifyAny(tampered, expecting: .inspectOnly)
                    accepted.append("part \(part) byte \(index)")
                } catch {
                    #expect(stableCodes.contains(error.code), "unexpected code \(error.code) at part \(part) byte \(index)")
                    failures += 1
                }
            }
        }
        #expect(accepted.isEmpty, "accepted after a flip: \(accepted.prefix(5))")
        #expect(failures == partLength(jws, part: 1) + partLength(jws, part: 2))
    }
}

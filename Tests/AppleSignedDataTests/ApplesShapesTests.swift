import AppleSignedData
import Foundation
import TestKit
import Testing
import X509

/// Payloads in the shapes Apple's tools really write, decoded as Apple's libraries decode them:
/// Xcode's fractional milliseconds, payloads without `signedDate`, minimal payloads whose kind only
/// the caller knows, and refusals that name the field at fault.
@Suite("What Apple's tools send")
struct ApplesShapesTests {
    let ca: TestCA
    let xcode: TestCA

    init() throws {
        ca = try TestCA.generate()
        xcode = try TestCA.generate(.init(commonNamePrefix: "StoreKit Testing in Xcode"))
    }

    /// Xcode signs with one self-signed certificate in x5c.
    func signedByXcode(_ json: String) throws -> String {
        let header = try JSONSerialization.data(withJSONObject: [
            "alg": "ES256", "typ": "JWT", "kid": "Apple_Xcode_Key", "x5c": [try xcode.leaf.derBase64()],
        ])
        return try xcode.signJWS(payloadBytes: Data(json.utf8), headerBytes: header)
    }

    func signed(_ json: String) throws -> String { try ca.signJWS(payloadBytes: Data(json.utf8)) }

    /// The reason of the SignedDataError `body` throws.
    func refusal(_ body: () async throws -> Void) async -> SignedDataError? {
        do {
            try await body()
            Issue.record("accepted")
            return nil
        } catch let error as SignedDataError {
            return error
        } catch {
            Issue.record("not a SignedDataError: \(error)")
            return nil
        }
    }

    @Test("an Xcode transaction's fractional milliseconds are read as Apple's libraries read them")
    func xcodeTransaction() async throws {
        let jws = try signedByXcode(
            """
            {"inAppOwnershipType":"PURCHASED","purchaseDate":1767225600123.7297,"signedDate":1767225600456.485,\
            "originalPurchaseDate":1767225600123.7297,"isUpgraded":false,"quantity":1,"transactionId":"0",\
            "type":"Auto-Renewable Subscription","transactionReason":"PURCHASE","productId":"pass.premium",\
            "expiresDate":1769904000123.7297,"environment":"Xcode","storefrontId":"143441","originalTransactionId":"0",\
            "bundleId":"\(bundleId)","webOrderLineItemId":"0","storefront":"USA","offerType":1}
            """
        )
        let verified = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox(allowsLocalTesting: true))
        #expect(verified.trust == .localTesting)
        #expect(verified.payload.purchaseDate?.millisecondsSince1970 == 1_767_225_600_123)
        #expect(verified.payload.expiresDate?.millisecondsSince1970 == 1_769_904_000_123)
        #expect(verified.signedDate.millisecondsSince1970 == 1_767_225_600_456)
        #expect(verified.statesSignedDate)
        // Not where local testing is not allowed.
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .wrongEnvironment)
    }

    @Test("Xcode's renewal info, fractional dates and all")
    func xcodeRenewalInfo() async throws {
        let jws = try signedByXcode(
            """
            {"productId":"pass.premium","renewalDate":1769904000123.7297,"originalTransactionId":"0",\
            "recentSubscriptionStartDate":1767225600123.7297,"autoRenewStatus":1,"signedDate":1767225600711.0747,\
            "environment":"Xcode","autoRenewProductId":"pass.premium"}
            """
        )
        guard case .renewalInfo(let verified) = try await ca.verifier.verifyAny(jws, expecting: try sandbox(allowsLocalTesting: true)) else {
            Issue.record("not told as renewal info")
            return
        }
        #expect(verified.payload.renewalDate?.millisecondsSince1970 == 1_769_904_000_123)
        #expect(verified.signedDate.millisecondsSince1970 == 1_767_225_600_711)
    }

    @Test("an Xcode app transaction has no signedDate: its receiptCreationDate stands for it")
    func xcodeAppTransaction() async throws {
        let jws = try signedByXcode(
            """
            {"bundleId":"\(bundleId)","applicationVersion":"1","deviceVerificationNonce":"48c8b92d-ce0d-4229-bedf-e61b4f9cfc92",\
            "receiptType":"Xcode","receiptCreationDate":1767225722257.447,"deviceVerification":"c2VhYm9v",\
            "requestDate":1767225722257.447,"originalApplicationVersion":"1","originalPurchaseDate":-62135769600000}
            """
        )
        let verified = try await ca.verifier.verifyAppTransaction(jws, expecting: try sandbox(allowsLocalTesting: true))
        #expect(verified.signedDate.millisecondsSince1970 == 1_767_225_722_257)
        #expect(verified.statesSignedDate)
        #expect(verified.payload.originalPurchaseDate?.millisecondsSince1970 == -62_135_769_600_000)
    }

    @Test("a notification without signedDate is judged at the present, and refused once its leaf has expired")
    func notificationWithoutSignedDate() async throws {
        let json = """
            {"notificationType":"TEST","notificationUUID":"9ad56bd2-0bc6-42e0-af24-fd996d87a1e6",\
            "data":{"bundleId":"\(bundleId)","environment":"Sandbox"}}
            """
        let jws = try signed(json)
        let present = Date(timeIntervalSince1970: 1_790_000_000)
        let verifier = SignedDataVerifier(roots: ca.trustedRoots, now: { present })
        let verified = try await verifier.verifyNotification(jws, expecting: try sandbox())
        #expect(!verified.notification.statesSignedDate)
        #expect(verified.notification.signedDate == AppleTimestamp(present))

        let later = ca.leaf.notValidAfter.addingTimeInterval(86_400)
        let error = await refusal {
            _ = try await SignedDataVerifier(roots: ca.trustedRoots, now: { later }).verifyNotification(jws, expecting: try sandbox())
        }
        #expect(error?.code == .certificateExpired)
        #expect(error?.reason.contains("states no signedDate") == true)
    }

    @Test("minimal payloads: the kind is named by the caller, not guessed")
    func minimalPayloads() async throws {
        let renewal = try signed(#"{"environment":"Sandbox","signedDate":1767225600000}"#)
        let error = await refusal { _ = try await ca.verifier.verifyAny(renewal, expecting: .inspectOnly) }
        #expect(error?.code == .malformed)
        #expect(error?.reason.contains("--kind") == true)
        guard case .renewalInfo(let info) = try await ca.verifier.verify(renewal, as: .renewalInfo, expecting: .inspectOnly) else {
            Issue.record("not verified as renewal info")
            return
        }
        #expect(info.payload.environment == .sandbox)

        let transaction = try signed(#"{"environment":"Sandbox","bundleId":"\#(bundleId)","signedDate":1767225600000}"#)
        guard case .transaction(let verified) = try await ca.verifier.verify(transaction, as: .transaction, expecting: try sandbox()) else {
            Issue.record("not verified as a transaction")
            return
        }
        #expect(verified.payload.bundleId == bundleId)
        // The kind told from one member only that kind has.
        let told = try signed(#"{"environment":"Sandbox","bundleId":"\#(bundleId)","signedDate":1767225600000,"purchaseDate":1767225600000}"#)
        if case .transaction = try await ca.verifier.verifyAny(told, expecting: try sandbox()) {
        } else {
            Issue.record("a purchaseDate tells a transaction")
        }
        #expect(SignedPayloadKind(rawValue: "renewal-info") == .renewalInfo)
        #expect(SignedPayloadKind(rawValue: "app-transaction") == .appTransaction)
    }

    @Test(
        "a refusal names the field and what is wrong with it",
        arguments: [
            (
                #"{"transactionId":2000000184445477,"bundleId":"it.seaboo.app","environment":"Sandbox","signedDate":1767225600000}"#,
                "transactionId: expected a string"
            ),
            (#"{"transactionId":"1","quantity":1.5,"bundleId":"it.seaboo.app","environment":"Sandbox","signedDate":1767225600000}"#, "quantity"),
            (
                #"{"transactionId":"1","purchaseDate":"2026-01-01","bundleId":"it.seaboo.app","environment":"Sandbox","signedDate":1767225600000}"#,
                "purchaseDate: expected a whole number"
            ),
            (
                #"{"transactionId":"1","purchaseDate":1e300,"bundleId":"it.seaboo.app","environment":"Sandbox","signedDate":1767225600000}"#,
                "purchaseDate: 1e+300 is not a millisecond timestamp"
            ),
            (#"["transactionId"]"#, "payload is JSON but not an object"),
        ]
    )
    func reasons(json: String, expected: String) async throws {
        let jws = try signed(json)
        let error = await refusal { _ = try await ca.verifier.verifyAny(jws, expecting: .inspectOnly) }
        #expect(error?.code == .malformed)
        #expect(error?.reason.contains(expected) == true, "\(error?.reason ?? "accepted")")
        #expect(error?.reason.contains("not JSON") == false)
    }
}

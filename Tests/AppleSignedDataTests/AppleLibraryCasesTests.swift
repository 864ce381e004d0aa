import AppleSignedData
import Foundation
import TestKit
import Testing

/// The cases of Apple's own App Store Server Library tests (payload verification and Xcode-signed
/// data) that Berth can express, re-made with TestKit: the same payloads and expectations, Berth's
/// codes where Apple's library has its statuses (VERIFICATION_FAILURE, INVALID_ENVIRONMENT,
/// INVALID_APP_IDENTIFIER).
@Suite("Apple's library cases")
struct AppleLibraryCasesTests {
    let ca: TestCA
    /// Apple's fixtures were signed in 2023: a CA of that time, and a verifier whose present is then
    /// (for the payloads without signedDate).
    let verifier: SignedDataVerifier
    static let then = Date(timeIntervalSince1970: 1_681_314_324)

    init() throws {
        ca = try TestCA.generate(.init(now: Self.then))
        verifier = SignedDataVerifier(roots: ca.trustedRoots, now: { Self.then })
    }

    func signed(_ json: String) throws -> String { try ca.signJWS(payloadBytes: Data(json.utf8)) }

    func expecting(_ environment: AppStoreEnvironment, bundle: String = "com.example", appAppleId: Int64? = nil) throws -> AppExpectations {
        try AppExpectations(bundleId: bundle, appAppleId: appAppleId, environment: environment)
    }

    static let testNotification = """
        {"data":{"appAppleId":1234,"environment":"Sandbox","bundleId":"com.example"},"notificationUUID":"9ad56bd2-0bc6-42e0-af24-fd996d87a1e6",\
        "signedDate":1681314324000,"notificationType":"TEST"}
        """

    @Test("a TEST notification decodes; with Production expectations it is the wrong environment")
    func testNotification() async throws {
        let jws = try signed(Self.testNotification)
        let verified = try await verifier.verifyNotification(jws, expecting: try expecting(.sandbox))
        #expect(verified.payload.notificationType == .test)
        #expect(
            await rejectionCode { _ = try await verifier.verifyNotification(jws, expecting: try expecting(.production, appAppleId: 1234)) }
                == .wrongEnvironment
        )
    }

    @Test("a notification without x5c fails verification")
    func missingX5C() async throws {
        let jws = try ca.signNotification(type: .test, bundleId: "com.example", signedTransactionInfo: nil, signedRenewalInfo: nil)
        let bare = try ca.signJWS(
            payloadBytes: Data(try #require(Base64URL.decode(jws.split(separator: ".")[1]))),
            headerBytes: Data(#"{"alg":"ES256","typ":"JWT"}"#.utf8)
        )
        #expect(await rejectionCode { _ = try await verifier.verifyNotification(bare, expecting: try expecting(.sandbox)) } == .badChain)
    }

    @Test("a notification for another bundle, without signedDate, is refused for its app")
    func wrongBundle() async throws {
        let jws = try signed(
            #"{"data":{"bundleId":"com.example.wrong"},"notificationUUID":"9ad56bd2-0bc6-42e0-af24-fd996d87a1e6","notificationType":"TEST"}"#
        )
        #expect(
            await rejectionCode { _ = try await verifier.verifyNotification(jws, expecting: try expecting(.sandbox, bundle: "com.examplex")) }
                == .wrongBundle
        )
    }

    @Test("a Production notification of another App Store app id is refused for its app")
    func wrongAppAppleId() async throws {
        let jws = try signed(Self.testNotification.replacingOccurrences(of: "Sandbox", with: "Production"))
        #expect(
            await rejectionCode { _ = try await verifier.verifyNotification(jws, expecting: try expecting(.production, appAppleId: 1235)) }
                == .wrongAppAppleId
        )
    }

    @Test("minimal renewal info and transaction info decode when their kind is named")
    func minimalPayloads() async throws {
        let renewal = try signed(#"{"environment":"Sandbox","signedDate":1672956154000}"#)
        #expect(try await verifier.verifyRenewalInfo(renewal, expecting: try expecting(.sandbox)).payload.environment == .sandbox)
        let transaction = try signed(#"{"environment":"Sandbox","bundleId":"com.example","signedDate":1672956154000}"#)
        #expect(try await verifier.verifyTransaction(transaction, expecting: try expecting(.sandbox)).payload.environment == .sandbox)
    }

    @Test("a JWT of too many parts, or of malformed data, fails verification", arguments: ["a.b.c.d", "a.b.c"])
    func malformed(text: String) async throws {
        #expect(await rejectionCode { _ = try await verifier.verifyNotification(text, expecting: try expecting(.sandbox)) } == .malformed)
    }

    @Test("Xcode's app transaction is refused where Production is expected")
    func xcodeForProduction() async throws {
        let xcode = try TestCA.generate(.init(commonNamePrefix: "StoreKit Testing in Xcode"))
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "typ": "JWT", "x5c": [try xcode.leaf.derBase64()]])
        let jws = try xcode.signJWS(
            payloadBytes: Data(
                #"{"bundleId":"com.example","receiptType":"Xcode","receiptCreationDate":1697680122257.447,"applicationVersion":"1"}"#.utf8
            ),
            headerBytes: header
        )
        #expect(
            await rejectionCode { _ = try await verifier.verifyAppTransaction(jws, expecting: try expecting(.production, appAppleId: 1)) }
                == .wrongEnvironment
        )
        let allowed = try AppExpectations(bundleId: "com.example", appAppleId: nil, environment: .sandbox, allowsLocalTesting: true)
        #expect(try await verifier.verifyAppTransaction(jws, expecting: allowed).payload.receiptType == .xcode)
    }
}

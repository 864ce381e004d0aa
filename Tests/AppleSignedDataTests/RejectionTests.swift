import AppleSignedData
import Foundation
import TestKit
import Testing
import X509

@Suite("Rejections of TestKit-made data")
struct RejectionTests {
    let ca: TestCA
    let now = Date()

    init() throws {
        ca = try TestCA.generate()
    }

    func purchase(environment: AppStoreEnvironment = .sandbox, bundle: String = bundleId, signedDate: Date? = nil) -> TransactionPayload {
        .testPurchase(bundleId: bundle, productId: "it.seaboo.rental.basic", environment: environment, signedDate: signedDate)
    }

    @Test("a well-formed TestKit purchase verifies when its root is trusted")
    func acceptsTrustedTestData() async throws {
        let payload = purchase()
        let verified = try await ca.verifier.verifyTransaction(try ca.signTransaction(payload), expecting: try sandbox())
        #expect(verified.payload == payload)
        #expect(verified.payload.productId == "it.seaboo.rental.basic")
    }

    @Test("signed JSON that names a member twice is refused (checked on one value, shown with the other otherwise); so is nesting past 32")
    func duplicateMembers() async throws {
        let genuine = try JSONEncoder().encode(purchase())
        var text = try #require(String(data: genuine, encoding: .utf8))
        #expect(try await ca.verifier.verifyTransaction(try ca.signJWS(payloadBytes: genuine), expecting: try sandbox()).payload.bundleId == bundleId)
        // A second bundleId after the genuine one, then one spelled with an escape.
        for duplicate in [#""bundleId":"com.evil.app","#, #""bundle\u0049d":"com.evil.app","#] {
            text.removeFirst()
            let forged = "{" + duplicate + text
            text = "{" + text
            await #expect(throws: SignedDataError.self) {
                _ = try await ca.verifier.verifyTransaction(try ca.signJWS(payloadBytes: Data(forged.utf8)), expecting: try sandbox())
            }
        }
        let duplicateHeader = Data(#"{"alg":"ES256","alg":"none","x5c":[]}"#.utf8)
        await #expect(throws: SignedDataError.self) {
            _ = try await ca.verifier.verifyTransaction(try ca.signJWS(payloadBytes: genuine, headerBytes: duplicateHeader), expecting: try sandbox())
        }
        #expect(throws: StrictJSON.Problem.duplicateKey) { try StrictJSON.check(Data(#"{"a":1,"b":{"c":2,"c":3}}"#.utf8)) }
        #expect(throws: StrictJSON.Problem.duplicateKey) { try StrictJSON.check(Data(#"{"a":1,"\u0061":2}"#.utf8)) }
        #expect(throws: StrictJSON.Problem.tooDeep) {
            try StrictJSON.check(Data((String(repeating: "[", count: 40) + String(repeating: "]", count: 40)).utf8))
        }
        #expect(throws: StrictJSON.Problem.malformed) { try StrictJSON.check(Data(#"{"a":1,}"#.utf8)) }
        #expect(throws: StrictJSON.Problem.malformed) { try StrictJSON.check(Data(#"{"a":"\ud800"}"#.utf8)) }
        try StrictJSON.check(Data(#" {"a":[1,-2.5e3,true,false,null,"\ud83d\ude00\n"],"b":{}} "#.utf8))
        try StrictJSON.check(Data(String(repeating: "[", count: 31).utf8) + Data(String(repeating: "]", count: 31).utf8))
    }

    @Test("a signature by another key is refused")
    func badSignature() async throws {
        let impostor = try ca.withNewLeaf()
        // Signed by the impostor's leaf, but presenting the genuine leaf in x5c.
        let jws = try impostor.signTransaction(purchase(), header: .init(chain: .custom(try ca.x5c)))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .badSignature)
    }

    @Test("a signature of the wrong length is refused")
    func truncatedSignature() async throws {
        let jws = tamper(try ca.signTransaction(purchase()), part: 2) { $0.removeLast() }
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .badSignature)
    }

    @Test("any algorithm but ES256 is refused", arguments: ["RS256", "ES384", "HS256", "none", "es256"])
    func wrongAlgorithm(alg: String) async throws {
        let jws = try ca.signTransaction(purchase(), header: .init(alg: alg))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .unsupportedAlgorithm)
    }

    @Test("x5c must be present and exactly leaf, intermediate, root", arguments: [0, 1, 2, 4])
    func wrongChainLength(count: Int) async throws {
        let full = try ca.x5c
        let entries = count <= 3 ? Array(full.prefix(count)) : full + [full[2]]
        let jws = try ca.signTransaction(purchase(), header: .init(chain: .custom(entries)))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .badChain)
    }

    @Test("a missing x5c header is refused")
    func missingChain() async throws {
        let jws = try ca.signTransaction(purchase(), header: .init(chain: .omitted))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .badChain)
    }

    @Test("x5c entries that are not certificates are refused")
    func garbageChain() async throws {
        let jws = try ca.signTransaction(purchase(), header: .init(chain: .custom(["bm90IGEgY2VydA==", "%%%", try ca.x5c[2]])))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .badChain)
    }

    @Test("a chain to an unknown root is refused")
    func unknownRoot() async throws {
        let stranger = try TestCA.generate()
        let jws = try stranger.signTransaction(purchase())
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .untrustedRoot)
    }

    @Test("the root inside the header is not trusted just for being there")
    func headerRootNotTrusted() async throws {
        // Genuine leaf and intermediate, but a self-made root in the header.
        let stranger = try TestCA.generate()
        let x5c = try ca.x5c
        let swapped = try ca.signTransaction(purchase(), header: .init(chain: .custom([x5c[0], x5c[1], try stranger.root.derBase64()])))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(swapped, expecting: try sandbox()) } == .untrustedRoot)

        // A rogue leaf and intermediate dressed up with the trusted root in the header.
        let rogue = try stranger.x5c
        let dressed = try stranger.signTransaction(purchase(), header: .init(chain: .custom([rogue[0], rogue[1], x5c[2]])))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(dressed, expecting: try sandbox()) } == .untrustedRoot)
    }

    @Test("a leaf not issued by the intermediate is refused")
    func brokenLink() async throws {
        let stranger = try TestCA.generate()
        let x5c = try ca.x5c
        // The stranger's leaf (it signs) with the trusted intermediate and root: the link leaf→intermediate fails.
        let jws = try stranger.signTransaction(purchase(), header: .init(chain: .custom([try stranger.leaf.derBase64(), x5c[1], x5c[2]])))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .badChain)
    }

    @Test("an intermediate without Apple's WWDR OID is refused")
    func intermediateWithoutOID() async throws {
        var options = TestCA.Options()
        options.intermediateHasAppleOID = false
        let broken = try ca.withNewIntermediate(options)
        let jws = try broken.signTransaction(purchase())
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .missingAppleOID)
    }

    @Test("a leaf without Apple's receipt-signing OID is refused")
    func leafWithoutOID() async throws {
        let broken = try ca.withNewLeaf(appleOID: false)
        let jws = try broken.signTransaction(purchase())
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .missingAppleOID)
    }

    @Test("a leaf expired at signedDate is refused")
    func expiredLeaf() async throws {
        let day: TimeInterval = 86_400
        let old = try ca.withNewLeaf(validity: now.addingTimeInterval(-30 * day)...now.addingTimeInterval(-day))
        let jws = try old.signTransaction(purchase(signedDate: now))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .certificateExpired)
        // The same leaf was fine when it signed inside its validity.
        let inTime = try old.signTransaction(purchase(signedDate: now.addingTimeInterval(-2 * day)))
        _ = try await ca.verifier.verifyTransaction(inTime, expecting: try sandbox())
    }

    @Test("a leaf not yet valid at signedDate is refused")
    func notYetValidLeaf() async throws {
        let day: TimeInterval = 86_400
        let future = try ca.withNewLeaf(validity: now.addingTimeInterval(day)...now.addingTimeInterval(30 * day))
        let jws = try future.signTransaction(purchase(signedDate: now))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .certificateNotYetValid)
    }

    @Test("an intermediate expired at signedDate is refused")
    func expiredIntermediate() async throws {
        let day: TimeInterval = 86_400
        var options = TestCA.Options(now: now)
        options.intermediateValidity = now.addingTimeInterval(-300 * day)...now.addingTimeInterval(-day)
        options.leafValidity = now.addingTimeInterval(-300 * day)...now.addingTimeInterval(300 * day)
        let broken = try ca.withNewIntermediate(options)
        let jws = try broken.signTransaction(purchase(signedDate: now))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .certificateExpired)
    }

    @Test(
        "malformed input is refused as malformed",
        arguments: [
            "", "abc", "a.b", "a.b.c.d", "!!!.???.***", "eyJhbGciOiJFUzI1NiJ9..", "eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.AAAA",
            "bm90IGpzb24.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.AAAA",
        ]
    )
    func malformed(text: String) async throws {
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(text, expecting: try sandbox()) } == .malformed)
    }

    @Test("a payload of the wrong JSON types is malformed; one without signedDate is judged at the present, as Apple's libraries do")
    func malformedPayloads() async throws {
        struct Wrong: Encodable {
            let transactionId = 12
            let signedDate = 1_700_000_000_000
        }
        struct Undated: Encodable {
            let transactionId = "1"
            let bundleId = "it.seaboo.app"
            let environment = "Sandbox"
        }
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(try ca.signJWS(Wrong()), expecting: try sandbox()) } == .malformed)
        let undated = try await ca.verifier.verifyTransaction(try ca.signJWS(Undated()), expecting: try sandbox())
        #expect(!undated.statesSignedDate)
        #expect(abs(undated.signedDate.date.timeIntervalSinceNow) < 3600)
    }

    @Test("data for another bundle id is refused")
    func wrongBundle() async throws {
        let jws = try ca.signTransaction(purchase(bundle: "com.example.other"))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .wrongBundle)
    }

    @Test("data from another environment is refused")
    func wrongEnvironment() async throws {
        let jws = try ca.signTransaction(purchase(environment: .production))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .wrongEnvironment)
        let sandboxData = try ca.signTransaction(purchase(environment: .sandbox))
        let production = try AppExpectations(bundleId: bundleId, appAppleId: 123, environment: .production)
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(sandboxData, expecting: production) } == .wrongEnvironment)
    }

    @Test("Xcode data is refused unless explicitly allowed", arguments: [AppStoreEnvironment.xcode, .localTesting])
    func localTestingData(environment: AppStoreEnvironment) async throws {
        // Xcode signs with its own self-signed certificate, one entry in x5c.
        let xcode = try TestCA.generate(.init(commonNamePrefix: "StoreKit Testing in Xcode"))
        let jws = try xcode.signTransaction(purchase(environment: environment), header: .init(chain: .custom([try xcode.leaf.derBase64()])))
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox()) } == .wrongEnvironment)
        #expect(await rejectionCode { _ = try await ca.verifier.verifyTransaction(jws, expecting: .inspectOnly) } == .wrongEnvironment)

        let verified = try await ca.verifier.verifyTransaction(jws, expecting: try sandbox(allowsLocalTesting: true))
        #expect(verified.trust == .localTesting)
        #expect(verified.payload.environment == environment)

        // Even when allowed, the signature must hold.
        let forged = tamper(jws, part: 2) { $0[0] ^= 0xFF }
        #expect(
            await rejectionCode { _ = try await ca.verifier.verifyTransaction(forged, expecting: try sandbox(allowsLocalTesting: true)) }
                == .badSignature
        )
    }

    @Test("Production expectations need appAppleId and never allow local testing")
    func productionExpectations() throws {
        #expect(throws: SignedDataError(.missingAppAppleId, "Production expectations need the app's appAppleId")) {
            _ = try AppExpectations(bundleId: bundleId, appAppleId: nil, environment: .production)
        }
        let error = #expect(throws: SignedDataError.self) {
            _ = try AppExpectations(bundleId: bundleId, appAppleId: 1, environment: .production, allowsLocalTesting: true)
        }
        #expect(error?.code == .wrongEnvironment)
        #expect(try AppExpectations(bundleId: bundleId, appAppleId: 1, environment: .production).appAppleId == 1)
    }

    @Test("values Apple adds later are kept, not rejected")
    func unknownEnumValuesKept() async throws {
        var payload = purchase()
        payload.type = TransactionType(rawValue: "Future-Kind")
        payload.offerType = OfferType(rawValue: 99)
        payload.transactionReason = TransactionReason(rawValue: "GIFT")
        let verified = try await ca.verifier.verifyTransaction(try ca.signTransaction(payload), expecting: try sandbox())
        #expect(verified.payload.type?.rawValue == "Future-Kind")
        #expect(verified.payload.offerType?.rawValue == 99)
        #expect(verified.payload.transactionReason == TransactionReason(rawValue: "GIFT"))

        let notification = NotificationPayload(
            notificationType: NotificationType(rawValue: "SOMETHING_NEW"),
            subtype: NotificationSubtype(rawValue: "NEWER"),
            notificationUUID: UUID().uuidString,
            data: NotificationData(environment: .sandbox, bundleId: bundleId),
            version: "2.0",
            signedDate: AppleTimestamp(now)
        )
        let verifiedNotification = try await ca.verifier.verifyNotification(try ca.signNotification(notification), expecting: try sandbox())
        #expect(verifiedNotification.payload.notificationType?.rawValue == "SOMETHING_NEW")
        #expect(verifiedNotification.payload.subtype?.rawValue == "NEWER")
    }
}

import AppleSignedData
import BerthApp
import Domain
import Foundation
import GooglePlayAPI
import HTTPAPI
import HTTPTypes
import Hummingbird
import JWTKit
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import TestKit
import UseCases

/// The parsers that face hostile bytes, each as a function of one input. libFuzzer drives them
/// when the target is built with `-sanitize=fuzzer -D FUZZING` (scripts/fuzz); otherwise
/// `berth-fuzz replay` runs saved inputs through them (the regression corpus in fuzz/regressions)
/// and `berth-fuzz seed` writes starting inputs from TestKit output and Apple's samples.
///
/// A finding is a trap (the process dies) or, for `http`, an answer of 500: every hostile request
/// must get a 4xx (or 503 when storage is down, which it is not here).
enum FuzzTarget: String, CaseIterable {
    /// A compact JWS through the whole Apple verification pipeline (header, strict JSON, payload types, chain).
    case jws
    /// A receipt (PKCS#7 and the ASN.1 payload), as DER.
    case receipt
    /// The strict JSON scanner, alone.
    case json
    /// A user token through jwt-kit with Berth's claims (``UserClaims``, the Authenticator's).
    case jwt
    /// A request body to one of Berth's routes (first byte picks the route), through the real router.
    case http
    /// What Google sends Berth, parsed as Berth parses it: the first line a push's bearer token, the
    /// rest a Pub/Sub push body, a Play purchase answer or a subscription answer (then read into facts).
    case play

    func run(_ bytes: [UInt8]) {
        switch self {
        case .jws:
            let text = String(decoding: bytes, as: UTF8.self)
            Blocking.run { _ = try? await Fixtures.shared.verifier.verifyAny(text, expecting: Fixtures.shared.expectations) }
        case .receipt:
            Blocking.run { _ = try? await Fixtures.shared.receiptVerifier.verify(der: bytes, expecting: Fixtures.shared.expectations) }
        case .json:
            try? StrictJSON.check(Data(bytes))
        case .jwt:
            let text = String(decoding: bytes, as: UTF8.self)
            Blocking.run { _ = try? await Fixtures.shared.userKeys.verify(text, as: UserClaims.self) }
        case .http:
            HTTPFuzzing.shared.send(bytes)
        case .play:
            PlayParsing.run(bytes)
        }
    }
}

/// Runs async work to completion from a synchronous caller (libFuzzer's callback).
enum Blocking {
    static func run(_ work: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task {
            await work()
            done.signal()
        }
        done.wait()
    }
}

/// Verifiers built once: Apple's roots plus a TestKit CA (so signed seeds get past the chain).
final class Fixtures: Sendable {
    static let shared: Fixtures = {
        do { return try Fixtures() } catch { fatalError("fuzz fixtures: \(error)") }
    }()

    let ca: TestCA
    let receiptCA: TestReceiptCA
    let verifier: SignedDataVerifier
    let receiptVerifier: ReceiptVerifier
    let expectations: AppExpectations
    let userKeys: JWTKeyCollection

    init() throws {
        ca = try TestCA.generate()
        receiptCA = try TestReceiptCA.generate()
        verifier = SignedDataVerifier(roots: try TrustedRoots.apple().adding([ca.root]))
        receiptVerifier = ReceiptVerifier(roots: try TrustedRoots.apple().adding([receiptCA.root]))
        expectations = try AppExpectations(
            bundleId: "it.seaboo.app",
            appAppleId: 1_234_567_890,
            environments: [.sandbox, .production],
            allowsLocalTesting: false
        )
        userKeys = JWTKeyCollection()
        let keys = userKeys
        Blocking.run { await keys.add(hmac: HMACKey(from: "fuzz-secret-0123456789abcdef-0123456789"), digestAlgorithm: .sha256) }
    }
}

/// A clock that moves 10 s at every reading, so rate limits refill and every input reaches its route.
final class AdvancingClock: BerthClock {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    func now() -> Date {
        current.withLock {
            $0 = $0.addingTimeInterval(10)
            return $0
        }
    }
}

/// The Google Play parsers of the `play` target.
enum PlayParsing {
    static let product = Product(id: "com.example.credits", kind: .subscription, type: "Auto-Renewable Subscription", title: "Premium")

    static func run(_ bytes: [UInt8]) {
        let newline = bytes.firstIndex(of: 0x0A) ?? bytes.endIndex
        let token = String(decoding: bytes[..<newline], as: UTF8.self)
        let body = Data(bytes[min(newline + 1, bytes.endIndex)...])
        _ = RS256JWT.parts(token).map { $0.kid }
        let decoder = JSONDecoder()
        if let push = try? decoder.decode(PubSubPush.self, from: body), let data = push.message?.data.flatMap({ Data(base64Encoded: $0) }) {
            _ = (try? decoder.decode(DeveloperNotification.self, from: data))?.purchaseToken
            _ = push.message?.publishTime.flatMap(RFC3339.date)
        }
        if let purchase = try? decoder.decode(ProductPurchase.self, from: body) { _ = purchase.purchasedAt }
        if let subscription = try? decoder.decode(SubscriptionPurchaseV2.self, from: body) {
            _ = PlayProofs.facts(subscription, token: "fuzz-token", product: product, now: Date(), revoked: bytes.count % 2 == 0)
        }
        if let page = try? decoder.decode(VoidedPurchasesPage.self, from: body) { _ = page.voidedPurchases?.map(\.voidedAt) }
        _ = try? ServiceAccount(json: body)
    }
}

import AppleSignedData
import Foundation
import GooglePlayAPI
import HTTPAPI
import JWTKit
import Synchronization
import TestKit

#if FUZZING
/// The target libFuzzer drives, named by `BERTH_FUZZ_TARGET`.
let fuzzTarget: FuzzTarget = {
    guard let name = ProcessInfo.processInfo.environment["BERTH_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
        fatalError("set BERTH_FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    fuzzTarget.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// libFuzzer's driver, entered from this executable's own entry point (SwiftPM names the entry of
/// an executable target `<module>_main`, so libFuzzer's `main` is not the one the program starts in).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("BerthFuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzOne(data, size) }
}
#else
/// `BerthFuzz replay TARGET PATH...`: runs saved inputs (files, or every file of folders) through
/// a target; a trap or a 500 ends the process. `BerthFuzz mutate TARGET SECONDS PATH...`: random
/// mutations of those inputs for that long, without libFuzzer's coverage (``Mutator``).
/// `BerthFuzz seed DIR`: writes starting inputs for every target under DIR/<target>/.
@main
struct BerthFuzzCommand {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case "replay" where arguments.count >= 2:
            guard let target = FuzzTarget(rawValue: arguments[1]) else { fail("unknown target \(arguments[1])") }
            var count = 0
            for path in arguments.dropFirst(2) {
                for file in try files(at: URL(fileURLWithPath: path)) {
                    target.run(Array(try Data(contentsOf: file)))
                    count += 1
                }
            }
            print("\(target.rawValue): \(count) input(s) replayed, no crash")
        case "mutate" where arguments.count >= 4:
            guard let target = FuzzTarget(rawValue: arguments[1]) else { fail("unknown target \(arguments[1])") }
            guard let seconds = Int(arguments[2]), seconds > 0, seconds <= 86_400 else { fail("seconds must be 1 to 86400") }
            var corpus: [[UInt8]] = []
            for path in arguments.dropFirst(3) {
                for file in try files(at: URL(fileURLWithPath: path)) { corpus.append(Array(try Data(contentsOf: file))) }
            }
            let seed = ProcessInfo.processInfo.environment["BERTH_FUZZ_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
            let current = ProcessInfo.processInfo.environment["BERTH_FUZZ_CURRENT"]
            let runs = Mutator.run(target, corpus: corpus, seconds: seconds, seed: seed, current: current)
            print("\(target.rawValue): \(runs) mutated inputs in \(seconds) s (seed \(seed)), no crash")
        case "seed" where arguments.count == 2:
            let written = try Seeds.write(to: URL(fileURLWithPath: arguments[1]))
            print("wrote \(written) seed(s) under \(arguments[1])")
        default:
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
            fail("usage: BerthFuzz replay <\(names)> PATH... | BerthFuzz mutate <\(names)> SECONDS PATH... | BerthFuzz seed DIR")
        }
    }

    static func files(at url: URL) throws -> [URL] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [url] }
        return try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }.sorted { $0.path < $1.path }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(2)
    }
}
#endif

/// Starting inputs: what TestKit signs, Apple's genuine samples (Tests/Fixtures) and the contract's
/// example request bodies, per target.
enum Seeds {
    typealias Seed = (target: FuzzTarget, name: String, data: Data)

    static func write(to directory: URL) throws -> Int {
        let repository = URL(
            fileURLWithPath: ProcessInfo.processInfo.environment["BERTH_FUZZ_REPOSITORY"] ?? FileManager.default.currentDirectoryPath
        )
        let (apple, jws, notification) = try appleSeeds(repository: repository)
        let seeds = apple + [tokenSeed()] + (try httpSeeds(repository: repository, jws: jws, notification: notification)) + (try playSeeds())
        for (target, name, data) in seeds {
            let folder = directory.appendingPathComponent(target.rawValue)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try data.write(to: folder.appendingPathComponent(name))
        }
        return seeds.count
    }

    /// Signed transactions, notifications and receipts: TestKit's and Apple's genuine samples; also
    /// the signed purchase and notification the http seeds carry.
    static func appleSeeds(repository: URL) throws -> (seeds: [Seed], jws: String, notification: String) {
        var seeds: [Seed] = []
        let ca = Fixtures.shared.ca
        let purchase = TransactionPayload.testPurchase(bundleId: "it.seaboo.app", productId: "it.seaboo.rental.basic")
        let jws = try ca.signTransaction(purchase)
        let notification = try ca.signNotification(type: .refund, bundleId: "it.seaboo.app", transaction: purchase)
        seeds.append((.jws, "testkit-transaction", Data(jws.utf8)))
        seeds.append((.jws, "testkit-notification", Data(notification.utf8)))
        seeds.append((.json, "transaction-payload", try JSONEncoder().encode(purchase)))
        let fixtures = repository.appendingPathComponent("Tests/Fixtures")
        for file in (try? FileManager.default.contentsOfDirectory(at: fixtures, includingPropertiesForKeys: nil)) ?? [] {
            let data = try Data(contentsOf: file)
            switch file.pathExtension {
            case "jws": seeds.append((.jws, file.lastPathComponent, data))
            case "b64":
                let text = String(decoding: data, as: UTF8.self).filter { !$0.isWhitespace }
                if let der = Data(base64Encoded: text) { seeds.append((.receipt, file.lastPathComponent, der)) }
            default: break
            }
        }
        var entry = AppReceipt.InAppPurchase()
        entry.quantity = 1
        entry.productId = "it.seaboo.rental.basic"
        entry.transactionId = "2000000000000001"
        entry.purchaseDate = AppleTimestamp(Date())
        let receipt = AppReceipt(
            receiptType: "ProductionSandbox",
            bundleId: "it.seaboo.app",
            creationDate: AppleTimestamp(Date()),
            inAppPurchases: [entry]
        )
        seeds.append((.receipt, "testkit-receipt", Data(try Fixtures.shared.receiptCA.signReceipt(receipt))))
        return (seeds, jws, notification)
    }

    /// A user token signed with HS256.
    static func tokenSeed() -> Seed {
        let keys = JWTKeyCollection()
        let signed = Mutex("")
        Blocking.run {
            await keys.add(hmac: HMACKey(from: "fuzz-secret-0123456789abcdef-0123456789"), digestAlgorithm: .sha256)
            let token =
                (try? await keys.sign(
                    UserClaims(
                        sub: .init(value: "ana"),
                        iss: .init(value: "https://auth.seaboo.test"),
                        aud: .init(value: ["berth"]),
                        exp: .init(value: Date().addingTimeInterval(3600))
                    )
                )) ?? ""
            signed.withLock { $0 = token }
        }
        let token = signed.withLock { $0 }
        return (.jwt, "hs256", Data(token.utf8))
    }

    /// Each route of the http target with the contract's request bodies and a signed purchase.
    static func httpSeeds(repository: URL, jws: String, notification: String) throws -> [Seed] {
        var seeds: [Seed] = []
        let examples = repository.appendingPathComponent("contract/examples")
        var bodies: [Data] = [
            Data(#"{"productId":"it.seaboo.rental.basic","jwsRepresentation":"\#(jws)","bookingId":1}"#.utf8),
            Data(#"{"signedPayload":"\#(notification)"}"#.utf8),
        ]
        for file in (try? FileManager.default.contentsOfDirectory(at: examples, includingPropertiesForKeys: nil)) ?? []
        where file.lastPathComponent.contains("Request") {
            bodies.append(try Data(contentsOf: file))
        }
        for (index, body) in bodies.enumerated() {
            for route in 0..<14 where (index + route) % 3 == 0 || index < 2 {
                seeds.append((.http, "route\(route)-body\(index)", Data([UInt8(route)]) + body))
            }
        }
        return seeds
    }

    /// What Google sends: a push (token line + body), purchase and subscription answers, a voided page.
    static func playSeeds() throws -> [Seed] {
        var seeds: [Seed] = []
        let playNotification = DeveloperNotification.subscriptionNotificationSeed
        let push = PubSubPush(
            message: .init(
                data: try JSONEncoder().encode(playNotification).base64EncodedString(),
                messageId: "1234567890",
                publishTime: "2026-11-27T10:00:00.123Z"
            ),
            subscription: "projects/p/subscriptions/s"
        )
        let header = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImFiYyIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJodHRwczovL2FjY291bnRzLmdvb2dsZS5jb20iLCJhdWQiOiJhIn0.c2ln\n"
        seeds.append((.play, "push", Data(header.utf8) + (try JSONEncoder().encode(push))))
        let item = SubscriptionPurchaseV2.LineItem(
            productId: "com.example.credits",
            expiryTime: "2027-01-01T00:00:00.5Z",
            autoRenewingPlan: .init(autoRenewEnabled: true),
            offerDetails: .init(basePlanId: "monthly"),
            latestSuccessfulOrderId: "GPA.1..2"
        )
        let subscription = SubscriptionPurchaseV2(
            lineItems: [item],
            startTime: "2026-01-01T00:00:00Z",
            subscriptionState: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD",
            latestOrderId: "GPA.1..2",
            testPurchase: [:]
        )
        seeds.append((.play, "subscription", Data("\n".utf8) + (try JSONEncoder().encode(subscription))))
        seeds.append(
            (
                .play, "product",
                Data("\n".utf8) + (try JSONEncoder().encode(ProductPurchase(purchaseTimeMillis: "1795000000000", orderId: "GPA.2", productId: "x")))
            )
        )
        seeds.append(
            (
                .play, "voided",
                Data("\n".utf8)
                    + (try JSONEncoder().encode(
                        VoidedPurchasesPage(
                            voidedPurchases: [
                                VoidedPurchase(
                                    purchaseToken: "t",
                                    purchaseTimeMillis: "1",
                                    voidedTimeMillis: "2",
                                    orderId: "o"
                                )
                            ],
                            nextPageToken: "n"
                        )
                    ))
            )
        )
        return seeds
    }
}

extension DeveloperNotification {
    /// A renewal of a subscription, as a seed.
    static var subscriptionNotificationSeed: DeveloperNotification {
        var notification = DeveloperNotification(packageName: "com.example.app", eventTime: Date(timeIntervalSince1970: 1_795_000_000))
        notification.subscriptionNotification = .init(notificationType: 2, purchaseToken: "token", subscriptionId: "com.example.credits")
        return notification
    }
}

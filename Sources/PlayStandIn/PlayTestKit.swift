import Crypto
import Foundation
import GooglePlayAPI
import _CryptoExtras

/// A Play TestKit directory: the service account Berth calls Google with, the key that signs
/// Pub/Sub push tokens, and the purchases the stand-in knows (one JSON file each, so that the CLI
/// and a running stand-in share them). `berth testkit play init|serve|purchase|notify` work on it.
public struct PlayTestKit: Sendable {
    public let directory: URL
    public let account: ServiceAccount
    public let pushKey: _RSA.Signing.PrivateKey

    /// The push subscription's service account (the `email` claim of push tokens) unless told otherwise.
    public static let pushServiceAccountEmail = "play-push@berth-testkit.iam.gserviceaccount.com"
    public static let issuer = "https://accounts.google.com"

    /// Creates a directory's keys (RSA 2048), keeping any that exist.
    public static func initialize(_ directory: URL) throws -> PlayTestKit {
        let files = FileManager.default
        try files.createDirectory(at: directory.appendingPathComponent("purchases"), withIntermediateDirectories: true)
        let accountFile = directory.appendingPathComponent("service-account.json")
        if !files.fileExists(atPath: accountFile.path) {
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let id = SHA256.hash(data: Data(key.publicKey.pemRepresentation.utf8)).hex.prefix(40)
            let account = ServiceAccount(
                clientEmail: "berth-play@berth-testkit.iam.gserviceaccount.com",
                privateKeyId: String(id),
                tokenURI: ServiceAccount.defaultTokenURI,
                projectId: "berth-testkit",
                privateKey: key
            )
            try account.json().write(to: accountFile, options: .atomic)
        }
        let pushFile = directory.appendingPathComponent("push-signing-key.pem")
        if !files.fileExists(atPath: pushFile.path) {
            try Data(try _RSA.Signing.PrivateKey(keySize: .bits2048).pkcs8PEMRepresentation.utf8).write(to: pushFile, options: .atomic)
        }
        return try PlayTestKit(directory)
    }

    public init(_ directory: URL) throws {
        self.directory = directory
        do {
            account = try ServiceAccount(json: try Data(contentsOf: directory.appendingPathComponent("service-account.json")))
        } catch {
            throw TestKitFailure("\(directory.path) holds no usable service-account.json (run `berth testkit play init \(directory.path)`): \(error)")
        }
        guard let pem = try? String(contentsOf: directory.appendingPathComponent("push-signing-key.pem"), encoding: .utf8),
            let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem)
        else {
            throw TestKitFailure("\(directory.path) holds no push-signing-key.pem (run `berth testkit play init \(directory.path)`)")
        }
        pushKey = key
    }

    /// The push key's id in the JWKS.
    public var pushKeyId: String { SHA256.hash(data: Data(pushKey.publicKey.pemRepresentation.utf8)).hex.prefix(16).description }

    /// The JWKS that publishes the push key (what Google serves at /oauth2/v3/certs).
    public func jwks() throws -> Data {
        let primitives = try pushKey.publicKey.getKeyPrimitives()
        let key: [String: String] = [
            "kty": "RSA", "alg": "RS256", "use": "sig", "kid": pushKeyId,
            "n": Base64URL.encode(primitives.modulus), "e": Base64URL.encode(primitives.publicExponent),
        ]
        return try JSONEncoder().encode(["keys": [key]])
    }

    // MARK: Purchases

    /// One purchase the stand-in knows, with everything it answers from.
    public struct Record: Codable, Hashable, Sendable {
        public var token: String
        public var package: String
        public var productId: String
        public var subscription: Bool
        public var basePlanId: String?
        public var accountId: String?
        public var quantity: Int
        /// A license tester's purchase (Berth records it as Sandbox).
        public var test: Bool
        public var orderId: String
        /// Renewals so far (the order id's suffix: GPA.….0, ….1).
        public var renewals: Int
        public var purchasedAt: Date
        public var periodDays: Int
        public var expiresAt: Date?
        public var autoRenew: Bool
        /// subscriptionsv2's state name without its prefix: ACTIVE, CANCELED, IN_GRACE_PERIOD, ON_HOLD, PAUSED, EXPIRED.
        public var state: String
        /// 0 purchased, 1 canceled, 2 pending (one-time products).
        public var purchaseState: Int
        public var acknowledged: Bool
        public var consumed: Bool
        public var voidedAt: Date?
        public var linkedPurchaseToken: String?
        /// How many acknowledge and consume calls succeeded (a test checks "exactly once").
        public var acknowledgeCalls: Int
        public var consumeCalls: Int
        /// A subscription's recurring price in micros of `currency` (subscriptionsv2's recurringPrice); nil: not said.
        public var priceMicros: Int64?
        public var currency: String?

        /// The order of the current period: the first purchase's id, a renewal's with `..N` (the first renewal `..0`).
        public var latestOrderId: String { renewals > 0 ? "\(orderId)..\(renewals - 1)" : orderId }
    }

    func file(_ token: String) -> URL { directory.appendingPathComponent("purchases").appendingPathComponent(token + ".json") }

    public func record(_ token: String) -> Record? {
        guard token.utf8.allSatisfy({ $0.isTokenByte }), !token.isEmpty, token.utf8.count <= 512,
            let data = try? Data(contentsOf: file(token))
        else { return nil }
        return try? Self.decoder.decode(Record.self, from: data)
    }

    public func save(_ record: Record) throws {
        try Self.encoder.encode(record).write(to: file(record.token), options: .atomic)
    }

    public func records() -> [Record] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("purchases").path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.compactMap { record(String($0.dropLast(5))) }
    }

    /// Registers a purchase and returns its token.
    public func purchase(
        package: String,
        productId: String,
        subscription: Bool,
        basePlanId: String? = nil,
        accountId: String? = nil,
        quantity: Int = 1,
        test: Bool = true,
        periodDays: Int = 30,
        linkedPurchaseToken: String? = nil,
        priceMicros: Int64? = nil,
        currency: String? = nil,
        now: Date = Date()
    ) throws -> Record {
        let token = Self.newToken()
        let order =
            "GPA." + (0..<4).map { _ in String(format: "%04d", Int.random(in: 0...9999)) }.joined(separator: "-")
            + String(format: "%05d", Int.random(in: 0...99999))
        let record = Record(
            token: token,
            package: package,
            productId: productId,
            subscription: subscription,
            basePlanId: subscription ? (basePlanId ?? "monthly") : nil,
            accountId: accountId,
            quantity: max(1, quantity),
            test: test,
            orderId: order,
            renewals: 0,
            purchasedAt: now,
            periodDays: max(1, periodDays),
            expiresAt: subscription ? now.addingTimeInterval(TimeInterval(max(1, periodDays)) * 86_400) : nil,
            autoRenew: subscription,
            state: "ACTIVE",
            purchaseState: 0,
            acknowledged: false,
            consumed: false,
            voidedAt: nil,
            linkedPurchaseToken: linkedPurchaseToken,
            acknowledgeCalls: 0,
            consumeCalls: 0,
            priceMicros: subscription ? priceMicros : nil,
            currency: subscription ? currency : nil
        )
        try save(record)
        return record
    }

    /// A purchase token shaped like Google's (letters and dots, about 150 characters).
    static func newToken() -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        let alphabet = letters + Array("0123456789_-")
        var token = String(letters[Int.random(in: 0..<letters.count)])
        for index in 1..<150 { token.append(index % 25 == 24 && index < 149 ? "." : alphabet[Int.random(in: 0..<alphabet.count)]) }
        return token
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }()
}

public struct TestKitFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension UInt8 {
    var isTokenByte: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) || self == 0x2E || self == 0x5F || self == 0x2D
    }
}

extension Sequence where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

extension Digest {
    var hex: String { Array(self).hex }
}

import AppleSignedData
import ArgumentParser
import Foundation
import TestKit

/// `berth testkit`: a local CA shaped like Apple's, for tests of Berth and of the apps using it.
struct TestKitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "testkit",
        abstract: "Make a test CA shaped like Apple's and sign test purchases and notifications with it.",
        discussion: "Data signed this way verifies only where the CA's root.pem is explicitly trusted (never by default).",
        subcommands: [InitCA.self, SignTransaction.self, SignNotification.self, SignReceipt.self, StripeCommand.self, PlayCommand.self]
    )
}

extension TestKitCommand {
    struct InitCA: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Write a new test CA (certificates and keys as PEM) to DIR.",
            discussion: "root.pem anchors JWS (ECDSA, shaped like Apple Root CA - G3); receipt-root.pem anchors app receipts (RSA, shaped like Apple Inc. Root)."
        )

        @Flag(help: "Overwrite an existing CA in DIR.")
        var force = false

        @Argument(help: "Directory to write root.pem, intermediate.pem, leaf.pem and their keys to.")
        var directory: String

        func run() throws {
            let url = URL(fileURLWithPath: directory)
            if !force, FileManager.default.fileExists(atPath: url.appendingPathComponent(TestCA.FileName.root).path) {
                throw ValidationError("\(directory) already holds a test CA; pass --force to replace it")
            }
            try TestCA.generate().write(to: url)
            try TestReceiptCA.generate().write(to: url)
            print(url.appendingPathComponent(TestCA.FileName.root).path)
        }
    }

    struct SignTransaction: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sign-transaction", abstract: "Print a signed transaction (JWS) as StoreKit 2 would hand it to the app.")

        @Option(help: "Directory of a CA made by `berth testkit init`.")
        var ca: String
        @Option(name: .customLong("bundle-id")) var bundleId: String
        @Option(name: .customLong("product")) var productId: String
        @Option(name: .customLong("transaction-id"), help: "Default: a random 16-digit id.") var transactionId: String?
        @Option(name: .customLong("original-transaction-id"), help: "Default: the transaction id.") var originalTransactionId: String?
        @Option(help: "Sandbox (default), Production, Xcode or LocalTesting.") var environment = "Sandbox"
        @Option(help: "Consumable (default), Non-Consumable, Auto-Renewable Subscription or Non-Renewing Subscription.") var type = "Consumable"
        @Option(name: .customLong("app-account-token"), help: "The app account token (a UUID).") var appAccountToken: String?
        @Option var quantity = 1
        @Option(help: "Price in milliunits of the currency (1990 = 1.99).") var price: Int64?
        @Option(help: "ISO 4217 currency code.") var currency: String?
        @Option(name: .customLong("purchase-date"), help: "ISO 8601; default now.") var purchaseDate: String?
        @Option(name: .customLong("signed-date"), help: "ISO 8601; default the purchase date.") var signedDate: String?
        @Option(name: .customLong("expires-date"), help: "ISO 8601, for subscriptions.") var expiresDate: String?

        func run() throws {
            let token = try appAccountToken.map { text in
                guard let uuid = UUID(uuidString: text) else { throw ValidationError("--app-account-token must be a UUID") }
                return uuid
            }
            let purchased = try purchaseDate.map(parseDate) ?? Date()
            let payload = TransactionPayload.testPurchase(
                bundleId: bundleId, productId: productId, transactionId: transactionId ?? TestIDs.transactionId(),
                originalTransactionId: originalTransactionId, environment: AppStoreEnvironment(rawValue: environment),
                type: TransactionType(rawValue: type), appAccountToken: token, quantity: quantity, price: price,
                currency: currency, purchaseDate: purchased, signedDate: try signedDate.map(parseDate),
                expiresDate: try expiresDate.map(parseDate)
            )
            print(try TestCA.load(from: URL(fileURLWithPath: ca)).signTransaction(payload))
        }
    }

    struct SignNotification: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-notification",
            abstract: "Print a notification body {\"signedPayload\": ...} as Apple would POST it.",
            discussion: """
                --transaction and --renewal-info take either a JWS (embedded as is, e.g. from
                sign-transaction) or a JSON object of payload fields, which is completed and signed
                with the CA (bundle id, environment, ids and dates default from the other options).
                Use --raw to print only the signedPayload JWS.
                """
        )

        @Option(help: "Directory of a CA made by `berth testkit init`.") var ca: String
        @Option(help: "Notification type, e.g. REFUND, REVOKE, CONSUMPTION_REQUEST, DID_RENEW, TEST.") var type: String
        @Option(help: "Notification subtype, e.g. INITIAL_BUY, VOLUNTARY.") var subtype: String?
        @Option(name: .customLong("bundle-id")) var bundleId: String
        @Option(name: .customLong("app-apple-id")) var appAppleId: Int64?
        @Option(help: "Sandbox (default) or Production.") var environment = "Sandbox"
        @Option(help: "notificationUUID; default a new one.") var uuid: String?
        @Option(help: "A transaction JWS, or a JSON object of transaction fields.") var transaction: String?
        @Option(name: .customLong("renewal-info"), help: "A renewal info JWS, or a JSON object of renewal fields.") var renewalInfo: String?
        @Option(name: .customLong("signed-date"), help: "ISO 8601; default now.") var signedDate: String?
        @Flag(help: "Print only the signedPayload JWS, not the JSON body.") var raw = false

        func run() throws {
            let testCA = try TestCA.load(from: URL(fileURLWithPath: ca))
            let environment = AppStoreEnvironment(rawValue: environment)
            let now = try signedDate.map(parseDate) ?? Date()
            let signedTransaction = try transaction.map { input -> String in
                if let jws = Self.jws(input) { return jws }
                let fields = try Self.decode(TransactionPayload.self, from: input, option: "--transaction")
                return try testCA.signTransaction(fields.completedForTesting(bundleId: bundleId, environment: environment, now: now))
            }
            let signedRenewal = try renewalInfo.map { input -> String in
                if let jws = Self.jws(input) { return jws }
                let fields = try Self.decode(RenewalInfoPayload.self, from: input, option: "--renewal-info")
                return try testCA.signRenewalInfo(fields.completedForTesting(environment: environment, now: now))
            }
            let identifier = try uuid.map { text in
                guard let value = UUID(uuidString: text) else { throw ValidationError("--uuid must be a UUID") }
                return value
            } ?? UUID()
            let signedPayload = try testCA.signNotification(
                type: NotificationType(rawValue: type), subtype: subtype.map(NotificationSubtype.init(rawValue:)),
                uuid: identifier, bundleId: bundleId, appAppleId: appAppleId, environment: environment,
                signedTransactionInfo: signedTransaction, signedRenewalInfo: signedRenewal, signedDate: now
            )
            if raw {
                print(signedPayload)
            } else {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(NotificationRequestBody(signedPayload: signedPayload)), as: UTF8.self))
            }
        }

        private static func jws(_ input: String) -> String? {
            let trimmed = input.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.hasPrefix("{"), trimmed.split(separator: ".", omittingEmptySubsequences: false).count == 3 else { return nil }
            return trimmed
        }

        private static func decode<T: Decodable>(_ type: T.Type, from input: String, option: String) throws -> T {
            do {
                return try JSONDecoder().decode(T.self, from: Data(input.utf8))
            } catch {
                throw ValidationError("\(option) must be a JWS or a JSON object of payload fields (\(error))")
            }
        }
    }
}

extension TestKitCommand {
    struct SignReceipt: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sign-receipt", abstract: "Print a base64 app receipt (PKCS#7) with one in-app purchase, as StoreKit 1 plugins hand it to JavaScript.")

        @Option(help: "Directory of a CA made by `berth testkit init`.") var ca: String
        @Option(name: .customLong("bundle-id")) var bundleId: String
        @Option(name: .customLong("product")) var productId: String
        @Option(name: .customLong("transaction-id"), help: "Default: a random 16-digit id.") var transactionId: String?
        @Option(name: .customLong("receipt-type"), help: "ProductionSandbox (default), Production or Xcode.") var receiptType = "ProductionSandbox"
        @Flag(help: "Sign with SHA-1 like receipts before 2023 (default SHA-256).") var sha1 = false

        func run() throws {
            let receipt = AppReceipt.testReceipt(bundleId: bundleId, productId: productId, transactionId: transactionId ?? TestIDs.transactionId(), receiptType: receiptType)
            let der = try TestReceiptCA.load(from: URL(fileURLWithPath: ca)).signReceipt(receipt, digest: sha1 ? .sha1 : .sha256)
            print(Data(der).base64EncodedString())
        }
    }
}

private func parseDate(_ text: String) throws -> Date {
    if let date = try? Date(text, strategy: .iso8601) { return date }
    if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
    throw ValidationError("\(text) is not an ISO 8601 date such as 2026-11-21T10:00:00Z")
}

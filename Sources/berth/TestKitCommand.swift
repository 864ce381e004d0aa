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
        subcommands: [
            InitCA.self, SignTransaction.self, SignRenewalInfo.self, SignAppTransaction.self, SignNotification.self, SignReceipt.self,
            StripeCommand.self, PlayCommand.self,
        ]
    )
}

extension TestKitCommand {
    struct InitCA: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Write a new test CA (certificates and keys as PEM) to DIR, or keep the one already there.",
            discussion:
                "root.pem anchors JWS (ECDSA, shaped like Apple Root CA - G3); receipt-root.pem anchors app receipts (RSA, shaped like Apple Inc. Root)."
        )

        @Flag(help: "Replace an existing CA in DIR (without it, a CA already there is kept).")
        var force = false

        @Argument(help: "Directory to write root.pem, intermediate.pem, leaf.pem and their keys to.")
        var directory: String

        func run() throws {
            let url = URL(fileURLWithPath: directory)
            if !force, FileManager.default.fileExists(atPath: url.appendingPathComponent(TestCA.FileName.root).path) {
                // Kept, so that a walk-through runs again: what was signed with it still verifies. A
                // folder that holds only part of a CA is not silently used.
                do {
                    _ = try TestCA.load(from: url)
                    _ = try TestReceiptCA.load(from: url)
                } catch {
                    throw ValidationError("\(directory) holds a test CA that cannot be read (\(error)); pass --force to replace it")
                }
                FileHandle.standardError.write(Data("kept the test CA already in \(directory) (--force replaces it)\n".utf8))
                print(url.appendingPathComponent(TestCA.FileName.root).path)
                return
            }
            try TestCA.generate().write(to: url)
            try TestReceiptCA.generate().write(to: url)
            print(url.appendingPathComponent(TestCA.FileName.root).path)
        }
    }

    struct SignTransaction: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-transaction",
            abstract: "Print a signed transaction (JWS) as StoreKit 2 would hand it to the app."
        )

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
                bundleId: bundleId,
                productId: productId,
                transactionId: transactionId ?? TestIDs.transactionId(),
                originalTransactionId: originalTransactionId,
                environment: AppStoreEnvironment(rawValue: environment),
                type: TransactionType(rawValue: type),
                appAccountToken: token,
                quantity: quantity,
                price: price,
                currency: currency,
                purchaseDate: purchased,
                signedDate: try signedDate.map(parseDate),
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
        @Option(
            help:
                "data.status (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked); default: from a subscription transaction given as fields."
        )
        var status: Int?
        @Flag(help: "Print only the signedPayload JWS, not the JSON body.") var raw = false

        func run() throws {
            let testCA = try TestCA.load(from: URL(fileURLWithPath: ca))
            let environment = AppStoreEnvironment(rawValue: environment)
            let now = try signedDate.map(parseDate) ?? Date()
            // The transaction (as fields, or read from the JWS given) is known here: its renewal info
            // and data.status follow from it.
            var transactionFields: TransactionPayload?
            let signedTransaction = try transaction.map { input -> String in
                if let jws = Self.jws(input) {
                    transactionFields = Self.payload(TransactionPayload.self, of: jws)
                    return jws
                }
                let fields = try Self.decode(TransactionPayload.self, from: input, option: "--transaction")
                    .completedForTesting(bundleId: bundleId, environment: environment, now: now)
                transactionFields = fields
                return try testCA.signTransaction(fields)
            }
            var renewalFields: RenewalInfoPayload?
            let signedRenewal = try renewalInfo.map { input -> String in
                if let jws = Self.jws(input) {
                    renewalFields = Self.payload(RenewalInfoPayload.self, of: jws)
                    return jws
                }
                let fields = try Self.decode(RenewalInfoPayload.self, from: input, option: "--renewal-info")
                    .completedForTesting(environment: environment, now: now, transaction: transactionFields)
                renewalFields = fields
                return try testCA.signRenewalInfo(fields)
            }
            let subscriptionStatus =
                status.map(SubscriptionStatus.init(rawValue:))
                ?? transactionFields.flatMap { SubscriptionStatus.of($0, renewalInfo: renewalFields, at: now) }
            let identifier =
                try uuid.map { text in
                    guard let value = UUID(uuidString: text) else { throw ValidationError("--uuid must be a UUID") }
                    return value
                } ?? UUID()
            let signedPayload = try testCA.signNotification(
                type: NotificationType(rawValue: type),
                subtype: subtype.map(NotificationSubtype.init(rawValue:)),
                uuid: identifier,
                bundleId: bundleId,
                appAppleId: appAppleId,
                environment: environment,
                signedTransactionInfo: signedTransaction,
                signedRenewalInfo: signedRenewal,
                signedDate: now,
                status: subscriptionStatus
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

        /// The payload of a JWS given on the command line, read without verifying it (it is only
        /// embedded; what follows from it here is the notification's data.status and renewal info).
        private static func payload<T: Decodable>(_ type: T.Type, of jws: String) -> T? {
            let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let bytes = Base64URL.decode(parts[1]) else { return nil }
            return try? JSONDecoder().decode(T.self, from: bytes)
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
        static let configuration = CommandConfiguration(
            commandName: "sign-receipt",
            abstract: "Print a base64 app receipt (PKCS#7) as StoreKit 1 plugins hand it to JavaScript.",
            discussion: """
                One entry per --product (repeat it for several purchases; --transaction-id pairs with
                them in order). With --expires-date the entries are auto-renewable subscription
                periods ending then (one web order line item each); --renewals N adds N earlier
                periods of the same length to each, chained by one original transaction id, oldest
                first. --cancellation-date marks each product's latest entry refunded.
                """
        )

        @Option(help: "Directory of a CA made by `berth testkit init`.") var ca: String
        @Option(name: .customLong("bundle-id")) var bundleId: String
        @Option(name: .customLong("product"), help: "A product id; repeat for several entries.") var productIds: [String]
        @Option(name: .customLong("transaction-id"), help: "The entries' transaction ids, in --product order; default random 16-digit ids.")
        var transactionIds: [String] = []
        @Option(name: .customLong("receipt-type"), help: "ProductionSandbox (default), Production or Xcode.") var receiptType = "ProductionSandbox"
        @Option(name: .customLong("purchase-date"), help: "ISO 8601; default now (for subscriptions: the latest period's start).") var purchaseDate:
            String?
        @Option(name: .customLong("expires-date"), help: "ISO 8601: the entries are subscription periods ending then.") var expiresDate: String?
        @Option(help: "With --expires-date: earlier periods of the same length before each latest one.") var renewals = 0
        @Option(name: .customLong("cancellation-date"), help: "ISO 8601: each product's latest entry was refunded then.") var cancellationDate:
            String?
        @Option var quantity = 1
        @Flag(help: "Sign with SHA-1 like receipts before 2023 (default SHA-256).") var sha1 = false

        func validate() throws {
            guard !productIds.isEmpty else { throw ValidationError("give at least one --product") }
            guard transactionIds.count <= productIds.count else { throw ValidationError("more --transaction-id than --product") }
            guard (0...120).contains(renewals) else { throw ValidationError("--renewals must be 0...120") }
            guard renewals == 0 || expiresDate != nil else { throw ValidationError("--renewals needs --expires-date") }
            guard (1...1000).contains(quantity) else { throw ValidationError("--quantity must be 1...1000") }
        }

        func run() throws {
            let now = Date()
            let expires = try expiresDate.map(parseDate)
            let purchased = try purchaseDate.map(parseDate) ?? expires.map { min(now, $0.addingTimeInterval(-30 * 86_400)) } ?? now
            let cancelled = try cancellationDate.map(parseDate)
            var entries: [AppReceipt.InAppPurchase] = []
            for (index, productId) in productIds.enumerated() {
                let latestId = index < transactionIds.count ? transactionIds[index] : TestIDs.transactionId()
                guard let expires else {
                    entries.append(
                        AppReceipt.testEntry(
                            productId: productId,
                            transactionId: latestId,
                            purchased: purchased,
                            quantity: quantity,
                            cancelled: cancelled
                        )
                    )
                    continue
                }
                guard expires > purchased else { throw ValidationError("--expires-date must be after the purchase date") }
                let period = expires.timeIntervalSince(purchased)
                let firstStart = purchased.addingTimeInterval(-period * Double(renewals))
                let original = renewals == 0 ? latestId : TestIDs.transactionId()
                for step in 0...renewals {
                    let start = firstStart.addingTimeInterval(period * Double(step))
                    let latest = step == renewals
                    var entry = AppReceipt.testEntry(
                        productId: productId,
                        transactionId: latest ? latestId : (step == 0 ? original : TestIDs.transactionId()),
                        purchased: start,
                        quantity: 1,
                        cancelled: latest ? cancelled : nil
                    )
                    entry.originalTransactionId = original
                    entry.originalPurchaseDate = AppleTimestamp(firstStart)
                    entry.subscriptionExpirationDate = AppleTimestamp(start.addingTimeInterval(period))
                    entry.webOrderLineItemId = Int64(TestIDs.transactionId())
                    entry.isTrialPeriod = false
                    entry.isInIntroOfferPeriod = false
                    entries.append(entry)
                }
            }
            var receipt = AppReceipt.testReceipt(bundleId: bundleId, productId: productIds[0], receiptType: receiptType, created: now)
            receipt.inAppPurchases = entries
            let der = try TestReceiptCA.load(from: URL(fileURLWithPath: ca)).signReceipt(receipt, digest: sha1 ? .sha1 : .sha256)
            print(Data(der).base64EncodedString())
        }
    }

    struct SignRenewalInfo: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-renewal-info",
            abstract: "Print signed subscription renewal info (JWS), as Apple's notifications and Get All Subscription Statuses carry it."
        )

        @Option(help: "Directory of a CA made by `berth testkit init`.") var ca: String
        @Option(name: .customLong("original-transaction-id")) var originalTransactionId: String
        @Option(name: .customLong("product"), help: "The product of the current period.") var productId: String
        @Option(name: .customLong("auto-renew-product"), help: "The product it renews into; default --product.") var autoRenewProductId: String?
        @Flag(name: .customLong("auto-renew-off"), help: "The customer turned auto-renew off.") var autoRenewOff = false
        @Option(name: .customLong("renewal-date"), help: "ISO 8601: the current period's end.") var renewalDate: String
        @Option(name: .customLong("recent-subscription-start-date"), help: "ISO 8601; default 30 days before the renewal date.") var recentStart:
            String?
        @Option(help: "Sandbox (default), Production, Xcode or LocalTesting.") var environment = "Sandbox"
        @Option(name: .customLong("expiration-intent"), help: "1 cancelled, 2 billing error, 3 price increase declined, 4 unavailable, 5 other.")
        var expirationIntent: Int?
        @Flag(name: .customLong("billing-retry"), help: "Apple is retrying a failed renewal.") var billingRetry = false
        @Option(name: .customLong("grace-period-expires-date"), help: "ISO 8601, with --billing-retry.") var gracePeriodExpires: String?
        @Option(name: .customLong("app-account-token")) var appAccountToken: String?
        @Option(name: .customLong("app-transaction-id")) var appTransactionId: String?
        @Option(help: "Renewal price in milliunits.") var price: Int64?
        @Option var currency: String?
        @Option(name: .customLong("win-back-offer"), help: "An eligible win-back offer id; repeat for several.") var winBackOffers: [String] = []
        @Option(name: .customLong("signed-date"), help: "ISO 8601; default now.") var signedDate: String?

        func run() throws {
            let renewal = try parseDate(renewalDate)
            let token = try appAccountToken.map { text in
                guard let uuid = UUID(uuidString: text) else { throw ValidationError("--app-account-token must be a UUID") }
                return uuid.uuidString.lowercased()
            }
            var payload = RenewalInfoPayload(
                expirationIntent: expirationIntent.map(ExpirationIntent.init(rawValue:)),
                originalTransactionId: originalTransactionId,
                autoRenewProductId: autoRenewProductId ?? productId,
                productId: productId,
                autoRenewStatus: autoRenewOff ? .off : .on,
                isInBillingRetryPeriod: billingRetry,
                gracePeriodExpiresDate: try gracePeriodExpires.map(parseDate).map(AppleTimestamp.init),
                signedDate: AppleTimestamp(try signedDate.map(parseDate) ?? Date()),
                environment: AppStoreEnvironment(rawValue: environment),
                recentSubscriptionStartDate: AppleTimestamp(try recentStart.map(parseDate) ?? renewal.addingTimeInterval(-30 * 86_400)),
                renewalDate: AppleTimestamp(renewal),
                currency: currency,
                renewalPrice: price,
                appAccountToken: token,
                appTransactionId: appTransactionId ?? TestIDs.appTransactionId(appAccountToken: token.flatMap(UUID.init(uuidString:)))
            )
            payload.eligibleWinBackOfferIds = winBackOffers.isEmpty ? nil : winBackOffers
            print(try TestCA.load(from: URL(fileURLWithPath: ca)).signRenewalInfo(payload))
        }
    }

    struct SignAppTransaction: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-app-transaction",
            abstract: "Print a signed AppTransaction (JWS), as StoreKit 2's AppTransaction.shared hands it to the app."
        )

        @Option(help: "Directory of a CA made by `berth testkit init`.") var ca: String
        @Option(name: .customLong("bundle-id")) var bundleId: String
        @Option(name: .customLong("app-apple-id"), help: "The app's Apple ID (required for Production).") var appAppleId: Int64?
        @Option(help: "Sandbox (default), Production, Xcode or LocalTesting (the receiptType).") var environment = "Sandbox"
        @Option(name: .customLong("application-version")) var applicationVersion = "1"
        @Option(name: .customLong("original-application-version"), help: "The version first downloaded (grandfathering).")
        var originalApplicationVersion = "1"
        @Option(name: .customLong("original-purchase-date"), help: "ISO 8601; default now.") var originalPurchaseDate: String?
        @Option(name: .customLong("app-transaction-id"), help: "Default: a random 18-digit id.") var appTransactionId: String?
        @Option(name: .customLong("original-platform"), help: "iOS (default), MacOS, TvOS or VisionOS.") var originalPlatform = "iOS"
        @Option(name: .customLong("signed-date"), help: "ISO 8601, written as receiptCreationDate (an app transaction's signing date); default now.")
        var signedDate: String?

        func run() throws {
            let kind = AppStoreEnvironment(rawValue: environment)
            if kind == .production, appAppleId == nil { throw ValidationError("a Production app transaction needs --app-apple-id") }
            let now = try signedDate.map(parseDate) ?? Date()
            let payload = AppTransactionPayload(
                receiptType: kind,
                appAppleId: appAppleId,
                bundleId: bundleId,
                applicationVersion: applicationVersion,
                versionExternalIdentifier: kind == .production ? 1 : 0,
                receiptCreationDate: AppleTimestamp(now),
                originalPurchaseDate: AppleTimestamp(try originalPurchaseDate.map(parseDate) ?? now),
                originalApplicationVersion: originalApplicationVersion,
                deviceVerification: Data((0..<48).map { _ in UInt8.random(in: 0...255) }).base64EncodedString(),
                deviceVerificationNonce: UUID().uuidString.lowercased(),
                appTransactionId: appTransactionId ?? TestIDs.appTransactionId(),
                originalPlatform: PurchasePlatform(rawValue: originalPlatform)
            )
            // Apple signs no signedDate member into an app transaction: receiptCreationDate is its signing date.
            print(try TestCA.load(from: URL(fileURLWithPath: ca)).signAppTransaction(payload))
        }
    }
}

private func parseDate(_ text: String) throws -> Date {
    if let date = try? Date(text, strategy: .iso8601) { return date }
    if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
    throw ValidationError("\(text) is not an ISO 8601 date such as 2026-11-21T10:00:00Z")
}

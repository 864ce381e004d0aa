import ArgumentParser
import Foundation
import GooglePlayAPI
import Hummingbird
import NIOCore
import PlayStandIn

/// `berth testkit play`: Google Play for Berth's tests and integrators' CI (Google cannot be reached
/// from test machines): a service account, a local stand-in of Google's token endpoint, Play
/// Developer API and push-token key set, purchases registered with it, and signed Pub/Sub pushes.
struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play Google Play locally: a service account, the Play Developer API, purchases and signed real-time notifications.",
        subcommands: [Init.self, Serve.self, Purchase.self, Notify.self]
    )

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Write DIR/service-account.json (the JSON key Berth calls Google with) and DIR/push-signing-key.pem (signs push tokens); keeps existing ones."
        )
        @Argument(help: "The TestKit directory.") var directory: String

        func run() throws {
            let kit = try PlayTestKit.initialize(URL(fileURLWithPath: directory))
            print("service account: \(kit.directory.appendingPathComponent("service-account.json").path) (\(kit.account.clientEmail))")
            print("push signing key: \(kit.directory.appendingPathComponent("push-signing-key.pem").path) (kid \(kit.pushKeyId))")
        }
    }

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Serve Google's token endpoint (/token), the Play Developer API (/androidpublisher/v3/…) and the push key set (/oauth2/v3/certs) on 127.0.0.1.",
            discussion:
                "Point a tenant's googlePlay.apiBase (or its apiBaseEnv variable, PLAY_TEST_BASE_URL for the shipped test tenants) at http://127.0.0.1:PORT: the token URL and the key set follow it. Test controls: POST /_standin/fail?call=acknowledge|consume|get|token|voided&count=N[&status=503], GET /_standin/purchases/TOKEN, GET /_standin/calls."
        )
        @Option(help: "The TestKit directory (from `berth testkit play init`).") var dir: String
        @Option(help: "Port on 127.0.0.1 (0: any free port, written to --port-file).") var port = 12112
        @Option(name: .customLong("port-file"), help: "Write the bound port here once listening.") var portFile: String?

        func run() async throws {
            let standIn = PlayStandIn(kit: try PlayTestKit(URL(fileURLWithPath: dir)))
            let portFile = portFile
            let application = Application(
                router: standIn.router(),
                configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "play-stand-in"),
                onServerRunning: { channel in
                    guard let portFile, let port = channel.localAddress?.port else { return }
                    try? Data(String(port).utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
                }
            )
            try await application.runService()
        }
    }

    struct Purchase: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a purchase with the stand-in (in DIR) and print its purchase token.")
        @Option(help: "The TestKit directory.") var dir: String
        @Option(help: "The app's package name.") var package: String
        @Option(help: "The Google product id (a subscription's product id with --subscription).") var product: String
        @Flag(help: "An auto-renewing subscription (else a one-time product).") var subscription = false
        @Option(name: .customLong("base-plan"), help: "The subscription's base plan (default monthly).") var basePlan: String?
        @Option(name: .customLong("account-id"), help: "obfuscatedExternalAccountId: the user the app named when it launched the purchase.")
        var accountId: String?
        @Option(help: "How many units (one-time products).") var quantity = 1
        @Option(name: .customLong("period-days"), help: "A subscription period in days (each renewal adds one).") var periodDays = 30
        @Flag(help: "A real purchase (else a license tester's, which Berth records as Sandbox).") var production = false
        @Option(name: .customLong("linked-token"), help: "linkedPurchaseToken: the subscription this one replaces (an upgrade or resubscription).")
        var linkedToken: String?

        func run() throws {
            let kit = try PlayTestKit(URL(fileURLWithPath: dir))
            let record = try kit.purchase(
                package: package,
                productId: product,
                subscription: subscription,
                basePlanId: basePlan,
                accountId: accountId,
                quantity: quantity,
                test: !production,
                periodDays: periodDays,
                linkedPurchaseToken: linkedToken
            )
            print(record.token)
        }
    }

    struct Notify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Move a purchase as a notification says (a renewal extends it, a void voids it) and print {\"body\": <Pub/Sub push>, \"authorization\": \"Bearer <OIDC token>\"}.",
            discussion:
                "POST the body to Berth's /api/google/notifications/TENANT with the Authorization header. Types: \(PlayTestKit.notificationTypes.joined(separator: ", "))."
        )
        @Option(help: "The TestKit directory.") var dir: String
        @Option(help: "The app's package name.") var package: String
        @Option(help: "The purchase token.") var token: String = ""
        @Option(help: "The notification type (SUBSCRIPTION_RENEWED, VOIDED_PURCHASE, …).") var type: String
        @Option(help: "The push token's audience (default: the package name, what the shipped test tenants expect).") var audience: String?
        @Option(help: "The push token's service-account email.") var email = PlayTestKit.pushServiceAccountEmail

        func run() throws {
            let kit = try PlayTestKit(URL(fileURLWithPath: dir))
            let push = try kit.notify(package: package, token: token, type: type, audience: audience, email: email)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(push), as: UTF8.self))
        }
    }
}

import ArgumentParser
import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import StripeStandIn

/// `berth testkit stripe`: a local Stripe stand-in for Berth's tests and integrators' CI.
struct StripeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stripe",
        abstract: "Play Stripe locally: PaymentIntents, refunds and signed webhooks (test mode only).",
        subcommands: [Serve.self, Pay.self, Dispute.self]
    )

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve Stripe's PaymentIntents and refunds API on 127.0.0.1 and send signed events to a webhook URL.",
            discussion:
                "Point a tenant's stripe.apiBase (or its apiBaseEnv variable) at http://127.0.0.1:PORT. Its test controls are POST /_standin/payment_intents/ID/succeed|fail|dispute and GET /_standin/refunds|requests|deliveries."
        )
        @Option(help: "Port on 127.0.0.1 (0: any free port, written to --port-file).") var port = 12111
        @Option(name: .customLong("webhook-url"), help: "Where events are sent (Berth: http://127.0.0.1:8080/api/stripe/webhooks/TENANT).")
        var webhookURL: String?
        @Option(name: .customLong("webhook-secret"), help: "A signing secret (repeat for a roll: one v1 per secret).") var webhookSecrets: [String] =
            []
        @Option(name: .customLong("secret-key"), help: "The API key callers must present.") var secretKey = "sk_test_berth_standin"
        @Option(name: .customLong("port-file"), help: "Write the bound port here once listening.") var portFile: String?

        func run() async throws {
            let standIn = StripeStandIn(secretKey: secretKey, webhookURL: webhookURL, webhookSecrets: webhookSecrets)
            let portFile = portFile
            let application = Application(
                router: standIn.router(),
                configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "stripe-stand-in"),
                onServerRunning: { channel in
                    guard let portFile, let port = channel.localAddress?.port else { return }
                    try? Data(String(port).utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
                }
            )
            try await application.runService()
        }
    }

    struct Pay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Settle a PaymentIntent of a running stand-in and send its events; prints the deliveries."
        )
        @Option(help: "The stand-in's port.") var port = 12111
        @Option(help: "The PaymentIntent id (pi_…).") var intent: String
        @Flag(help: "Decline the card instead (payment_intent.payment_failed).") var fail = false
        @Flag(help: "Send each event twice.") var duplicate = false
        @Flag(name: .customLong("out-of-order"), help: "Also send an older declined attempt after the success.") var outOfOrder = false
        @Flag(help: "Change the body after signing it.") var tamper = false
        @Flag(help: "Sign ten minutes in the past.") var stale = false

        func run() async throws {
            let flags = [("duplicate", duplicate), ("out_of_order", outOfOrder), ("tamper", tamper), ("stale", stale)].filter(\.1).map { "\($0.0)=1" }
            let query = flags.isEmpty ? "" : "?" + flags.joined(separator: "&")
            try await StripeCommand.control(port: port, path: "/_standin/payment_intents/\(intent)/\(fail ? "fail" : "succeed")\(query)")
        }
    }

    struct Dispute: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Open or close a dispute of a paid PaymentIntent and send its event.")
        @Option(help: "The stand-in's port.") var port = 12111
        @Option(help: "The PaymentIntent id (pi_…).") var intent: String
        @Option(help: "needs_response (opens it), won or lost (closes it).") var status = "needs_response"

        func run() async throws {
            try await StripeCommand.control(port: port, path: "/_standin/payment_intents/\(intent)/dispute?status=\(status)")
        }
    }

    static func control(port: Int, path: String) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = .POST
        // One request of a command that then exits: its own client, shut down before it returns.
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let status: UInt, body: String
        do {
            let response = try await client.execute(request, timeout: .seconds(60))
            (status, body) = (response.status.code, String(buffer: try await response.body.collect(upTo: 1 << 20)))
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw error
        }
        print(body)
        guard (200..<300).contains(status) else { throw ExitCode(1) }
    }

}

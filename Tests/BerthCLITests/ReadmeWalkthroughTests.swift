import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("README")
struct ReadmeWalkthroughTests {
    /// The first shell block under a heading of README.md (or another document), exactly as a reader copies it.
    static func walkthrough(_ heading: String = "## Walk-through", in document: String = "README.md") throws -> String {
        let readme = try String(contentsOf: ServerProcess.repository.appendingPathComponent(document), encoding: .utf8)
        let section = try #require(readme.range(of: heading))
        let open = try #require(readme.range(of: "```sh\n", range: section.upperBound..<readme.endIndex))
        let close = try #require(readme.range(of: "\n```", range: open.upperBound..<readme.endIndex))
        return String(readme[open.upperBound..<close.lowerBound])
    }

    @Test("the walk-through runs verbatim against berth serve and shows confirm, then a refused replay; run again in the same folder, the same")
    func walkthroughRunsVerbatim() async throws {
        let text = try await Self.run(try Self.walkthrough(), times: 2)
        #expect(text.contains("kept the test CA already in berth-ca"), "the second run keeps the CA: \(text)")
        #expect(text.contains("pending_payment 8000 EUR it.seaboo.rental.basic"), "\(text)")
        #expect(text.contains("200\nconfirmed"), "\(text)")
        #expect(text.contains("\"code\":\"transaction_already_used\""), "\(text)")
        #expect(text.contains("1 bob transaction already used by another user"), "\(text)")
    }

    @Test("the credits walk-through runs verbatim: a pack once, reserve and commit, release, 403 with the balance, history, ledger check")
    func creditsWalkthroughRunsVerbatim() async throws {
        let text = try await Self.run(try Self.walkthrough("## Selling credits"))
        #expect(text.contains("[('starter', 10, 99), ('popular', 50, 499), ('bestvalue', 100, 899)]"), "\(text)")
        #expect(text.contains("50 52\n50 52\ncommitted 51\nreleased 51\n"), "\(text)")
        #expect(text.contains("\"code\":\"insufficient_credits\""), "\(text)")
        #expect(text.contains("\"available\":51"), "\(text)")
        #expect(text.contains("} 403"), "\(text)")
        #expect(text.contains("[('usage', -1), ('purchase', 50), ('bonus', 2)] 3"), "\(text)")
        #expect(text.contains("True 1"), "\(text)")
    }

    @Test(
        "the subscriptions walk-through runs verbatim: buy, renew, grace by the clock, billing retry, expire, refund, a second account's link refused"
    )
    func subscriptionsWalkthroughRunsVerbatim() async throws {
        let text = try await Self.run(try Self.walkthrough("## Selling subscriptions", in: "docs/walkthroughs.md"))
        #expect(
            text.contains(
                "active standard month True\nsubscription_active\nsubscription_grace_period\n['grace_period'] True\n['billing_retry'] False\nsubscription_expired\n"
            ),
            "\(text)"
        )
        #expect(text.contains("['active'] True\nsubscription_revoked\n['revoked'] False\n"), "\(text)")
        #expect(text.contains("\"code\":\"linked_to_other_account\""), "\(text)")
        #expect(text.contains("} 422"), "\(text)")
    }

    @Test("the card walk-through runs verbatim against berth serve and the Stripe stand-in: paid once though told twice, refunded once")
    func cardWalkthroughRunsVerbatim() async throws {
        let text = try await Self.run(try Self.walkthrough("## Card payments"))
        #expect(text.contains("stripe 9000 EUR pk_test_seaboo_standin\n"), "\(text)")
        #expect(text.contains("[('booking_confirmed', False), ('booking_confirmed', True)]\n"), "\(text)")
        #expect(text.contains("confirmed succeeded\n"), "\(text)")
        #expect(text.contains("succeeded 9000 refunded\n"), "\(text)")
        #expect(text.contains("1 refund at Stripe\n"), "\(text)")
    }

    @Test(
        "the storm walk-through runs verbatim against one berth serve: a boat added with its August price, a late cancel refunds half by card, Saturday closed (card refunded once, App Store owed, a new booking refused), a Sunday trip moved to Monday"
    )
    func stormWalkthroughRunsVerbatim() async throws {
        let text = try await Self.run(try Self.walkthrough("## A storm closes the port on Saturday", in: "docs/walkthroughs.md"))
        #expect(text.contains("201\n201\ninvalid_field\n9500\n"), "\(text)")
        #expect(text.contains("50 True card\ncancelled succeeded\n"), "\(text)")
        #expect(
            text.contains(
                "confirmed\nconfirmed\n['cancelled_owed', 'refunded']\n2 refunds at Stripe: 9000\n[('ivo', 'app_store')]\nresource_closed\n"
            ),
            "\(text)"
        )
        #expect(text.contains("confirmed True\n"), "\(text)")
    }

    @Test(
        "the Google Play walk-through runs verbatim against berth serve and the Play stand-in: credited once, replay refused, consumed once across a restart, refund, renewal, a foreign push refused"
    )
    func playWalkthroughRunsVerbatim() async throws {
        let text = try await Self.run(try Self.walkthrough("## Google Play", in: "docs/walkthroughs.md"))
        #expect(text.contains("50 52 google_play\n409\n"), "\(text)")
        #expect(text.contains("consumed 1 time(s)\n"), "\(text)")
        #expect(text.contains("{\"duplicate\":false,\"outcome\":\"credits_refunded\",\"received\":true}\nbalance 2\n"), "\(text)")
        #expect(
            text.contains(
                "active 1 year(s) left\n{\"duplicate\":false,\"outcome\":\"subscription_active\",\"received\":true}\nTrue google_play_subscription 2 year(s) left\n"
            ),
            "\(text)"
        )
        #expect(text.contains("401\n{\"duplicate\":false,\"outcome\":\"subscription_expired\",\"received\":true}\npremium False\n"), "\(text)")
    }

    @Test(
        "the hybrid-app guide (docs/compatibility.md) runs verbatim: a WebView's preflight and purchase from capacitor://localhost, a foreign origin without the header, HEAD"
    )
    func hybridGuideRunsVerbatim() async throws {
        let text = try await Self.run(try Self.walkthrough("## Hybrid apps", in: "docs/compatibility.md"))
        #expect(
            text.contains("HTTP/1.1 204 No Content\nAccess-Control-Allow-Origin: capacitor://localhost\nAccess-Control-Allow-Methods: POST\n"),
            "\(text)"
        )
        #expect(
            text.contains("50 52\nAccess-Control-Allow-Origin: capacitor://localhost\nAccess-Control-Expose-Headers: X-Berth-Signature, "),
            "\(text)"
        )
        #expect(text.contains("\n0\n200\n"), "\(text)")
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs a README script in a fresh copy of the catalog (the migrations are in the binary), as a reader would; returns its output.
    /// `times` > 1 runs it again in the same folder (a reader trying it twice): the last run's output.
    static func run(_ script: String, times: Int = 1) async throws -> String {
        let directory = try BerthProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for item in ["products.json"] {
            try FileManager.default.copyItem(at: ServerProcess.repository.appendingPathComponent(item), to: directory.appendingPathComponent(item))
        }
        // `swift build --show-bin-path` must name the binaries this test run built; a shell function
        // answers it (anything else goes to the real swift). A function, not a stub script on PATH: a
        // script this test writes and then executes failed with ETXTBSY ("Text file busy") when another
        // test forked while its descriptor was still open.
        let products = try BerthProcess.executable.deletingLastPathComponent().path
        // A step that fails stops the script (-e); its background servers are stopped with it, or they
        // would hold the output pipe open and this test would wait for them instead of failing.
        let preamble =
            "swift() { if [ \"$1 $2\" = \"build --show-bin-path\" ]; then echo '\(products)'; else command swift \"$@\"; fi; }\n"
            + "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
        try Data((preamble + script).utf8).write(to: directory.appendingPathComponent("walkthrough.sh"))
        var text = ""
        for _ in 0..<max(times, 1) {
            text = try await runOnce(in: directory)
        }
        return text
    }

    private static func runOnce(in directory: URL) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-e", "-o", "pipefail", "walkthrough.sh"]
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        // Ports the system just handed out as free (a random one collided with another test's listener,
        // and the script's `until curl …` then waited forever).
        environment["BERTH_PORT"] = String(try Self.freePort())
        environment["STRIPE_PORT"] = String(try Self.freePort())
        environment["PLAY_PORT"] = String(try Self.freePort())
        process.environment = environment
        let output = Pipe.forChild()
        process.standardOutput = output
        process.standardError = output
        try await OffPool.run { try process.runAlone() }
        // A script that never ends (a server that did not start) is stopped, not waited for forever.
        let watchdog = DispatchWorkItem {
            if process.isRunning {
                kill(-process.processIdentifier, SIGKILL)
                process.terminate()
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 900, execute: watchdog)
        // The script runs for minutes: its output is read on a thread of its own, not the test pool's.
        let text = try await OffPool.run {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return text
        }
        watchdog.cancel()

        #expect(process.terminationStatus == 0, "\(text)")
        return text
    }
}

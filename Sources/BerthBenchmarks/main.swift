// Berth's benchmarks (not tests): run in release mode.
//
//     swift run -c release BerthBenchmarks [jws] [--iterations N]
//         cold and warm JWS verifications per second
//     swift run -c release BerthBenchmarks hostile-receipts [--iterations N]
//         how long hostile receipts (cross-signed certificate meshes, missing OIDs) take to refuse
//     swift run -c release BerthBenchmarks prepare-purchases --url URL --key KEY --ca DIR --count N --out FILE
//         creates N pending bookings on a running server and writes one verify-purchase request per
//         line (user id, tab, JSON body) for benchmarks/verify-purchase.sh to replay with wrk
//     swift run -c release BerthBenchmarks prepare-notifications --url URL --jwt-secret S --issuer I --ca DIR --count N --out FILE [--subscriptions S]
//         buys S subscriptions on a running server and writes N signed DID_RENEW notifications for them
//         (one per line: "-", a tab, the JSON body) for benchmarks/run's notification phase
//     swift run -c release BerthBenchmarks prepare-credit-purchases --ca DIR --count N --out FILE [--bundle-id B] [--product P] [--user-prefix U]
//         signs N credit-pack purchases offline (nothing is sent), one verify-purchase request per line (benchmarks/soak)
//     swift run -c release BerthBenchmarks seed-history --sqlite PATH --tenant T --count N
//         writes N past purchases into a migrated SQLite database (benchmarks/run HISTORY=N)
//     swift run -c release BerthBenchmarks credits-flow --url URL --jwt-secret S --issuer I --ca DIR [--users N] [--concurrency C]
//         per user: buy a credit pack, reserve 1 credit, commit it (benchmarks/credits.sh)
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let mode = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 } ?? "jws"

func option(_ name: String) -> String? {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("BerthBenchmarks: \(message)\n".utf8))
    exit(2)
}

/// What stopped a run, in words (a request that timed out or was refused is a finding, not a trap).
func describe(_ error: any Error) -> String {
    if let error = error as? URLError {
        return error.code == .timedOut
            ? "a request to the server timed out (URLError \(error.code.rawValue))"
            : "a request failed: URLError \(error.code.rawValue) \(error.localizedDescription)"
    }
    let nsError = error as NSError
    if nsError.domain == NSURLErrorDomain {
        return nsError.code == NSURLErrorTimedOut
            ? "a request to the server timed out (\(nsError.domain) \(nsError.code))"
            : "a request failed: \(nsError.domain) \(nsError.code) \(nsError.localizedDescription)"
    }
    return "\(error)"
}

do {
    switch mode {
    case "jws":
        let iterations = option("--iterations").map { Int($0) ?? 0 } ?? 2000
        guard iterations > 0 else { fail("--iterations needs a positive number") }
        try await benchmarkJWSVerification(count: iterations)
    case "hostile-receipts":
        let iterations = option("--iterations").map { Int($0) ?? 0 } ?? 200
        guard iterations > 0 else { fail("--iterations needs a positive number") }
        try await benchmarkHostileReceipts(count: iterations)
    case "prepare-purchases":
        guard let url = option("--url"), let ca = option("--ca"), let out = option("--out"),
            let count = option("--count").flatMap(Int.init), count > 0
        else { fail("prepare-purchases needs --url, --key KEY or --jwt-secret S --issuer I, --ca, --count and --out") }
        let creator: BookingCreator
        if let secret = option("--jwt-secret"), let issuer = option("--issuer") {
            creator = .userTokens(secret: secret, issuer: issuer, audience: option("--audience") ?? "berth")
        } else if let key = option("--key") {
            creator = .serverKey(key)
        } else {
            fail("prepare-purchases needs --key KEY or --jwt-secret S --issuer I")
        }
        try await preparePurchases(
            baseURL: url,
            creator: creator,
            caDirectory: ca,
            count: count,
            output: out,
            resourceId: option("--resource") ?? "fleet",
            bundleId: option("--bundle-id") ?? "it.seaboo.app",
            userPrefix: option("--user-prefix") ?? "bench-"
        )
    case "prepare-notifications":
        guard let url = option("--url"), let ca = option("--ca"), let out = option("--out"), let secret = option("--jwt-secret"),
            let issuer = option("--issuer"),
            let count = option("--count").flatMap(Int.init), count > 0
        else { fail("prepare-notifications needs --url, --jwt-secret S --issuer I, --ca, --count and --out") }
        try await prepareNotifications(
            baseURL: url,
            creator: .userTokens(secret: secret, issuer: issuer, audience: option("--audience") ?? "berth"),
            caDirectory: ca,
            subscriptions: option("--subscriptions").flatMap(Int.init).map { max($0, 1) } ?? 1000,
            count: count,
            output: out,
            bundleId: option("--bundle-id") ?? "it.seaboo.app",
            productId: option("--product") ?? "it.seaboo.member.monthly",
            userPrefix: option("--user-prefix") ?? "member-"
        )
    case "prepare-credit-purchases":
        guard let ca = option("--ca"), let out = option("--out"), let count = option("--count").flatMap(Int.init), count > 0 else {
            fail("prepare-credit-purchases needs --ca, --count N and --out")
        }
        try prepareCreditPurchases(
            caDirectory: ca,
            count: count,
            output: out,
            bundleId: option("--bundle-id") ?? "it.seaboo.app",
            productId: option("--product") ?? "it.seaboo.credits.pack",
            userPrefix: option("--user-prefix") ?? "buyer-"
        )
    case "credits-flow":
        guard let url = option("--url"), let ca = option("--ca"), let secret = option("--jwt-secret"), let issuer = option("--issuer") else {
            fail("credits-flow needs --url, --jwt-secret S --issuer I (user tokens of the credits tenant) and --ca")
        }
        try await benchmarkCreditsFlow(
            baseURL: url,
            creator: .userTokens(secret: secret, issuer: issuer, audience: option("--audience") ?? "berth"),
            caDirectory: ca,
            users: option("--users").flatMap(Int.init) ?? 2000,
            concurrency: option("--concurrency").flatMap(Int.init) ?? 16,
            bundleId: option("--bundle-id") ?? "com.aiimagestylist.app",
            productId: option("--product") ?? "com.aiimagestylist.credits.starter",
            userPrefix: option("--user-prefix") ?? "credits-"
        )
    case "seed-history":
        guard let path = option("--sqlite"), let tenant = option("--tenant"), let count = option("--count").flatMap(Int.init), count > 0 else {
            fail("seed-history needs --sqlite PATH (a migrated database), --tenant T and --count N")
        }
        try await seedHistory(databasePath: path, tenantId: tenant, count: count)
    case "--help", "-h", "help":
        print(
            "usage: BerthBenchmarks [jws] [--iterations N] | hostile-receipts [--iterations N] | prepare-purchases --url URL (--key KEY | --jwt-secret S --issuer I [--audience A]) --ca DIR --count N --out FILE [--user-prefix P] | prepare-notifications --url URL --jwt-secret S --issuer I --ca DIR --count N --out FILE [--subscriptions S] | prepare-credit-purchases --ca DIR --count N --out FILE [--user-prefix P] | seed-history --sqlite PATH --tenant T --count N | credits-flow --url URL --jwt-secret S --issuer I --ca DIR [--users N] [--concurrency C]"
        )
    default:
        fail("unknown mode \(mode)")
    }
} catch {
    FileHandle.standardError.write(Data("BerthBenchmarks \(mode): \(describe(error))\n".utf8))
    exit(1)
}

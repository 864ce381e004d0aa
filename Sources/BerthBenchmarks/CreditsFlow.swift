import Foundation
import TestKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The credits flow of a generation app, per user: buy a pack (verify-purchase with a signed
/// transaction), reserve 1 credit, commit it. Transactions are signed before the clock starts;
/// `concurrency` clients run users one after the other. Prints flows/s, requests/s and the
/// latency of each step (p50/p99), and fails if any answer is not the expected one. Users call with
/// their own tokens (each has its own verification rate limit, as in production).
func benchmarkCreditsFlow(
    baseURL: String,
    creator: BookingCreator,
    caDirectory: String,
    users: Int,
    concurrency: Int,
    bundleId: String,
    productId: String,
    userPrefix: String
) async throws {
    let ca = try TestCA.load(from: URL(fileURLWithPath: caDirectory))
    let signed = try (0..<users).map { _ in try ca.signTransaction(.testPurchase(bundleId: bundleId, productId: productId)) }
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 60
    configuration.httpMaximumConnectionsPerHost = concurrency
    let session = URLSession(configuration: configuration)

    func call(_ method: String, _ path: String, user: String, body: String?, expect: Int) async throws -> (Data, Double) {
        var request = URLRequest(url: URL(string: baseURL + path)!)
        request.httpMethod = method
        creator.authorize(&request, user: user)
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        let began = ContinuousClock.now
        let (data, response) = try await session.data(for: request)
        let elapsed = began.duration(to: .now)
        guard (response as? HTTPURLResponse)?.statusCode == expect else {
            fail(
                "\(method) \(path) for \(user) answered \((response as? HTTPURLResponse)?.statusCode ?? 0): \(String(decoding: data, as: UTF8.self))"
            )
        }
        return (data, Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
    }

    let began = ContinuousClock.now
    let timings = try await withThrowingTaskGroup(of: [[Double]].self) { group in
        for worker in 0..<concurrency {
            group.addTask {
                var steps: [[Double]] = [[], [], []]
                for index in stride(from: worker, to: users, by: concurrency) {
                    let user = "\(userPrefix)\(index)"
                    let (_, buy) = try await call(
                        "POST",
                        "/api/verify-purchase",
                        user: user,
                        body: #"{"productId":"\#(productId)","jwsRepresentation":"\#(signed[index])"}"#,
                        expect: 200
                    )
                    let (held, reserve) = try await call("POST", "/api/credits/reservations", user: user, body: #"{"amount":1}"#, expect: 201)
                    guard let object = try JSONSerialization.jsonObject(with: held) as? [String: Any],
                        let id = (object["reservation"] as? [String: Any])?["id"] as? Int
                    else { fail("no reservation id") }
                    let (_, commit) = try await call("POST", "/api/credits/reservations/\(id)/commit", user: user, body: nil, expect: 200)
                    steps[0].append(buy)
                    steps[1].append(reserve)
                    steps[2].append(commit)
                }
                return steps
            }
        }
        var all: [[Double]] = [[], [], []]
        for try await part in group { for step in 0..<3 { all[step] += part[step] } }
        return all
    }
    let seconds = Double(began.duration(to: .now).components.attoseconds) / 1e18 + Double(began.duration(to: .now).components.seconds)
    func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
    print(
        String(
            format: "credits flow: %d users × (buy + reserve + commit) with %d clients in %.2f s: %.0f flows/s, %.0f requests/s",
            users,
            concurrency,
            seconds,
            Double(users) / seconds,
            Double(users * 3) / seconds
        )
    )
    for (name, values) in zip(["verify-purchase (pack)", "reserve", "commit"], timings) {
        print(String(format: "  %-24@ p50 %.2f ms  p99 %.2f ms", name as NSString, percentile(values, 0.5), percentile(values, 0.99)))
    }
}

import AppleSignedData
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TestKit

/// Creates `count` pending bookings through the HTTP API (16 concurrent clients) and writes, for each,
/// a verify-purchase request with its own freshly signed transaction.
func preparePurchases(baseURL: String, serverKey: String, caDirectory: String, count: Int, output: String, resourceId: String, bundleId: String) async throws {
    let ca = try TestCA.load(from: URL(fileURLWithPath: caDirectory))
    let start = Date().addingTimeInterval(7 * 86_400)
    let startText = start.formatted(.iso8601)
    let endText = start.addingTimeInterval(3600).formatted(.iso8601)
    let session = URLSession(configuration: .ephemeral)
    let workers = 16
    let lines = try await withThrowingTaskGroup(of: [String].self) { group in
        for worker in 0..<workers {
            group.addTask {
                var lines: [String] = []
                for index in stride(from: worker, to: count, by: workers) {
                    let user = "bench-\(index)"
                    var request = URLRequest(url: URL(string: "\(baseURL)/api/bookings")!)
                    request.httpMethod = "POST"
                    request.setValue("Bearer \(serverKey)", forHTTPHeaderField: "Authorization")
                    request.setValue(user, forHTTPHeaderField: "X-User-Id")
                    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                    request.httpBody = Data(#"{"resourceId":"\#(resourceId)","start":"\#(startText)","end":"\#(endText)"}"#.utf8)
                    let (data, response) = try await session.data(for: request)
                    guard (response as? HTTPURLResponse)?.statusCode == 201,
                          let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                          let booking = object["booking"] as? [String: Any], let id = booking["id"] as? Int,
                          let product = booking["requiredProductId"] as? String
                    else {
                        throw NSError(domain: "BerthBenchmarks", code: 1, userInfo: [NSLocalizedDescriptionKey: "booking failed: \(String(decoding: data, as: UTF8.self))"])
                    }
                    let jws = try ca.signTransaction(.testPurchase(bundleId: bundleId, productId: product))
                    lines.append("\(user)\t{\"bookingId\":\(id),\"productId\":\"\(product)\",\"jwsRepresentation\":\"\(jws)\"}")
                }
                return lines
            }
        }
        var all: [String] = []
        for try await part in group { all += part }
        return all
    }
    try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: output))
    print("prepared \(lines.count) bookings and signed purchases in \(output)")
}

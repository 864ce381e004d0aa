import AppleSignedData
import Foundation
import TestKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Buys `subscriptions` auto-renewable subscriptions through the HTTP API (one user each, their own
/// tokens), then writes `count` signed DID_RENEW notifications for them, one per line ("-", a tab, the
/// JSON body), each a new renewal transaction with a later expiry, in renewal order per subscription.
func prepareNotifications(
    baseURL: String,
    creator: BookingCreator,
    caDirectory: String,
    subscriptions: Int,
    count: Int,
    output: String,
    bundleId: String,
    productId: String,
    userPrefix: String
) async throws {
    let ca = try TestCA.load(from: URL(fileURLWithPath: caDirectory))
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 120
    let session = URLSession(configuration: configuration)
    let began = Date()
    let month: TimeInterval = 30 * 86_400
    let originals = try await withThrowingTaskGroup(of: [String].self) { group in
        let workers = 16
        for worker in 0..<workers {
            group.addTask {
                var originals: [String] = []
                for index in stride(from: worker, to: subscriptions, by: workers) {
                    let original = TestIDs.transactionId()
                    let start = Date()
                    let transaction = TransactionPayload.testPurchase(
                        bundleId: bundleId,
                        productId: productId,
                        transactionId: original,
                        type: .autoRenewableSubscription,
                        purchaseDate: start,
                        expiresDate: start.addingTimeInterval(month)
                    )
                    var request = URLRequest(url: URL(string: "\(baseURL)/api/verify-purchase")!)
                    request.httpMethod = "POST"
                    creator.authorize(&request, user: "\(userPrefix)\(index)")
                    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                    request.httpBody = Data(#"{"productId":"\#(productId)","jwsRepresentation":"\#(try ca.signTransaction(transaction))"}"#.utf8)
                    let (data, response) = try await session.data(for: request)
                    guard (response as? HTTPURLResponse)?.statusCode == 200 else {
                        throw NSError(
                            domain: "BerthBenchmarks",
                            code: 1,
                            userInfo: [NSLocalizedDescriptionKey: "subscription refused: \(String(decoding: data, as: UTF8.self))"]
                        )
                    }
                    originals.append(original)
                }
                return originals
            }
        }
        var all: [String] = []
        for try await part in group { all += part }
        return all
    }
    guard !originals.isEmpty else { throw NSError(domain: "BerthBenchmarks", code: 1, userInfo: [NSLocalizedDescriptionKey: "no subscriptions"]) }
    var lines: [String] = []
    lines.reserveCapacity(count)
    for index in 0..<count {
        let original = originals[index % originals.count]
        let period = Double(index / originals.count + 1)
        let start = Date().addingTimeInterval(period * month)
        var renewal = TransactionPayload.testPurchase(
            bundleId: bundleId,
            productId: productId,
            originalTransactionId: original,
            type: .autoRenewableSubscription,
            purchaseDate: start,
            signedDate: Date(),
            expiresDate: start.addingTimeInterval(month)
        )
        renewal.transactionReason = .renewal
        let payload = try ca.signNotification(type: .didRenew, bundleId: bundleId, transaction: renewal)
        lines.append("-\t{\"signedPayload\":\"\(payload)\"}")
    }
    try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: output))
    let seconds = Date().timeIntervalSince(began)
    print(String(format: "prepared %d subscriptions and %d signed renewals in %.1f s into %@", originals.count, lines.count, seconds, output))
}

import AppleSignedData
import Crypto
import Foundation
import TestKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How prepared bookings are created: as the users themselves (HS256 tokens of the benchmark
/// tenant, so that no server key's hold count grows with the run), or through a server key.
enum BookingCreator: Sendable {
    case userTokens(secret: String, issuer: String, audience: String)
    case serverKey(String)

    func authorize(_ request: inout URLRequest, user: String) {
        switch self {
        case .userTokens(let secret, let issuer, let audience):
            request.setValue(
                "Bearer \(Self.token(user: user, secret: secret, issuer: issuer, audience: audience))",
                forHTTPHeaderField: "Authorization"
            )
        case .serverKey(let key):
            request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
            request.setValue(user, forHTTPHeaderField: "X-User-Id")
        }
    }

    /// A compact HS256 JWT for `user`, valid for a day.
    static func token(user: String, secret: String, issuer: String, audience: String) -> String {
        func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
                of: "=",
                with: ""
            )
        }
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let expiry = Int(Date().timeIntervalSince1970) + 86_400
        let claims = base64URL(Data(#"{"sub":"\#(user)","iss":"\#(issuer)","aud":"\#(audience)","exp":\#(expiry)}"#.utf8))
        let signature = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(claims)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return "\(header).\(claims).\(base64URL(Data(signature)))"
    }
}

/// Creates `count` pending bookings through the HTTP API (16 concurrent clients) and writes, for each,
/// a verify-purchase request with its own freshly signed transaction. Users are `<prefix><index>`.
func preparePurchases(
    baseURL: String,
    creator: BookingCreator,
    caDirectory: String,
    count: Int,
    output: String,
    resourceId: String,
    bundleId: String,
    userPrefix: String
) async throws {
    let ca = try TestCA.load(from: URL(fileURLWithPath: caDirectory))
    let start = Date().addingTimeInterval(7 * 86_400)
    let startText = start.formatted(.iso8601)
    let endText = start.addingTimeInterval(3600).formatted(.iso8601)
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 120
    let session = URLSession(configuration: configuration)
    let workers = 16
    let began = Date()
    let lines = try await withThrowingTaskGroup(of: [String].self) { group in
        for worker in 0..<workers {
            group.addTask {
                var lines: [String] = []
                for index in stride(from: worker, to: count, by: workers) {
                    let user = "\(userPrefix)\(index)"
                    var request = URLRequest(url: URL(string: "\(baseURL)/api/bookings")!)
                    request.httpMethod = "POST"
                    creator.authorize(&request, user: user)
                    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                    request.httpBody = Data(#"{"resourceId":"\#(resourceId)","start":"\#(startText)","end":"\#(endText)"}"#.utf8)
                    let (data, response) = try await session.data(for: request)
                    guard (response as? HTTPURLResponse)?.statusCode == 201,
                        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                        let booking = object["booking"] as? [String: Any], let id = booking["id"] as? Int,
                        let product = booking["requiredProductId"] as? String
                    else {
                        throw NSError(
                            domain: "BerthBenchmarks",
                            code: 1,
                            userInfo: [NSLocalizedDescriptionKey: "booking failed: \(String(decoding: data, as: UTF8.self))"]
                        )
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
    let seconds = Date().timeIntervalSince(began)
    print(
        String(
            format: "prepared %d bookings and signed purchases in %.1f s (%.0f bookings/s) into %@",
            lines.count,
            seconds,
            Double(lines.count) / seconds,
            output
        )
    )
}

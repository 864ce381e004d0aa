import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OutboundHTTP

/// One HTTP exchange with Apple, retried by ``RetryPolicy`` on 429, 5xx, timeouts and network errors.
struct AppleHTTP: Sendable {
    let client: HTTPClient
    let retry: RetryPolicy

    struct Reply: Sendable {
        var status: Int
        var body: Data
    }

    /// Sends the request built by `make` (called per attempt, so tokens stay fresh).
    func send(_ make: @Sendable () throws -> HTTPClientRequest) async throws(AppStoreAPIError) -> Reply {
        var attempt = 0
        while true {
            attempt += 1
            var retryAfter: Duration?
            let failure: AppStoreAPIError
            do {
                let request = try make()
                let response = try await client.execute(
                    request,
                    timeout: TimeAmount.nanoseconds(
                        Int64(retry.timeout.components.seconds) * 1_000_000_000 + retry.timeout.components.attoseconds / 1_000_000_000
                    )
                )
                let body = Data((try await response.body.collect(upTo: 4 << 20)).readableBytesView)
                let status = Int(response.status.code)
                switch status {
                case 429:
                    retryAfter = RetryPolicy.retryAfter(response.headers.first(name: "Retry-After"))
                    failure = AppStoreAPIError(.rateLimited, "Apple answered 429 Too Many Requests", retryable: true)
                case 500...599:
                    retryAfter = RetryPolicy.retryAfter(response.headers.first(name: "Retry-After"))
                    failure = AppStoreAPIError(.unavailable, "Apple answered \(status)", retryable: true)
                default:
                    return Reply(status: status, body: body)
                }
            } catch let error as AppStoreAPIError {
                throw error
            } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                failure = AppStoreAPIError(.timeout, "Apple did not answer in time", retryable: true)
            } catch {
                failure = AppStoreAPIError(.timeout, "could not reach Apple: \(TransportFailure.describe(error))", retryable: true)
            }
            guard attempt < retry.maxAttempts else { throw failure }
            try? await Task.sleep(for: retry.delay(afterAttempt: attempt, retryAfter: retryAfter))
        }
    }
}

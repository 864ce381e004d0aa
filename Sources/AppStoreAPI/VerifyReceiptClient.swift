import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A client of Apple's legacy `verifyReceipt` endpoint: Production first, Sandbox when Apple answers
/// 21007 (a sandbox receipt sent to production), Production when Sandbox answers 21008; statuses
/// mapped to typed errors, the temporary ones retryable.
public struct VerifyReceiptClient: Sendable {
    public struct Endpoints: Sendable {
        public var production: String
        public var sandbox: String

        public init(
            production: String = "https://buy.itunes.apple.com/verifyReceipt",
            sandbox: String = "https://sandbox.itunes.apple.com/verifyReceipt"
        ) {
            self.production = production
            self.sandbox = sandbox
        }
    }

    /// What Apple answered, reduced to what Berth reads.
    public struct Response: Decodable, Sendable {
        public struct Entry: Decodable, Sendable {
            public var productId: String?
            public var transactionId: String?
            public var originalTransactionId: String?
            public var purchaseDateMs: String?
            public var expiresDateMs: String?
            public var cancellationDateMs: String?

            enum CodingKeys: String, CodingKey {
                case productId = "product_id", transactionId = "transaction_id", originalTransactionId = "original_transaction_id"
                case purchaseDateMs = "purchase_date_ms", expiresDateMs = "expires_date_ms", cancellationDateMs = "cancellation_date_ms"
            }
        }

        public struct Receipt: Decodable, Sendable {
            public var bundleId: String?
            public var inApp: [Entry]?
            enum CodingKeys: String, CodingKey { case bundleId = "bundle_id", inApp = "in_app" }
        }

        /// One element of `pending_renewal_info` (Apple writes its numbers as strings).
        public struct PendingRenewal: Decodable, Sendable {
            public var originalTransactionId: String?
            public var autoRenewProductId: String?
            public var autoRenewStatus: String?
            public var isInBillingRetryPeriod: String?
            public var gracePeriodExpiresDateMs: String?
            public var expirationIntent: String?

            enum CodingKeys: String, CodingKey {
                case originalTransactionId = "original_transaction_id", autoRenewProductId = "auto_renew_product_id", autoRenewStatus =
                    "auto_renew_status"
                case isInBillingRetryPeriod = "is_in_billing_retry_period", gracePeriodExpiresDateMs = "grace_period_expires_date_ms"
                case expirationIntent = "expiration_intent"
            }
        }

        public var status: Int
        public var environment: String?
        public var receipt: Receipt?
        public var latestReceiptInfo: [Entry]?
        public var pendingRenewalInfo: [PendingRenewal]?
        /// Apple's answer as it came (FT Chinese's clients receive it as is).
        public var raw: Data = Data()

        enum CodingKeys: String, CodingKey {
            case status, environment, receipt
            case latestReceiptInfo = "latest_receipt_info", pendingRenewalInfo = "pending_renewal_info"
        }
    }

    let endpoints: Endpoints
    let http: AppleHTTP
    let sharedSecret: String?

    public init(endpoints: Endpoints = Endpoints(), sharedSecret: String?, httpClient: HTTPClient, retry: RetryPolicy = RetryPolicy()) {
        self.endpoints = endpoints
        self.sharedSecret = sharedSecret
        self.http = AppleHTTP(client: httpClient, retry: retry)
    }

    /// Verifies a base64 receipt with Apple. Status 0 (and 21006, an expired subscription's valid
    /// receipt) return the response; every other status throws.
    public func verify(receiptData: String, excludeOldTransactions: Bool = false) async throws(AppStoreAPIError) -> Response {
        var response = try await post(receiptData, to: endpoints.production, excludeOld: excludeOldTransactions)
        if response.status == 21007 {
            response = try await post(receiptData, to: endpoints.sandbox, excludeOld: excludeOldTransactions)
            if response.status == 21008 {
                response = try await post(receiptData, to: endpoints.production, excludeOld: excludeOldTransactions)
            }
        }
        try Self.check(response.status)
        return response
    }

    /// Apple's documented statuses, mapped.
    static func check(_ status: Int) throws(AppStoreAPIError) {
        switch status {
        case 0, 21006:
            return
        case 21004:
            throw AppStoreAPIError(.sharedSecretMismatch, "the shared secret does not match the app's (21004)", appleCode: status)
        case 21005, 21009, 21100...21199:
            throw AppStoreAPIError(.unavailable, "Apple could not process the receipt now (\(status))", retryable: true, appleCode: status)
        case 21000, 21002, 21003, 21010:
            throw AppStoreAPIError(.receiptInvalid, "Apple refused the receipt (\(status))", appleCode: status)
        default:
            throw AppStoreAPIError(.receiptInvalid, "Apple answered status \(status)", appleCode: status)
        }
    }

    private func post(_ receiptData: String, to url: String, excludeOld: Bool) async throws(AppStoreAPIError) -> Response {
        var payload: [String: Any] = ["receipt-data": receiptData, "exclude-old-transactions": excludeOld]
        if let sharedSecret { payload["password"] = sharedSecret }
        guard let body = try? JSONSerialization.data(withJSONObject: payload) else {
            throw AppStoreAPIError(.invalidResponse, "cannot encode the request")
        }
        let reply = try await http.send {
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
            return request
        }
        guard (200..<300).contains(reply.status) else {
            throw AppStoreAPIError(.unavailable, "verifyReceipt answered HTTP \(reply.status)", retryable: reply.status >= 500, appleCode: nil)
        }
        do {
            var response = try JSONDecoder().decode(Response.self, from: reply.body)
            response.raw = reply.body
            return response
        } catch {
            throw AppStoreAPIError(.invalidResponse, "verifyReceipt's answer is not the documented JSON")
        }
    }
}

extension VerifyReceiptClient: CustomStringConvertible, CustomReflectable {
    /// The endpoints, never the shared secret (a client can be part of something logged).
    public var description: String { "VerifyReceiptClient(production: \(endpoints.production), sandbox: \(endpoints.sandbox))" }
    public var customMirror: Mirror { Mirror(self, children: ["endpoints": endpoints], displayStyle: .struct) }
}

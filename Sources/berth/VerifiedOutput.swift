import AppleSignedData
import Foundation

/// Renders verified data as the JSON Apple signed, with every field (also ones Berth does not model).
enum VerifiedOutput {
    static func render(_ verified: VerifiedAnySignedData) throws -> (kind: String, json: String, trust: String) {
        switch verified {
        case .transaction(let value):
            return ("transaction", try pretty(try object(value.rawPayload)), describe(value.trust))
        case .renewalInfo(let value):
            return ("renewal info", try pretty(try object(value.rawPayload)), describe(value.trust))
        case .appTransaction(let value):
            return ("app transaction", try pretty(try object(value.rawPayload)), describe(value.trust))
        case .notification(let value):
            var payload = try object(value.notification.rawPayload)
            if var data = payload["data"] as? [String: Any] {
                if let transaction = value.transaction { data["signedTransactionInfo"] = try object(transaction.rawPayload) }
                if let renewal = value.renewalInfo { data["signedRenewalInfo"] = try object(renewal.rawPayload) }
                payload["data"] = data
            }
            return ("notification", try pretty(payload), describe(value.notification.trust))
        }
    }

    /// A decoded receipt as JSON (dates as epoch milliseconds, like Apple's JWS payloads).
    static func render(_ receipt: AppReceipt) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(receipt), as: UTF8.self)
    }

    private static func object(_ data: Data) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw SignedDataError(.malformed, "payload is not a JSON object")
        }
        return object
    }

    private static func pretty(_ object: [String: Any]) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    private static func describe<P>(_ trust: VerifiedSignedData<P>.Trust) -> String {
        switch trust {
        case .chain(let fingerprint): "chain to root sha256 \(fingerprint)"
        case .localTesting: "local testing data, not signed by Apple"
        }
    }
}

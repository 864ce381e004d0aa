import Foundation

/// Which Apple payload a JWS carries, told apart by fields only that payload has.
enum SignedPayloadKind {
    case transaction, renewalInfo, notification, appTransaction
}

extension CompactJWS {
    private struct KindProbe: Decodable {
        var notificationType: String?
        var receiptType: String?
        var transactionId: String?
        var autoRenewProductId: String?
        var autoRenewStatus: Int?
    }

    func payloadKind() throws(SignedDataError) -> SignedPayloadKind {
        guard let probe = try? JSONDecoder().decode(KindProbe.self, from: payload) else {
            throw SignedDataError(.malformed, "payload is not a JSON object")
        }
        if probe.notificationType != nil { return .notification }
        if probe.receiptType != nil { return .appTransaction }
        if probe.transactionId != nil { return .transaction }
        if probe.autoRenewProductId != nil || probe.autoRenewStatus != nil { return .renewalInfo }
        throw SignedDataError(.malformed, "payload is none of transaction, renewal info, notification or app transaction")
    }
}

import Foundation
import SwiftASN1

extension AppReceipt {
    /// Decodes the receipt payload: a SET of `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
    init(payload bytes: ArraySlice<UInt8>) throws(SignedDataError) {
        let attributes = try ReceiptASN1.attributes(bytes, what: "receipt payload")
        self.init()
        for (type, value) in attributes {
            switch type {
            case ReceiptField.receiptType: receiptType = ReceiptASN1.string(value)
            case ReceiptField.bundleId: bundleId = ReceiptASN1.string(value)
            case ReceiptField.applicationVersion: applicationVersion = ReceiptASN1.string(value)
            case ReceiptField.originalApplicationVersion: originalApplicationVersion = ReceiptASN1.string(value)
            case ReceiptField.creationDate: creationDate = ReceiptASN1.date(value)
            case ReceiptField.expirationDate: expirationDate = ReceiptASN1.date(value)
            case ReceiptField.inAppPurchase: inAppPurchases.append(try InAppPurchase(payload: value))
            default: break
            }
        }
    }
}

extension AppReceipt.InAppPurchase {
    init(payload bytes: ArraySlice<UInt8>) throws(SignedDataError) {
        self.init()
        for (type, value) in try ReceiptASN1.attributes(bytes, what: "in-app purchase entry") {
            switch type {
            case ReceiptField.quantity: quantity = ReceiptASN1.integer(value).map(Int.init)
            case ReceiptField.productId: productId = ReceiptASN1.string(value)
            case ReceiptField.transactionId: transactionId = ReceiptASN1.string(value)
            case ReceiptField.originalTransactionId: originalTransactionId = ReceiptASN1.string(value)
            case ReceiptField.purchaseDate: purchaseDate = ReceiptASN1.date(value)
            case ReceiptField.originalPurchaseDate: originalPurchaseDate = ReceiptASN1.date(value)
            case ReceiptField.subscriptionExpirationDate: subscriptionExpirationDate = ReceiptASN1.date(value)
            case ReceiptField.cancellationDate: cancellationDate = ReceiptASN1.date(value)
            case ReceiptField.webOrderLineItemId: webOrderLineItemId = ReceiptASN1.integer(value)
            case ReceiptField.isTrialPeriod: isTrialPeriod = ReceiptASN1.integer(value).map { $0 != 0 }
            case ReceiptField.isInIntroOfferPeriod: isInIntroOfferPeriod = ReceiptASN1.integer(value).map { $0 != 0 }
            case ReceiptField.promotionalOfferIdentifier: promotionalOfferIdentifier = ReceiptASN1.string(value)
            default: break
            }
        }
    }
}

/// The small ASN.1 vocabulary of receipts, on swift-asn1's BER parser.
enum ReceiptASN1 {
    static func attributes(_ bytes: ArraySlice<UInt8>, what: String) throws(SignedDataError) -> [(Int, ArraySlice<UInt8>)] {
        do {
            let root = try BER.parse(bytes)
            guard root.identifier == .set, case .constructed(let children) = root.content else {
                throw SignedDataError(.malformed, "\(what) is not an ASN.1 SET")
            }
            return try children.map { child in
                guard child.identifier == .sequence, case .constructed(let fields) = child.content else {
                    throw SignedDataError(.malformed, "\(what) holds a non-SEQUENCE attribute")
                }
                let parts = Array(fields)
                guard parts.count == 3 else { throw SignedDataError(.malformed, "\(what) attribute has \(parts.count) fields, not 3") }
                let type = try Int(berEncoded: parts[0])
                let value = try ASN1OctetString(berEncoded: parts[2])
                return (type, value.bytes)
            }
        } catch let error as SignedDataError {
            throw error
        } catch {
            throw SignedDataError(.malformed, "\(what) is not valid ASN.1")
        }
    }

    /// A UTF8String or IA5String wrapped in the attribute's OCTET STRING.
    static func string(_ bytes: ArraySlice<UInt8>) -> String? {
        guard let node = try? BER.parse(bytes) else { return nil }
        if let utf8 = try? ASN1UTF8String(berEncoded: node) { return String(utf8) }
        if let ia5 = try? ASN1IA5String(berEncoded: node) { return String(ia5) }
        return nil
    }

    static func integer(_ bytes: ArraySlice<UInt8>) -> Int64? {
        guard let node = try? BER.parse(bytes) else { return nil }
        return try? Int64(berEncoded: node)
    }

    /// RFC 3339 dates ("2015-09-16T19:48:24Z"); an empty string (no date) decodes to nil.
    static func date(_ bytes: ArraySlice<UInt8>) -> AppleTimestamp? {
        guard let text = string(bytes), !text.isEmpty else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return AppleTimestamp(date) }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return AppleTimestamp(date) }
        return nil
    }
}

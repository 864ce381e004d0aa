import Foundation

/// `purchases.products.get`: a one-time product purchase as the Play Developer API answers it.
/// Google sends 64-bit numbers as strings; every member may be absent.
public struct ProductPurchase: Codable, Hashable, Sendable {
    public var kind: String?
    public var purchaseTimeMillis: String?
    /// 0 purchased, 1 canceled, 2 pending.
    public var purchaseState: Int?
    /// 0 yet to be consumed, 1 consumed.
    public var consumptionState: Int?
    public var developerPayload: String?
    public var orderId: String?
    /// Absent for a real purchase; 0 test (license tester), 1 promo, 2 rewarded.
    public var purchaseType: Int?
    /// 0 yet to be acknowledged, 1 acknowledged.
    public var acknowledgementState: Int?
    public var purchaseToken: String?
    public var productId: String?
    public var quantity: Int?
    public var obfuscatedExternalAccountId: String?
    public var obfuscatedExternalProfileId: String?
    public var regionCode: String?
    public var refundableQuantity: Int?

    public init(
        kind: String? = "androidpublisher#productPurchase",
        purchaseTimeMillis: String? = nil,
        purchaseState: Int? = 0,
        consumptionState: Int? = 0,
        orderId: String? = nil,
        purchaseType: Int? = nil,
        acknowledgementState: Int? = 0,
        purchaseToken: String? = nil,
        productId: String? = nil,
        quantity: Int? = 1,
        obfuscatedExternalAccountId: String? = nil,
        regionCode: String? = "US"
    ) {
        self.kind = kind
        self.purchaseTimeMillis = purchaseTimeMillis
        self.purchaseState = purchaseState
        self.consumptionState = consumptionState
        self.orderId = orderId
        self.purchaseType = purchaseType
        self.acknowledgementState = acknowledgementState
        self.purchaseToken = purchaseToken
        self.productId = productId
        self.quantity = quantity
        self.obfuscatedExternalAccountId = obfuscatedExternalAccountId
        self.regionCode = regionCode
    }

    public var purchasedAt: Date? { purchaseTimeMillis.flatMap(Int64.init).map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) } }
}

/// `purchases.subscriptionsv2.get`: a subscription purchase (one token for its whole life, renewals
/// included; an upgrade or a resubscription makes a new token linked to the old one).
public struct SubscriptionPurchaseV2: Codable, Hashable, Sendable {
    public var kind: String?
    public var regionCode: String?
    public var lineItems: [LineItem]?
    public var startTime: String?
    /// `SUBSCRIPTION_STATE_ACTIVE`, `_CANCELED`, `_IN_GRACE_PERIOD`, `_ON_HOLD`, `_PAUSED`, `_EXPIRED`, `_PENDING`, `_PENDING_PURCHASE_CANCELED`.
    public var subscriptionState: String?
    public var latestOrderId: String?
    public var linkedPurchaseToken: String?
    /// Present (an empty object) for a license tester's purchase.
    public var testPurchase: [String: JSONValue]?
    /// `ACKNOWLEDGEMENT_STATE_PENDING` or `ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED`.
    public var acknowledgementState: String?
    public var externalAccountIdentifiers: ExternalAccountIdentifiers?
    public var canceledStateContext: [String: JSONValue]?
    public var pausedStateContext: [String: JSONValue]?

    public struct LineItem: Codable, Hashable, Sendable {
        public var productId: String?
        public var expiryTime: String?
        public var autoRenewingPlan: AutoRenewingPlan?
        public var prepaidPlan: [String: JSONValue]?
        public var offerDetails: OfferDetails?
        public var latestSuccessfulOrderId: String?

        public init(
            productId: String?,
            expiryTime: String?,
            autoRenewingPlan: AutoRenewingPlan? = nil,
            offerDetails: OfferDetails? = nil,
            latestSuccessfulOrderId: String? = nil
        ) {
            self.productId = productId
            self.expiryTime = expiryTime
            self.autoRenewingPlan = autoRenewingPlan
            self.offerDetails = offerDetails
            self.latestSuccessfulOrderId = latestSuccessfulOrderId
        }
    }

    public struct AutoRenewingPlan: Codable, Hashable, Sendable {
        public var autoRenewEnabled: Bool?
        /// The plan's current price per period (Google: before discounts, and before tax where prices
        /// are tax-exclusive).
        public var recurringPrice: Money?
        public init(autoRenewEnabled: Bool?, recurringPrice: Money? = nil) {
            self.autoRenewEnabled = autoRenewEnabled
            self.recurringPrice = recurringPrice
        }
    }

    /// google.type.Money: whole `units` (an int64 as a string) and `nanos` (billionths, same sign).
    public struct Money: Codable, Hashable, Sendable {
        public var currencyCode: String?
        public var units: String?
        public var nanos: Int?
        public init(currencyCode: String?, units: String?, nanos: Int?) {
            self.currencyCode = currencyCode
            self.units = units
            self.nanos = nanos
        }

        /// The amount in thousandths of the unit (as Apple signs prices); nil when it does not parse,
        /// has no currency or does not fit.
        public var milliunits: Int64? {
            guard let code = currencyCode, code.count == 3, let whole = Int64(units ?? "0") else { return nil }
            // nanos comes from Google's answer: any Int, Int.min included (abs would trap), so a range.
            let fraction = Int64(nanos ?? 0)
            guard (-999_999_999...999_999_999).contains(fraction) else { return nil }
            let (scaled, overflow) = whole.multipliedReportingOverflow(by: 1000)
            guard !overflow else { return nil }
            let (total, overflow2) = scaled.addingReportingOverflow(fraction / 1_000_000)
            return overflow2 ? nil : total
        }
    }

    public struct OfferDetails: Codable, Hashable, Sendable {
        public var basePlanId: String?
        public var offerId: String?
        public var offerTags: [String]?
        public init(basePlanId: String?, offerId: String? = nil) {
            self.basePlanId = basePlanId
            self.offerId = offerId
        }
    }

    public struct ExternalAccountIdentifiers: Codable, Hashable, Sendable {
        public var externalAccountId: String?
        public var obfuscatedExternalAccountId: String?
        public var obfuscatedExternalProfileId: String?
        public init(obfuscatedExternalAccountId: String?) { self.obfuscatedExternalAccountId = obfuscatedExternalAccountId }
    }

    public init(
        kind: String? = "androidpublisher#subscriptionPurchaseV2",
        regionCode: String? = "US",
        lineItems: [LineItem],
        startTime: String?,
        subscriptionState: String,
        latestOrderId: String?,
        linkedPurchaseToken: String? = nil,
        testPurchase: [String: JSONValue]? = nil,
        acknowledgementState: String = "ACKNOWLEDGEMENT_STATE_PENDING",
        externalAccountIdentifiers: ExternalAccountIdentifiers? = nil
    ) {
        self.kind = kind
        self.regionCode = regionCode
        self.lineItems = lineItems
        self.startTime = startTime
        self.subscriptionState = subscriptionState
        self.latestOrderId = latestOrderId
        self.linkedPurchaseToken = linkedPurchaseToken
        self.testPurchase = testPurchase
        self.acknowledgementState = acknowledgementState
        self.externalAccountIdentifiers = externalAccountIdentifiers
    }

    public var startedAt: Date? { startTime.flatMap(RFC3339.date) }
}

/// One entry of `purchases.voidedpurchases.list`.
public struct VoidedPurchase: Codable, Hashable, Sendable {
    public var kind: String?
    public var purchaseToken: String?
    public var purchaseTimeMillis: String?
    public var voidedTimeMillis: String?
    public var orderId: String?
    /// 0 user, 1 developer, 2 Google.
    public var voidedSource: Int?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud, 6 friendly fraud, 7 chargeback.
    public var voidedReason: Int?
    public var voidedQuantity: Int?

    public init(
        purchaseToken: String?,
        purchaseTimeMillis: String?,
        voidedTimeMillis: String?,
        orderId: String?,
        voidedSource: Int? = 0,
        voidedReason: Int? = 1,
        voidedQuantity: Int? = nil
    ) {
        self.kind = "androidpublisher#voidedPurchase"
        self.purchaseToken = purchaseToken
        self.purchaseTimeMillis = purchaseTimeMillis
        self.voidedTimeMillis = voidedTimeMillis
        self.orderId = orderId
        self.voidedSource = voidedSource
        self.voidedReason = voidedReason
        self.voidedQuantity = voidedQuantity
    }

    public var voidedAt: Date? { voidedTimeMillis.flatMap(Int64.init).map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) } }
}

public struct VoidedPurchasesPage: Codable, Hashable, Sendable {
    public struct TokenPagination: Codable, Hashable, Sendable {
        public var nextPageToken: String?
        public init(nextPageToken: String?) { self.nextPageToken = nextPageToken }
    }

    public var voidedPurchases: [VoidedPurchase]?
    public var tokenPagination: TokenPagination?

    public init(voidedPurchases: [VoidedPurchase], nextPageToken: String?) {
        self.voidedPurchases = voidedPurchases
        self.tokenPagination = nextPageToken.map { TokenPagination(nextPageToken: $0) }
    }
}

/// RFC 3339 timestamps as Google writes them (`2026-11-27T10:00:00Z`, with or without fractions up to nanoseconds).
public enum RFC3339 {
    public static func date(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        var whole = text
        var fraction: Double = 0
        if let dot = text.firstIndex(of: ".") {
            guard let zone = text[dot...].firstIndex(where: { $0 == "Z" || $0 == "+" || $0 == "-" }) else { return nil }
            let digits = text[text.index(after: dot)..<zone]
            guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy(\.isASCIIDigit), let value = Double("0." + digits) else { return nil }
            fraction = value
            whole = String(text[..<dot]) + String(text[zone...])
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        // Whole milliseconds, as Berth stores times: a date read twice compares equal.
        return formatter.date(from: whole).map { Date(timeIntervalSince1970: (($0.timeIntervalSince1970 + fraction) * 1000).rounded() / 1000) }
    }

    public static func string(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

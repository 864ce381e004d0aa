import Foundation

/// A tenant's card rail through Stripe (its own Stripe account): where its keys are, how long the
/// payment sheet may hold a slot and whether payments that arrive too late are refunded by Berth.
public struct StripeSettings: Codable, Hashable, Sendable {
    /// The environment variable holding the secret key (`sk_live_…` / `sk_test_…`; a restricted `rk_…` key works too).
    public var secretKeyEnv: String
    /// The publishable key the app's Payment Sheet needs (`pk_…`; public).
    public var publishableKey: String
    /// The environment variables holding the webhook endpoint's signing secrets (`whsec_…`): more than
    /// one while a secret is rolled; a signature by any of them is accepted.
    public var webhookSecretEnvs: [String]
    /// Stripe's API (default `https://api.stripe.com`); tests point it at the stand-in.
    public var apiBase: String?
    /// An environment variable whose value, when set, replaces `apiBase`.
    public var apiBaseEnv: String?
    /// The `Stripe-Version` header (default: the account's version).
    public var apiVersion: String?
    /// How long the first card payment of a booking extends its hold, so that 3-D Secure has time. Default 20.
    public var cardHoldMinutes: Int?
    /// Refund a payment that succeeded after its slot went to someone else (default true).
    public var autoRefundLatePayments: Bool?
    /// How long after its creation Berth asks Stripe about a payment still open (its events may be
    /// overdue). Default 10 minutes; the hold's end is always checked.
    public var reconcileAfterMinutes: Int?

    public static let defaultAPIBase = "https://api.stripe.com"

    /// An API base the secret key may be sent to: https, or plain http to a loopback address (a stand-in).
    public static func acceptable(apiBase: String) -> Bool {
        guard let url = URLComponents(string: apiBase), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty,
            url.user == nil, url.password == nil
        else { return false }
        return scheme == "https" || (scheme == "http" && ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host))
    }

    public init(
        secretKeyEnv: String,
        publishableKey: String,
        webhookSecretEnvs: [String],
        apiBase: String? = nil,
        apiBaseEnv: String? = nil,
        apiVersion: String? = nil,
        cardHoldMinutes: Int? = nil,
        autoRefundLatePayments: Bool? = nil,
        reconcileAfterMinutes: Int? = nil
    ) {
        self.secretKeyEnv = secretKeyEnv
        self.publishableKey = publishableKey
        self.webhookSecretEnvs = webhookSecretEnvs
        self.apiBase = apiBase
        self.apiBaseEnv = apiBaseEnv
        self.apiVersion = apiVersion
        self.cardHoldMinutes = cardHoldMinutes
        self.autoRefundLatePayments = autoRefundLatePayments
        self.reconcileAfterMinutes = reconcileAfterMinutes
    }

    public var holdMinutes: Int { cardHoldMinutes ?? 20 }
    public var refundsLatePayments: Bool { autoRefundLatePayments ?? true }
    public var reconcileAfter: TimeInterval { TimeInterval((reconcileAfterMinutes ?? 10) * 60) }

    func validate(tenant: String) throws {
        guard !secretKeyEnv.isEmpty else { throw CatalogError("tenant \(tenant): stripe.secretKeyEnv is empty") }
        guard publishableKey.hasPrefix("pk_") else { throw CatalogError("tenant \(tenant): stripe.publishableKey must be a publishable key (pk_…)") }
        guard !webhookSecretEnvs.isEmpty, webhookSecretEnvs.allSatisfy({ !$0.isEmpty }) else {
            throw CatalogError("tenant \(tenant): stripe.webhookSecretEnvs must name at least one environment variable")
        }
        if let apiBase, !Self.acceptable(apiBase: apiBase) {
            throw CatalogError(
                "tenant \(tenant): stripe.apiBase must be an https URL (plain http only to a loopback address: the secret key travels in it)"
            )
        }
        if let minutes = cardHoldMinutes, !(1...120).contains(minutes) {
            throw CatalogError("tenant \(tenant): stripe.cardHoldMinutes must be 1...120")
        }
        if let minutes = reconcileAfterMinutes, !(1...1440).contains(minutes) {
            throw CatalogError("tenant \(tenant): stripe.reconcileAfterMinutes must be 1...1440")
        }
    }
}

/// How a booking may be paid.
public enum PaymentRail: String, Codable, Hashable, Sendable {
    /// An App Store (in-app) purchase of the booking's product.
    case appStore = "app_store"
    /// A card, Apple Pay or Google Pay payment through the tenant's payment provider.
    case card
}

extension Tenant {
    /// How the tenant's bookings may be paid: `bookingRules.paymentRails`, by default the App Store
    /// alone, or the card alone for a tenant with `stripe` (the stores forbid in-app purchase for
    /// services used outside the app; list both only while an app moves from one to the other).
    public var bookingPaymentRails: Set<PaymentRail> {
        if let rails = bookingRules?.paymentRails { return Set(rails) }
        return stripe == nil ? [.appStore] : [.card]
    }
}

extension AuditAction {
    public static let cardPaymentCreated = AuditAction(rawValue: "card_payment.created")
    public static let cardPaymentCanceled = AuditAction(rawValue: "card_payment.canceled")
    public static let cardPaymentDisputed = AuditAction(rawValue: "card_payment.disputed")
    public static let cardPaymentDisputeClosed = AuditAction(rawValue: "card_payment.dispute_closed")
    public static let cardRefundRequested = AuditAction(rawValue: "card_refund.requested")
    public static let cardRefunded = AuditAction(rawValue: "card_payment.refunded")
    public static let cardRefundFailed = AuditAction(rawValue: "card_refund.failed")
    public static let cardDepositRequested = AuditAction(rawValue: "card_deposit.requested")
    public static let cardDepositAuthorized = AuditAction(rawValue: "card_deposit.authorized")
    public static let cardDepositCaptured = AuditAction(rawValue: "card_deposit.captured")
    public static let cardDepositReleased = AuditAction(rawValue: "card_deposit.released")
    public static let cardDepositCaptureRequested = AuditAction(rawValue: "card_deposit.capture_requested")
    public static let cardDepositReleaseRequested = AuditAction(rawValue: "card_deposit.release_requested")
}

extension WebhookEventType {
    /// A card payment is disputed (or its dispute closed): `data.disputeStatus`.
    public static let paymentDisputed = WebhookEventType(rawValue: "payment.disputed")
}

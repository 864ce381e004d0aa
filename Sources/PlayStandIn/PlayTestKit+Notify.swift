import Foundation
import GooglePlayAPI

extension PlayTestKit {
    /// A signed Pub/Sub push as Google would send it: the body, and its `Authorization` header value.
    public struct Push: Codable, Sendable {
        public var body: PubSubPush
        public var authorization: String
    }

    /// The names `notify --type` takes: Google's subscription and one-time product notification
    /// types, `VOIDED_PURCHASE` and `TEST`.
    public static var notificationTypes: [String] {
        (Array(DeveloperNotification.subscriptionTypes.keys) + Array(DeveloperNotification.oneTimeProductTypes.keys) + ["VOIDED_PURCHASE", "TEST"])
            .sorted()
    }

    /// Moves the purchase as the notification says happened (a renewal extends it, a void voids it…),
    /// then returns the push that tells of it, its OIDC token signed by the push key for `audience`
    /// (by default the package name) and `email`.
    public func notify(
        package: String,
        token: String,
        type: String,
        audience: String? = nil,
        email: String = PlayTestKit.pushServiceAccountEmail,
        now: Date = Date()
    ) throws -> Push {
        var notification = DeveloperNotification(packageName: package, eventTime: now)
        if type == "TEST" {
            notification.testNotification = .init()
        } else {
            guard var record = record(token), record.package == package else {
                throw TestKitFailure("no purchase \(token.prefix(12))… of \(package) in \(directory.path)")
            }
            let period = TimeInterval(record.periodDays) * 86_400
            switch type {
            case "VOIDED_PURCHASE":
                record.voidedAt = now
                record.purchaseState = 1
                if record.subscription {
                    record.state = "EXPIRED"
                    record.expiresAt = now
                    record.autoRenew = false
                }
                // Google voids an order: a subscription's current period (a renewal's own order id).
                notification.voidedPurchaseNotification = .init(
                    purchaseToken: token,
                    orderId: record.latestOrderId,
                    productType: record.subscription ? 1 : 2
                )
            case let name where DeveloperNotification.oneTimeProductTypes[name] != nil:
                guard !record.subscription, let number = DeveloperNotification.oneTimeProductTypes[name] else {
                    throw TestKitFailure("\(type) is about one-time products")
                }
                if name == "ONE_TIME_PRODUCT_CANCELED" { record.purchaseState = 1 }
                // A pending payment (cash, a bank transfer) went through.
                if name == "ONE_TIME_PRODUCT_PURCHASED", record.purchaseState == 2 { record.purchaseState = 0 }
                notification.oneTimeProductNotification = .init(notificationType: number, purchaseToken: token, sku: record.productId)
            case let name where DeveloperNotification.subscriptionTypes[name] != nil:
                guard record.subscription, let number = DeveloperNotification.subscriptionTypes[name] else {
                    throw TestKitFailure("\(type) is about subscriptions")
                }
                switch name {
                case "SUBSCRIPTION_RENEWED", "SUBSCRIPTION_RECOVERED", "SUBSCRIPTION_RESTARTED":
                    record.renewals += name == "SUBSCRIPTION_RESTARTED" ? 0 : 1
                    record.expiresAt = max(record.expiresAt ?? now, now).addingTimeInterval(name == "SUBSCRIPTION_RESTARTED" ? 0 : period)
                    record.state = "ACTIVE"
                    record.autoRenew = true
                case "SUBSCRIPTION_CANCELED":
                    record.autoRenew = false
                    record.state = "CANCELED"
                case "SUBSCRIPTION_EXPIRED":
                    record.expiresAt = min(record.expiresAt ?? now, now)
                    record.state = "EXPIRED"
                    record.autoRenew = false
                case "SUBSCRIPTION_REVOKED":
                    record.expiresAt = now
                    record.state = "EXPIRED"
                    record.autoRenew = false
                    record.voidedAt = now
                case "SUBSCRIPTION_ON_HOLD":
                    record.expiresAt = min(record.expiresAt ?? now, now)
                    record.state = "ON_HOLD"
                case "SUBSCRIPTION_IN_GRACE_PERIOD":
                    record.state = "IN_GRACE_PERIOD"
                case "SUBSCRIPTION_PAUSED":
                    record.expiresAt = min(record.expiresAt ?? now, now)
                    record.state = "PAUSED"
                default:
                    break
                }
                notification.subscriptionNotification = .init(notificationType: number, purchaseToken: token, subscriptionId: record.productId)
            default:
                throw TestKitFailure("unknown notification type \(type); one of \(Self.notificationTypes.joined(separator: ", "))")
            }
            try save(record)
        }
        let data = try JSONEncoder().encode(notification)
        let messageId = String(UInt64.random(in: 1_000_000_000_000...9_999_999_999_999))
        let body = PubSubPush(
            message: .init(data: data.base64EncodedString(), messageId: messageId, publishTime: RFC3339.string(now)),
            subscription: "projects/berth-testkit/subscriptions/play-rtdn"
        )
        return Push(body: body, authorization: "Bearer " + (try pushToken(audience: audience ?? package, email: email, now: now)))
    }

    /// An OIDC token like the one Pub/Sub puts on a push: Google's issuer, the audience the push
    /// subscription names, the push service account's verified email.
    public func pushToken(audience: String, email: String = PlayTestKit.pushServiceAccountEmail, now: Date = Date()) throws -> String {
        let issued = now.timeIntervalSince1970.rounded(.down)
        return try RS256JWT.sign(
            claims: [
                "iss": .string(Self.issuer), "aud": .string(audience), "azp": .string("1" + String(UInt64.random(in: 10_000_000...99_999_999))),
                "email": .string(email), "email_verified": .bool(true), "sub": .string("1" + String(UInt64.random(in: 10_000_000...99_999_999))),
                "iat": .number(issued), "exp": .number(issued + 3600),
            ],
            kid: pushKeyId,
            key: pushKey
        )
    }
}

import AppStoreAPI
import AppleSignedData
import Domain
import Foundation
import Logging

/// After a link (an account claims a subscription), tells Apple the owner's appAccountToken (Set App
/// Account Token) so that Apple's later transactions and notifications of it carry the owner. Only
/// with the App Store Server API configured: the user id itself where the app's ids are UUIDs, else
/// the token cordova-plugin-purchase derives from it. Best effort: a refusal (a family
/// member's transaction, Apple unreachable) is logged and the link stands.
public struct SetAppAccountToken: Sendable {
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// The token that names `userId` to Apple.
    /// The id itself only where the app's user ids are UUIDs (`userIdFormat: uuid`); otherwise the
    /// token derived one-way from it, so that no other user can name themselves after it (T1).
    public static func token(for userId: String, policy: PurchasePolicy) -> UUID? {
        if policy.userIdIsToken, CanonicalUUID.isCanonical(userId) { return UUID(uuidString: userId) }
        return UUID(uuidString: AccountTokens.cordovaPlugin(userId))
    }

    /// Returns whether Apple accepted it.
    @discardableResult
    public func callAsFunction(runtime: TenantRuntime, originalTransactionId: String, environment: String, userId: String) async -> Bool {
        guard let api = runtime.serverAPI, let token = Self.token(for: userId, policy: runtime.purchasePolicy) else { return false }
        do {
            try await api.setAppAccountToken(
                originalTransactionId: originalTransactionId,
                token: token,
                environment: AppStoreEnvironment(rawValue: environment)
            )
            return true
        } catch {
            logger.warning(
                "Set App Account Token refused or unreachable; the link stands: \(error)",
                metadata: ["originalTransactionId": .string(originalTransactionId)]
            )
            return false
        }
    }
}

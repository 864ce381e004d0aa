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

    /// After a purchase or subscription of `store` was attributed to `owner` (an operator's decision,
    /// an account's link): Apple's later transactions and notifications of it should name the owner.
    /// Only for the App Store, with its server API configured, and when the proof does not name the
    /// owner already (`current`, the token the transaction carries). Returns whether Apple was told.
    @discardableResult
    public func afterAttribution(
        runtime: TenantRuntime,
        store: StoreName,
        originalTransactionId: String,
        environment: StoreEnvironment,
        owner: String,
        current: String? = nil
    ) async -> Bool {
        guard store == .appStore, runtime.appStore.serverAPI != nil, let token = Self.token(for: owner, policy: runtime.purchasePolicy),
            current?.lowercased() != token.uuidString.lowercased()
        else { return false }
        return await self(runtime: runtime, originalTransactionId: originalTransactionId, environment: environment, userId: owner)
    }

    /// Returns whether Apple accepted it.
    @discardableResult
    public func callAsFunction(runtime: TenantRuntime, originalTransactionId: String, environment: StoreEnvironment, userId: String) async -> Bool {
        guard let api = runtime.appStore.serverAPI, let token = Self.token(for: userId, policy: runtime.purchasePolicy) else { return false }
        do {
            try await api.setAppAccountToken(
                originalTransactionId: originalTransactionId,
                token: token,
                environment: AppStoreEnvironment(environment)
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

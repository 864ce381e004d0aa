import AppleSignedData
import AppStoreAPI
import Domain
import Foundation
import Logging

/// After a link (an account claims a subscription), tells Apple the owner's appAccountToken (Set App
/// Account Token) so that Apple's later transactions and notifications of it carry the owner. Only
/// with the App Store Server API configured, and only for users with a token: a user id that is a
/// UUID, else the token cordova-plugin-purchase derives from it. Best effort: a refusal (a family
/// member's transaction, Apple unreachable) is logged and the link stands.
public struct SetAppAccountToken: Sendable {
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// The token that names `userId` to Apple.
    public static func token(for userId: String) -> UUID? {
        UUID(uuidString: userId) ?? UUID(uuidString: AccountTokens.cordovaPlugin(userId))
    }

    /// Returns whether Apple accepted it.
    @discardableResult
    public func callAsFunction(runtime: TenantRuntime, originalTransactionId: String, environment: String, userId: String) async -> Bool {
        guard let api = runtime.serverAPI, let token = Self.token(for: userId) else { return false }
        do {
            try await api.setAppAccountToken(originalTransactionId: originalTransactionId, token: token, environment: AppStoreEnvironment(rawValue: environment))
            return true
        } catch {
            logger.warning("Set App Account Token refused or unreachable; the link stands: \(error)",
                           metadata: ["originalTransactionId": .string(originalTransactionId)])
            return false
        }
    }
}

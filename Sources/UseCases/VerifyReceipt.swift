import AppleSignedData
import Crypto
import Domain
import Foundation
import Logging

/// `POST /api/verify-receipt`: verify an app receipt offline and say whether it holds a running
/// subscription. Every answer is recorded with the receipt's SHA-256 (never the receipt).
public struct VerifyReceipt: Sendable {
    public struct Answer: Sendable {
        public var entitlement: Entitlement
        public var environment: AppStoreEnvironment?
    }

    let store: any Store
    let clock: any BerthClock
    let logger: Logger

    public init(store: any Store, clock: any BerthClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    public func callAsFunction(receiptData: String, bundleId: String?, userId: String?, runtime: TenantRuntime) async throws -> Answer {
        if let bundleId, bundleId != runtime.tenant.apple.bundleId {
            throw DomainError(.unprocessable, .wrongBundle, "this server verifies receipts of \(runtime.tenant.apple.bundleId), not \(bundleId)", field: "bundleId")
        }
        let now = clock.now()
        let verified: VerifiedReceipt
        do {
            verified = try await runtime.receiptVerifier.verify(base64: receiptData, expecting: runtime.expectations)
        } catch {
            let hash = Self.receiptHash(receiptData)
            logger.info("verify-receipt refused", metadata: ["receipt.sha256": .string(hash), "code": .string(error.code.rawValue)])
            let check = ReceiptCheck(tenantId: runtime.id, userId: userId, receiptSHA256: hash, outcome: error.code.rawValue, isPremium: false, productId: nil,
                                     expiresAt: nil, at: now)
            _ = try? await store.write { tx in try tx.receiptChecks.record(check) }
            throw DomainError(error, field: "receiptData", messagePrefix: "the receipt did not verify: ")
        }
        let periods = verified.receipt.inAppPurchases.compactMap { entry -> SubscriptionPeriod? in
            guard let product = entry.productId, let expiry = entry.subscriptionExpirationDate else { return nil }
            return SubscriptionPeriod(productId: product, expiresAt: expiry.date, cancelled: entry.cancellationDate != nil)
        }
        let subscriptions = Set(runtime.tenant.products.filter { $0.kind == .subscription }.map(\.id))
        let entitlement = EntitlementRules.entitlement(from: periods, subscriptionProducts: subscriptions, now: now)
        let check = ReceiptCheck(tenantId: runtime.id, userId: userId, receiptSHA256: verified.sha256, outcome: "verified", isPremium: entitlement.isPremium,
                                 productId: entitlement.productId, expiresAt: entitlement.expiresAt, at: now)
        try await store.write { tx in try tx.receiptChecks.record(check) }
        logger.info("verify-receipt", metadata: ["receipt.sha256": .string(String(verified.sha256.prefix(16))), "premium": .stringConvertible(entitlement.isPremium)])
        return Answer(entitlement: entitlement, environment: verified.receipt.environment)
    }

    private static func receiptHash(_ text: String) -> String {
        guard let data = Data(base64Encoded: text.filter { !$0.isWhitespace }) else { return "not-base64" }
        return SHA256.hash(data: data).hexString
    }
}

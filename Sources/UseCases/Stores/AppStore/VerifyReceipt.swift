import AppleSignedData
import Crypto
import Domain
import Foundation
import Logging

/// `POST /api/verify-receipt`: verify an app receipt (offline, and with Apple's verifyReceipt when
/// the tenant has a shared secret), store the subscriptions it shows for the user, and say from the
/// stored state whether the user is premium. Every receipt that verifies is recorded with its
/// SHA-256 (never the receipt); a refused one only in the log.
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
            throw DomainError(
                .unprocessable,
                .wrongBundle,
                "this server verifies receipts of \(runtime.tenant.apple.bundleId), not \(bundleId)",
                field: "bundleId"
            )
        }
        let now = clock.now()
        let result: ApplyReceipt.Result
        do {
            result = try await ApplyReceipt(store: store, clock: clock, logger: logger)(
                receiptData,
                runtime: runtime,
                userId: userId,
                actor: userId.map(Actor.user) ?? .system,
                source: "verify_receipt"
            )
        } catch let error as DomainError where error.kind != .unavailable {
            // A refused receipt leaves a log line, not a row: anyone with a key could otherwise grow
            // the database by one row per junk request (S9).
            let hash = Self.receiptHash(receiptData)
            logger.info(
                "verify-receipt refused",
                metadata: ["receipt.sha256": .string(String(hash.prefix(16))), "code": .string(error.code.rawValue)]
            )
            throw error
        }
        if !result.ownedByOthers.isEmpty, result.subscriptions.isEmpty {
            let check = ReceiptCheck(
                tenantId: runtime.id,
                userId: userId,
                receiptSHA256: result.receiptSHA256,
                outcome: ErrorCode.linkedToOtherAccount.rawValue,
                isPremium: false,
                productId: result.ownedByOthers.first?.productId,
                expiresAt: nil,
                at: now
            )
            try await store.write { tx in try tx.receiptChecks.record(check) }
            throw DomainError(.conflict, .linkedToOtherAccount, "the subscription in this receipt belongs to another account", field: "receiptData")
        }
        let entitlement = Self.entitlement(result.subscriptions, now: now)
        let check = ReceiptCheck(
            tenantId: runtime.id,
            userId: userId,
            receiptSHA256: result.receiptSHA256,
            outcome: "verified",
            isPremium: entitlement.isPremium,
            productId: entitlement.productId,
            expiresAt: entitlement.expiresAt,
            at: now
        )
        try await store.write { tx in try tx.receiptChecks.record(check) }
        logger.info(
            "verify-receipt",
            metadata: ["receipt.sha256": .string(String(result.receiptSHA256.prefix(16))), "premium": .stringConvertible(entitlement.isPremium)]
        )
        return Answer(entitlement: entitlement, environment: AppStoreEnvironment(result.environment))
    }

    /// The stored subscriptions decide: one that grants access now (the one that lasts longest),
    /// else the one that ended last.
    static func entitlement(_ subscriptions: [Subscription], now: Date) -> Entitlement {
        let entitled = subscriptions.filter { $0.state(at: now).entitles }
        if let best = entitled.max(by: { ($0.accessUntil(at: now) ?? .distantPast) < ($1.accessUntil(at: now) ?? .distantPast) }) {
            let grace = best.state(at: now) == .gracePeriod
            return Entitlement(
                isPremium: true,
                productId: best.productId,
                expiresAt: best.accessUntil(at: now),
                message: grace ? "Receipt verified; the renewal failed and the grace period still grants access" : "Receipt verified successfully"
            )
        }
        guard let last = subscriptions.max(by: { ($0.expiresAt ?? .distantPast) < ($1.expiresAt ?? .distantPast) }) else {
            return Entitlement(isPremium: false, productId: nil, expiresAt: nil, message: "Receipt verified; it holds no subscription")
        }
        let message =
            switch last.state(at: now) {
            case .revoked: "Receipt verified; the subscription was refunded or revoked"
            case .billingRetry: "Receipt verified; the renewal failed and Apple is retrying the payment"
            default: "Receipt verified; the subscription has expired"
            }
        return Entitlement(isPremium: false, productId: last.productId, expiresAt: last.expiresAt, message: message)
    }

    static func receiptHash(_ text: String) -> String {
        guard let data = Data(base64Encoded: text.filter { !$0.isWhitespace }) else { return "not-base64" }
        return SHA256.hash(data: data).hexString
    }
}

import AppStoreAPI
import AppleSignedData
import Crypto
import Domain
import Foundation
import Logging
import Synchronization

/// `POST /api/restore-purchases`: with the App Store Server API configured, reads the customer's
/// transaction history (Get Transaction History) from one transaction the caller proves is theirs,
/// and applies to the caller what Berth does not have yet, each through the normal claim (its kind's
/// checks, exactly once). Transactions Berth already has, for anyone, are left as they are (no
/// replay is recorded for a restore).
public struct RestorePurchases: Sendable {
    let store: any Store
    let claims: Claims
    let logger: Logger

    public init(store: any Store, claims: Claims, logger: Logger) {
        self.store = store
        self.claims = claims
        self.logger = logger
    }

    /// What happened to one transaction of the history.
    public struct Item: Sendable {
        public var transactionId: String
        public var productId: String
        /// `restored` (applied now), `known` (Berth already had it), or the refusal's code (for
        /// example `no_product_for_booking`: a booking's payment is kept as an unapplied payment).
        public var outcome: String
    }

    /// How the caller proves the history is theirs.
    public enum Proof: Sendable {
        /// A StoreKit 2 signed transaction the device holds (verified here).
        case jws(String)
        /// A transaction Berth already applied to this user.
        case owned(transactionId: String)
    }

    public func callAsFunction(runtime: TenantRuntime, userId: String, proof: Proof) async throws -> [Item] {
        guard let api = runtime.appStore.serverAPI else {
            throw DomainError(.unprocessable, .appleNotConfigured, "restoring needs the app's App Store Server API key (apple.serverAPI)")
        }
        let known: String
        switch proof {
        case .jws(let jws):
            do {
                let verified = try await runtime.appStore.verifier.verifyTransaction(jws, expecting: runtime.appStore.expectations)
                guard let id = verified.payload.transactionId else {
                    throw DomainError.invalid("the signed transaction has no transactionId", field: "jwsRepresentation")
                }
                known = id
                // A JWS shows the transaction exists, not whose it is (one leaked in a support ticket
                // would pull a whole history, T7): it must carry a token naming the caller, or be a
                // purchase Berth already applied to them.
                var mine = verified.payload.appAccountToken.map { runtime.purchasePolicy.token($0, names: userId) } ?? false
                if !mine { mine = try await owns(id, runtime: runtime, userId: userId) }
                guard mine else {
                    throw DomainError(
                        .forbidden,
                        .proofRequired,
                        "this signed transaction does not show it is the user's: it carries no appAccountToken of theirs and is not one of their purchases",
                        field: "jwsRepresentation"
                    )
                }
            } catch let error as SignedDataError {
                throw DomainError(error, field: "jwsRepresentation")
            }
        case .owned(let transactionId):
            guard try await owns(transactionId, runtime: runtime, userId: userId) else {
                throw DomainError(
                    .forbidden,
                    .proofRequired,
                    "transactionId must be one of this user's purchases; otherwise send jwsRepresentation",
                    field: "transactionId"
                )
            }
            known = transactionId
        }
        let history: [VerifiedTransaction]
        do {
            history = try await api.transactionHistory(known)
        } catch let error as AppStoreAPIError {
            throw DomainError(
                .unavailable,
                .transactionLookupUnavailable,
                "Apple's transaction history could not be read (\(error.code.rawValue)); try again shortly",
                retryAfter: 30
            )
        }
        var items: [Item] = []
        for verified in history {
            let hash = SHA256.hash(data: verified.rawPayload).hexString
            guard let proven = AppStoreProofs.proven(verified.payload, proofHash: hash) else { continue }
            let present = try await store.read { tx in
                try tx.purchases.purchase(store: .appStore, environment: proven.environment, transactionId: proven.transactionId, forUpdate: false)
                    != nil
            }
            if present {
                items.append(Item(transactionId: proven.transactionId, productId: proven.productId, outcome: "known"))
                continue
            }
            do {
                let result = try await claims.claim(proven: proven, runtime: runtime, userId: userId, named: nil)
                let outcome: String =
                    switch result.outcome {
                    case .applied: "restored"
                    case .repeated: "known"
                    case .replay: "transaction_already_used"
                    case .needsRefund(_, let code, _): code.rawValue
                    case .refused(let code, _): code.rawValue
                    }
                items.append(Item(transactionId: proven.transactionId, productId: proven.productId, outcome: outcome))
            } catch let error as DomainError where error.kind != .unavailable {
                items.append(Item(transactionId: proven.transactionId, productId: proven.productId, outcome: error.code.rawValue))
            }
        }
        logger.info(
            "purchases restored",
            metadata: ["restored": .stringConvertible(items.count { $0.outcome == "restored" }), "history": .stringConvertible(items.count)]
        )
        return items
    }

    /// Whether Berth applied App Store transaction `transactionId` to `userId` of this tenant.
    private func owns(_ transactionId: String, runtime: TenantRuntime, userId: String) async throws -> Bool {
        let tenantId = runtime.id
        return try await store.read { tx in
            try StoreEnvironment.stores.contains { environment in
                let purchase = try tx.purchases.purchase(store: .appStore, environment: environment, transactionId: transactionId, forUpdate: false)
                return purchase?.tenantId == tenantId && purchase?.userId == userId
            }
        }
    }
}

extension RestorePurchases {
    /// A validation's catch-up (no paid consumable lost at launch): after `transactionId` was applied
    /// to `userId` (the proof is theirs), the customer's App Store history is read from it and what
    /// Berth lacks is applied to them, as a restore would. A plugin that posts only the last of
    /// several unfinished transactions and then finishes them all loses none. At most once per user
    /// and `throttle` interval; only with the App Store Server API configured; best effort (a
    /// failure is logged, never the validation's). Returns how many transactions were applied.
    public func catchUp(runtime: TenantRuntime, userId: String, transactionId: String, throttle: CatchUpThrottle, now: Date) async -> Int {
        guard runtime.appStore.serverAPI != nil, throttle.admit(tenantId: runtime.id, userId: userId, now: now) else { return 0 }
        do {
            let items = try await self(runtime: runtime, userId: userId, proof: .owned(transactionId: transactionId))
            let restored = items.count { $0.outcome == "restored" }
            if restored > 0 { logger.info("validation caught up from the App Store history", metadata: ["restored": .stringConvertible(restored)]) }
            return restored
        } catch {
            logger.warning("App Store history not read after a validation: \(error)")
            return 0
        }
    }
}

/// After a validation applied an App Store transaction to a user: what the customer's history holds
/// that Berth lacks is applied too (with the App Store Server API; throttled per user). Only for a
/// caller who proved the user, or a proof bought with the user's token: a transaction someone
/// else's JWS put on a named user does not open that customer's whole history (T7).
public struct CatchUpAfterValidation: Sendable {
    let restore: RestorePurchases
    let throttle: CatchUpThrottle
    let clock: any BerthClock

    public init(restore: RestorePurchases, throttle: CatchUpThrottle, clock: any BerthClock) {
        self.restore = restore
        self.throttle = throttle
        self.clock = clock
    }

    public func callAsFunction(after result: VerifyPurchase.Result, runtime: TenantRuntime, userId: String, callerProvesUser: Bool) async {
        guard callerProvesUser || result.proofNamesUser, let purchase = result.outcome.purchase, purchase.store == .appStore else { return }
        _ = await restore.catchUp(runtime: runtime, userId: userId, transactionId: purchase.transactionId, throttle: throttle, now: clock.now())
    }
}

/// Once per user and interval: when a validation may read the customer's App Store history (each
/// read is a call to Apple). Forgetting (a full table is cleared, a restart empties it) costs one
/// more read, never a wrong answer.
public final class CatchUpThrottle: Sendable {
    private let last = Mutex<[String: Date]>([:])
    let interval: TimeInterval
    let capacity: Int

    public init(interval: TimeInterval = 600, capacity: Int = 100_000) {
        self.interval = interval
        self.capacity = max(1, capacity)
    }

    func admit(tenantId: String, userId: String, now: Date) -> Bool {
        let key = tenantId + "\u{0}" + userId
        return last.withLock { last in
            if let previous = last[key], now < previous.addingTimeInterval(interval) { return false }
            if last.count >= capacity { last.removeAll(keepingCapacity: true) }
            last[key] = now
            return true
        }
    }
}

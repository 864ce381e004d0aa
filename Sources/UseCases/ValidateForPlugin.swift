import Domain
import Foundation

/// The receipt validator of cordova-plugin-purchase (and its Capacitor build), after the route has
/// read the plugin's wire format: claim what Apple told Berth of for the user, apply the proof the
/// plugin posted (every unapplied purchase of an app receipt: the plugin finishes them all), catch up
/// the customer's App Store history behind a StoreKit 2 transaction, and say what the user owns.
public struct ValidateForPlugin: Sendable {
    /// What the plugin posted, by its transaction type.
    public enum Proof: Sendable {
        /// `apple-sk2`: a signed transaction; the plugin puts the product id in `transaction.id`.
        case storeKit2(jws: String, productId: String?)
        /// `ios-appstore`: an app receipt; `transactionId` names one of its transactions (nil: the
        /// application receipt itself).
        case appReceipt(String, transactionId: String?)
        /// `android-playstore`: a purchase token with the product and package the purchase names.
        case googlePlay(token: String, productId: String?, packageName: String?)
    }

    public struct Command: Sendable {
        public var runtime: TenantRuntime
        public var userId: String
        public var proof: Proof
        public var bookingId: Int64?
        /// Whether the caller proved who the user is (see ``VerifyPurchase/Command``).
        public var callerProvesUser: Bool

        public init(runtime: TenantRuntime, userId: String, proof: Proof, bookingId: Int64?, callerProvesUser: Bool) {
            self.runtime = runtime
            self.userId = userId
            self.proof = proof
            self.bookingId = bookingId
            self.callerProvesUser = callerProvesUser
        }
    }

    public struct Result: Sendable {
        /// The claim of the transaction the plugin named (nil for an application receipt).
        public var named: VerifyPurchase.Result?
        /// Everything else this call applied for the user (waiting transactions, the receipt's others).
        public var applied: [VerifyPurchase.Result]
        /// The application receipt, when the plugin validated the receipt itself.
        public var applicationReceipt: ProvenReceipt?
        /// What the user owns now: subscriptions, unlocks and passes as held, and the consumables
        /// (credit packs, bookings) this call applied.
        public var owned: Owned
    }

    public struct Owned: Sendable {
        public var subscriptions: [Subscription]
        public var unlocks: [EntitlementGrant]
        public var purchases: [Purchase]
    }

    let verifyPurchase: VerifyPurchase
    let claimReceipt: ClaimReceipt
    let userEntitlements: UserEntitlements
    /// What a StoreKit 2 validation catches up from the customer's history (the App Store Server API).
    let catchUp: @Sendable (VerifyPurchase.Result, TenantRuntime, String, Bool) async -> Void

    public init(
        verifyPurchase: VerifyPurchase,
        claimReceipt: ClaimReceipt,
        userEntitlements: UserEntitlements,
        catchUp: @escaping @Sendable (VerifyPurchase.Result, TenantRuntime, String, Bool) async -> Void
    ) {
        self.verifyPurchase = verifyPurchase
        self.claimReceipt = claimReceipt
        self.userEntitlements = userEntitlements
        self.catchUp = catchUp
    }

    /// Applies the proof; a refusal of it is thrown as it is (the route answers it in the plugin's shape).
    public func callAsFunction(_ command: Command) async throws -> Result {
        let (runtime, userId, provesUser) = (command.runtime, command.userId, command.callerProvesUser)
        let target = command.bookingId.map { PurchaseTarget.booking(id: $0) }
        // What Apple told Berth of that the user's appAccountToken names, first (it is owned then).
        // Only for a caller who proved the user (a client key names one: T1); otherwise the proof
        // finds them when it carries a token naming the user.
        var applied = provesUser ? await verifyPurchase.claims.claimWaiting(runtime: runtime, userId: userId) : []
        var named: VerifyPurchase.Result?
        var applicationReceipt: ProvenReceipt?
        switch command.proof {
        case .storeKit2(let jws, let productId):
            let result = try await verifyPurchase(
                .init(
                    runtime: runtime,
                    userId: userId,
                    productId: productId,
                    proof: .jws(jws),
                    target: target,
                    callerProvesUser: provesUser
                )
            )
            // The plugin posts only the last of several unfinished transactions, then finishes them
            // all: the others are read from the customer's history.
            await catchUp(result, runtime, userId, provesUser)
            named = result
        case .appReceipt(let receipt, let transactionId):
            let claimed = try await claimReceipt(
                .init(runtime: runtime, userId: userId, receipt: receipt, transactionId: transactionId, bookingId: command.bookingId)
            )
            named = claimed.named
            applied += claimed.applied
            if transactionId == nil { applicationReceipt = claimed.receipt }
        case .googlePlay(let token, let productId, let packageName):
            named = try await verifyPurchase(
                .init(
                    runtime: runtime,
                    userId: userId,
                    productId: productId,
                    proof: .playToken(token, packageName: packageName),
                    target: target,
                    callerProvesUser: provesUser
                )
            )
        }
        let owned = try await owned(by: userId, runtime: runtime, purchases: [named].compactMap { $0 } + applied)
        return Result(named: named, applied: applied, applicationReceipt: applicationReceipt, owned: owned)
    }

    /// Everything the user owns in the app, as the plugin builds `owned()` and `verifiedPurchases`
    /// from it (each answer replaces the last one it kept for the app).
    func owned(by userId: String, runtime: TenantRuntime, purchases: [VerifyPurchase.Result]) async throws -> Owned {
        let held = try await userEntitlements(runtime: runtime, userId: userId)
        let unlocks = held.entitlements.flatMap(\.grants).filter { $0.source == .unlock }.sorted { $0.purchasedAt < $1.purchasedAt }
        let consumed = purchases.compactMap { result in result.state.isHeldAsEntitlement ? nil : result.outcome.purchase }
        return Owned(subscriptions: held.subscriptions.map(\.subscription), unlocks: unlocks, purchases: consumed)
    }
}

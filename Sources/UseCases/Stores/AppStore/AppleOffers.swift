import AppStoreAPI
import AppleSignedData
import Domain
import Foundation

/// Signs subscription offers for one user: a promotional offer in both of Apple's forms, and
/// introductory-offer eligibility. The tenant's rules say who may have an offer; Berth judges them
/// from the user's subscriptions to the product's entitlement (on either store).
public struct SignAppleOffers: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// A signed promotional offer: the legacy fields (StoreKit 1, cordova-plugin-purchase) and the
    /// compact JWS (StoreKit 2), made with one nonce and one moment.
    public struct PromotionalOffer: Sendable {
        public var productId: String
        public var offerId: String
        public var keyIdentifier: String
        public var nonce: UUID
        /// Milliseconds since 1970; Apple honours the signature for 24 hours from it.
        public var timestamp: Int64
        public var signature: String
        /// The application username the legacy signature covers; the payment must carry the same.
        public var applicationUsername: String
        public var compactJWS: String
    }

    public struct IntroductoryEligibility: Sendable {
        public var productId: String
        public var allowIntroductoryOffer: Bool
        public var compactJWS: String
    }

    public func promotional(
        runtime: TenantRuntime,
        userId: String,
        productId: String,
        offerId: String,
        applicationUsername: String?,
        transactionId: String?
    ) async throws -> PromotionalOffer {
        let signer = try Self.signer(runtime)
        let product = try Self.subscriptionProduct(runtime, productId)
        guard let offer = runtime.tenant.apple.offers?.promotional(offerId, productId: productId) else {
            throw DomainError(.unprocessable, .offerUnknown, "the app does not sign offer \(offerId) for \(productId)", field: "offerId")
        }
        let username = try Self.applicationUsername(applicationUsername, userId: userId, policy: runtime.purchasePolicy)
        let transaction = try transactionId.map { try Self.transactionId($0) }
        let entitlement = product.subscriptionInfo?.entitlement ?? "premium"
        var (ever, now) = try await history(runtime: runtime, userId: userId, entitlement: entitlement)
        if let transaction, (offer.eligibility ?? .anyone) != .anyone, !(ever && now) {
            // The Apple account the offer will be redeemed on counts too, whoever Berth knows it as (T3).
            let account = try await accountHistory(runtime: runtime, transactionId: transaction, entitlement: entitlement)
            (ever, now) = (ever || account.ever, now || account.now)
        }
        guard (offer.eligibility ?? .anyone).admits(everSubscribed: ever, isSubscribed: now) else {
            throw DomainError(
                .forbidden,
                .offerNotEligible,
                "offer \(offerId) is for \((offer.eligibility ?? .anyone).rawValue) users of \(product.subscriptionInfo?.entitlement ?? "premium")",
                field: "offerId"
            )
        }
        let nonce = UUID()
        let moment = clock.now()
        let milliseconds = (moment.timeIntervalSince1970 * 1000).rounded(.down)
        let timestamp = milliseconds.isFinite && abs(milliseconds) < 1e15 ? Int64(milliseconds) : 0
        return PromotionalOffer(
            productId: productId,
            offerId: offerId,
            keyIdentifier: signer.credentials.keyId,
            nonce: nonce,
            timestamp: timestamp,
            signature: try signer.legacySignature(
                productId: productId,
                offerId: offerId,
                applicationUsername: username,
                nonce: nonce,
                timestamp: timestamp
            ),
            applicationUsername: username,
            compactJWS: try signer.promotionalOfferJWS(productId: productId, offerId: offerId, transactionId: transaction, nonce: nonce, now: moment)
        )
    }

    /// The introductory offer is for users who never subscribed to the product's entitlement.
    public func introductoryEligibility(
        runtime: TenantRuntime,
        userId: String,
        productId: String,
        transactionId: String
    ) async throws -> IntroductoryEligibility {
        let signer = try Self.signer(runtime)
        let product = try Self.subscriptionProduct(runtime, productId)
        let transaction = try Self.transactionId(transactionId)
        let entitlement = product.subscriptionInfo?.entitlement ?? "premium"
        var (ever, _) = try await history(runtime: runtime, userId: userId, entitlement: entitlement)
        if !ever {
            // The signature overrides Apple's one-trial rule for the Apple account of `transaction`: that
            // account's own history decides, not only the user the caller names (T3).
            ever = try await accountHistory(runtime: runtime, transactionId: transaction, entitlement: entitlement).ever
        }
        let allow = OfferEligibility.new.admits(everSubscribed: ever, isSubscribed: false)
        let jws = try signer.introductoryEligibilityJWS(
            productId: productId,
            allow: allow,
            transactionId: transaction,
            nonce: UUID(),
            now: clock.now()
        )
        return IntroductoryEligibility(productId: productId, allowIntroductoryOffer: allow, compactJWS: jws)
    }

    /// Whether the user ever had, and has now, a subscription granting `entitlement`.
    func history(runtime: TenantRuntime, userId: String, entitlement: String) async throws -> (ever: Bool, now: Bool) {
        let tenantId = runtime.id
        let owned = try await store.read {
            try $0.subscriptions.owned(tenantId: tenantId, userId: userId, page: Page(limit: Page.maximumLimit)).items
        }
        let now = clock.now()
        let granting = owned.filter { $0.entitlement == entitlement }
        return (!granting.isEmpty, granting.contains { $0.state(at: now).entitles })
    }

    /// Whether the Apple account of `transactionId` ever had, and has now, a subscription of this app
    /// granting `entitlement`: Apple's transaction history of that customer (Get Transaction History),
    /// whoever Berth knows them as. An id Apple does not know is refused; Apple out of reach is a 503.
    func accountHistory(runtime: TenantRuntime, transactionId: String, entitlement: String) async throws -> (ever: Bool, now: Bool) {
        guard let api = runtime.appStore.serverAPI else { throw Self.notConfigured() }
        let history: [VerifiedTransaction]
        do {
            history = try await api.transactionHistory(transactionId, maximumPages: 20)
        } catch let error as AppStoreAPIError where error.code == .transactionNotFound || error.code == .rejected {
            throw DomainError(.unprocessable, .proofRequired, "transactionId is not a transaction of this app's customers", field: "transactionId")
        } catch let error as AppStoreAPIError {
            throw DomainError(
                .unavailable,
                .transactionLookupUnavailable,
                "Apple's transaction history could not be read (\(error.code.rawValue)); try again shortly",
                retryAfter: 30
            )
        } catch {
            throw DomainError(.unprocessable, .proofRequired, "Apple's answer about transactionId did not verify", field: "transactionId")
        }
        let moment = clock.now()
        var ever = false, now = false
        for verified in history {
            let payload = verified.payload
            guard let productId = payload.productId, let product = runtime.tenant.product(id: productId), product.kind == .subscription,
                (product.subscriptionInfo?.entitlement ?? "premium") == entitlement
            else { continue }
            ever = true
            if payload.revocationDate == nil, let expires = payload.expiresDate?.date, expires > moment { now = true }
        }
        return (ever, now)
    }

    private static func notConfigured() -> DomainError {
        DomainError(
            .unprocessable,
            .offersNotConfigured,
            "the app's In-App Purchase key (apple.serverAPI) is not configured; Berth cannot sign offers"
        )
    }

    static func signer(_ runtime: TenantRuntime) throws -> AppleOfferSigner {
        guard let signer = runtime.appStore.offerSigner else {
            throw DomainError(
                .unprocessable,
                .offersNotConfigured,
                "the app's In-App Purchase key (apple.serverAPI) is not configured; Berth cannot sign offers"
            )
        }
        return signer
    }

    static func subscriptionProduct(_ runtime: TenantRuntime, _ productId: String) throws -> Product {
        guard let product = runtime.tenant.products.first(where: { $0.id == productId }) else {
            throw DomainError(.unprocessable, .unknownProduct, "no product \(productId) in this app's catalog", field: "productId")
        }
        guard product.kind == .subscription else {
            throw DomainError(
                .unprocessable,
                .offerUnknown,
                "\(productId) is not an auto-renewable subscription; offers apply to subscriptions",
                field: "productId"
            )
        }
        return product
    }

    /// The legacy signature's application username: what the payment will carry. Empty is Apple's
    /// "none"; otherwise it must name the caller (their id, or the token cordova-plugin-purchase
    /// derives from it, which is the default).
    static func applicationUsername(_ given: String?, userId: String, policy: PurchasePolicy) throws -> String {
        let derived = AccountTokens.cordovaPlugin(userId)
        guard let given else { return derived }
        let lowered = given.lowercased()
        guard lowered.isEmpty || lowered == userId.lowercased() || policy.token(lowered, names: userId) else {
            throw DomainError(
                .forbidden,
                .accountTokenMismatch,
                "applicationUsername must be empty, the user's id or the token derived from it",
                field: "applicationUsername"
            )
        }
        return lowered.isEmpty ? "" : given
    }

    /// A customer's transaction id (or appTransactionId): digits, at most 64.
    static func transactionId(_ text: String) throws -> String {
        guard !text.isEmpty, text.utf8.count <= 64, text.utf8.allSatisfy({ (48...57).contains($0) }) else {
            throw DomainError.invalid(
                "transactionId must be the digits of one of the customer's transaction ids (or their appTransactionId)",
                field: "transactionId"
            )
        }
        return text
    }
}

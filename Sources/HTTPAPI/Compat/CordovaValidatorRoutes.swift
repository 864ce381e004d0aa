import Domain
import Foundation
import Hummingbird
import NIOCore
import UseCases

/// `POST /api/validator/{tenant}`: the receipt validator protocol of cordova-plugin-purchase (and
/// its Capacitor build), so that hybrid apps set `store.validator` to Berth and nothing else.
///
/// The plugin sends `{id, type, transaction: {type: "ios-appstore", id, appStoreReceipt} |
/// {type: "apple-sk2", id: productId, jwsRepresentation}, additionalData: {applicationUsername}}`
/// and reads `{ok: true, data: {id, latest_receipt, transaction, collection}}` or `{ok: false,
/// code, status, message}`, always with HTTP 200. The purchase goes through the same pipeline as
/// `/api/verify-purchase` (exactly once, replays refused, credits, subscriptions, bookings).
///
/// The app's client key authenticates (it is shipped in the app): `Authorization: Bearer berth_…`
/// (a validator target with headers) or `?key=berth_…` (a validator URL string; only client keys
/// may travel in a URL). `applicationUsername` is the user; with a user's token it must be that
/// user. A booking is named by `additionalData.bookingId` or `?bookingId=` in the URL.
struct CordovaValidatorRoutes {
    let validateForPlugin: ValidateForPlugin
    let metrics: BerthMetrics
    let clock: any BerthClock
    /// App receipts of long-time subscribers are large; the plugin also sends its product list.
    static let bodyLimit = 1024 * 1024

    /// The plugin reads refusals, 401s included, as `{ok: false, …}` with HTTP 200.
    static let shape = ErrorShape(api: { error in try refusal(error) })

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<ProofContext> {
        let routes = RouteCollection(context: ProofContext.self)
        routes.post("/api/validator/{tenant}", use: validate)
        return routes
    }

    private func validate(_ request: Request, _ context: ProofContext) async throws -> Response {
        let tenantId = context.parameters.get("tenant") ?? ""
        guard context.tenant.id == tenantId else {
            throw APIError(.forbidden, .forbidden, "this key belongs to another app than \(tenantId)")
        }
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: Self.bodyLimit)
        } catch {
            throw APIError(.contentTooLarge, .bodyTooLarge, "validator requests are limited to 1 MiB")
        }
        let body: ValidatorRequest
        do {
            body = try JSONDecoder().decode(ValidatorRequest.self, from: Data(buffer.readableBytesView))
        } catch {
            throw APIError(.badRequest, .invalidJson, "the body is not a cordova-plugin-purchase validator request")
        }
        guard let transaction = body.transaction else { throw APIError(.badRequest, .missingField, "transaction is required", field: "transaction") }

        // The user: the plugin's applicationUsername, else the key's X-User-Id or the token's subject.
        // A user's token speaks only for its subject.
        let userId: String
        if let name = body.additionalData?.applicationUsername?.value.trimmingCharacters(in: .whitespaces), !name.isEmpty {
            userId = try Authenticator.userId(name, field: "applicationUsername", tenant: context.tenant.tenant)
            if context.caller.kind == .userToken, name != context.caller.userId {
                throw APIError(.forbidden, .forbidden, "applicationUsername must be the signed-in user's id", field: "applicationUsername")
            }
        } else if let user = context.caller.userId {
            userId = user
        } else {
            throw APIError(
                .badRequest,
                .missingUser,
                "set store.applicationUsername (or X-User-Id): Berth applies purchases to a user",
                field: "applicationUsername"
            )
        }
        // From here the answer, refusals included, is about that user (a signed answer names them).
        do {
            return try await validate(request, context, body: body, transaction: transaction, userId: userId)
        } catch {
            throw AnsweringFor(userId: userId, underlying: error)
        }
    }

    private func validate(
        _ request: Request,
        _ context: ProofContext,
        body: ValidatorRequest,
        transaction: ValidatorRequest.Transaction,
        userId: String
    ) async throws -> Response {
        let runtime = context.tenant
        let bookingId = body.additionalData?.bookingId?.value ?? request.uri.queryParameters["bookingId"].flatMap { Int64(String($0)) }
        let outcome: ValidateForPlugin.Result
        do {
            let proof = try Self.proof(transaction, body: body, runtime: runtime)
            outcome = try await validateForPlugin(
                .init(
                    runtime: runtime,
                    userId: userId,
                    proof: proof,
                    bookingId: bookingId,
                    callerProvesUser: context.caller.provesUser
                )
            )
        } catch {
            metrics.verificationFailed(error)
            throw error
        }
        for result in outcome.applied { metrics.verification(result.outcome) }
        var native = NativeTransaction(type: transaction.type, bundleId: Self.appId(transaction.type, runtime))
        if let named = outcome.named {
            metrics.verification(named.outcome)
            if let refusal = VerifyPurchaseRoutes.refusal(
                named.outcome,
                namesBooking: bookingId != nil,
                proofField: transaction.type == "android-playstore" ? "purchaseToken" : "jwsRepresentation"
            ) {
                throw refusal
            }
            guard let purchase = named.outcome.purchase else {
                throw APIError(.internalServerError, .internalError, "no purchase in an accepted outcome")
            }
            var subscription: Subscription?
            if case .subscription(let record, _) = named.state { subscription = record }
            native = NativeTransaction(
                type: transaction.type,
                bundleId: Self.appId(transaction.type, runtime),
                purchase: purchase,
                subscription: subscription
            )
        } else if let receipt = outcome.applicationReceipt {
            native.originalApplicationVersion = receipt.originalApplicationVersion
            native.environment = receipt.environment
        }
        let now = clock.now()
        let owned = outcome.owned
        let collection =
            owned.subscriptions.map { ValidatorPurchase(subscription: $0, now: now) } + owned.unlocks.map { ValidatorPurchase(grant: $0, now: now) }
            + owned.purchases.map { ValidatorPurchase($0) }
        let data = ValidatorSuccess.Payload(
            id: body.id ?? runtime.tenant.apple.bundleId,
            latestReceipt: true,
            transaction: native,
            collection: collection
        )
        var response = try JSONCoding.response(ValidatorSuccess(data: data))
        // A signed answer names the user it is about: here the plugin's applicationUsername. Only
        // for a signing tenant, whose signer takes the note off again (it is never sent).
        if runtime.answerSigner != nil { response.headers[SignAnswers.answerUserHeader] = userId }
        return response
    }

    /// The plugin's transaction, read into the proof it carries (the wire format is the route's; what
    /// it proves is ``ValidateForPlugin``'s).
    static func proof(_ transaction: ValidatorRequest.Transaction, body: ValidatorRequest, runtime: TenantRuntime) throws -> ValidateForPlugin.Proof {
        switch transaction.type {
        case "apple-sk2":
            guard let jws = transaction.jwsRepresentation, !jws.isEmpty else {
                throw APIError(.badRequest, .missingField, "apple-sk2 transactions carry jwsRepresentation", field: "jwsRepresentation")
            }
            // The plugin puts the product id in transaction.id for StoreKit 2.
            return .storeKit2(jws: jws, productId: transaction.id.flatMap { $0.isEmpty ? nil : $0 })
        case "ios-appstore":
            guard let receipt = transaction.appStoreReceipt, !receipt.isEmpty else {
                throw APIError(.badRequest, .missingField, "ios-appstore transactions carry appStoreReceipt", field: "appStoreReceipt")
            }
            // transaction.id names a transaction of the receipt; `appstore.application`, the bundle id
            // or nothing name the application receipt itself.
            let id = transaction.id.flatMap { $0.isEmpty || $0 == applicationTransactionId || $0 == runtime.tenant.apple.bundleId ? nil : $0 }
            return .appReceipt(receipt, transactionId: id)
        case "android-playstore":
            guard let token = transaction.purchaseToken, !token.isEmpty else {
                throw APIError(.badRequest, .missingField, "android-playstore transactions carry purchaseToken", field: "purchaseToken")
            }
            // The product is the request's id (the plugin's first product of the purchase), else the
            // one the purchase's original JSON names; its package likewise.
            let original = transaction.receipt.flatMap { try? JSONDecoder().decode(ValidatorRequest.PlayPurchaseJSON.self, from: Data($0.utf8)) }
            let productId = body.id.flatMap { $0.isEmpty ? nil : $0 } ?? original?.productId ?? original?.productIds?.first
            return .googlePlay(token: token, productId: productId, packageName: original?.packageName)
        default:
            throw APIError(
                .badRequest,
                .invalidField,
                "Berth validates App Store and Google Play transactions (ios-appstore, apple-sk2, android-playstore), not \(transaction.type)",
                field: "transaction.type"
            )
        }
    }

    /// The app's id on the transaction's store: the bundle id, or the package name on Google Play.
    static func appId(_ type: String, _ runtime: TenantRuntime) -> String {
        type == "android-playstore" ? runtime.play?.settings.packageName ?? runtime.tenant.apple.bundleId : runtime.tenant.apple.bundleId
    }

    /// The transaction id the plugin gives the application receipt itself (StoreKit 1).
    static let applicationTransactionId = "appstore.application"

    /// `{ok: false, code, status, message}` with HTTP 200, as the plugin reads refusals. `status`
    /// is the HTTP status Berth's own API would answer; `code` is the plugin's error code.
    static func refusal(_ error: APIError) throws -> Response {
        let code: Int =
            switch error.code {
            case .unauthenticated, .forbidden: CordovaErrorCode.clientInvalid
            case .temporarilyUnavailable, .rateLimited: CordovaErrorCode.communication
            case .unknownProduct, .productNotSupported, .productMismatch: CordovaErrorCode.invalidProductId
            case .transactionAlreadyUsed, .linkedToOtherAccount, .transactionRevoked: CordovaErrorCode.paymentInvalid
            case .missingField, .invalidJson, .bodyTooLarge, .missingUser, .invalidUserId, .invalidField: CordovaErrorCode.missingToken
            default: CordovaErrorCode.verificationFailed
            }
        var response = try JSONCoding.response(
            ValidatorFailure(
                code: code,
                status: Int(error.status.code),
                message: error.message,
                error: .init(code: error.code.rawValue, field: error.field)
            )
        )
        if error.status == .serviceUnavailable || error.code == .rateLimited { response.headers[.retryAfter] = error.headers[.retryAfter] ?? "1" }
        return response
    }
}

/// The plugin's error codes (`CdvPurchase.ErrorCode`, base 6777000).
enum CordovaErrorCode {
    static let clientInvalid = 6_777_005
    static let paymentInvalid = 6_777_007
    static let unknown = 6_777_010
    static let invalidProductId = 6_777_012
    static let communication = 6_777_014
    static let missingToken = 6_777_016
    static let verificationFailed = 6_777_017
}

/// What the plugin posts (the fields Berth reads; the rest, products, device, offers, is ignored).
struct ValidatorRequest: Decodable {
    struct Transaction: Decodable {
        var type: String
        var id: String?
        var appStoreReceipt: String?
        var jwsRepresentation: String?
        /// android-playstore: the purchase token, the purchase's original JSON and Google's signature of it.
        var purchaseToken: String?
        var receipt: String?
        var signature: String?
    }

    /// The members of a Play purchase's original JSON Berth reads (the token is proven with Google, never this).
    struct PlayPurchaseJSON: Decodable {
        var packageName: String?
        var productId: String?
        var productIds: [String]?
    }

    struct AdditionalData: Decodable {
        var applicationUsername: LooseString?
        var bookingId: LooseInt?
    }

    var id: String?
    var type: String?
    var transaction: Transaction?
    var additionalData: AdditionalData?
}

/// A string the plugin may send as a number (`applicationUsername: string | number`).
struct LooseString: Decodable {
    var value: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            value = text
            return
        }
        if let number = try? container.decode(Int64.self) {
            value = String(number)
            return
        }
        throw DecodingError.typeMismatch(String.self, .init(codingPath: decoder.codingPath, debugDescription: "a string or an integer"))
    }
}

/// An integer sent as a number or a string of digits.
struct LooseInt: Decodable {
    var value: Int64

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            value = number
            return
        }
        if let text = try? container.decode(String.self), let number = Int64(text) {
            value = number
            return
        }
        throw DecodingError.typeMismatch(Int64.self, .init(codingPath: decoder.codingPath, debugDescription: "an integer"))
    }
}

struct ValidatorSuccess: Encodable {
    struct Payload: Encodable {
        var id: String
        var latestReceipt: Bool
        var transaction: NativeTransaction
        var collection: [ValidatorPurchase]

        enum CodingKeys: String, CodingKey {
            case id, transaction, collection
            case latestReceipt = "latest_receipt"
        }
    }

    var ok = true
    var data: Payload
}

struct ValidatorFailure: Encodable {
    struct Detail: Encodable {
        var code: String
        var field: String?
    }

    struct Payload: Encodable {
        var latestReceipt = true
        enum CodingKeys: String, CodingKey { case latestReceipt = "latest_receipt" }
    }

    var ok = false
    var code: Int
    var status: Int
    var message: String
    /// Berth's own error code and field, for the app's logs.
    var error: Detail
    var data = Payload()
}

/// The transaction as Apple's receipt fields name it (`data.transaction`, type first).
struct NativeTransaction: Encodable {
    var type: String
    var bundleId: String?
    var transactionId: String?
    var originalTransactionId: String?
    var productId: String?
    var purchaseDateMs: String?
    var expiresDateMs: String?
    var environment: StoreEnvironment?
    var quantity: Int?
    /// For the application receipt itself: the plugin reads it to date the app's first install.
    var originalApplicationVersion: String?

    /// An application receipt with no purchase in it.
    init(type: String, bundleId: String?) {
        self.type = type
        self.bundleId = bundleId
    }

    init(type: String, bundleId: String?, purchase: Purchase, subscription: Subscription?) {
        self.type = type
        self.bundleId = bundleId
        transactionId = purchase.transactionId
        originalTransactionId = purchase.originalTransactionId
        productId = purchase.productId
        purchaseDateMs = String(Int64(purchase.purchasedAt.timeIntervalSince1970 * 1000))
        expiresDateMs = subscription?.expiresAt.map { String(Int64($0.timeIntervalSince1970 * 1000)) }
        environment = purchase.environment
        quantity = purchase.quantity
    }

    enum CodingKeys: String, CodingKey {
        case type, environment, quantity
        case bundleId = "bundle_id"
        case transactionId = "transaction_id"
        case originalTransactionId = "original_transaction_id"
        case productId = "product_id"
        case purchaseDateMs = "purchase_date_ms"
        case expiresDateMs = "expires_date_ms"
        case originalApplicationVersion = "original_application_version"
    }
}

/// One entry of `collection` (the plugin's `VerifiedPurchase`): dates in milliseconds since 1970;
/// `cancelationReason` in the plugin's vocabulary, `""` (its NOT_CANCELED) when nothing was cancelled.
struct ValidatorPurchase: Encodable {
    var id: String
    var platform = "ios-appstore"
    var transactionId: String
    var purchaseDate: Int64
    var lastRenewalDate: Int64?
    var expiryDate: Int64?
    var isExpired: Bool?
    var renewalIntent: String?
    var isBillingRetryPeriod: Bool?
    var cancelationReason: String?

    /// A consumable (credit pack, booking) this call applied; refunded: expired, cancelled by the customer.
    init(_ purchase: Purchase) {
        id = purchase.productId
        platform = Self.platform(store: purchase.store)
        transactionId = purchase.transactionId
        purchaseDate = purchase.purchasedAt.epochMilliseconds
        if purchase.status == .refunded {
            (isExpired, cancelationReason) = (true, "Customer")
        }
    }

    /// A subscription the user owns, as it stands at `now`.
    init(subscription: Subscription, now: Date) {
        id = subscription.productId
        platform = Self.platform(store: subscription.store)
        transactionId = subscription.latestTransactionId
        purchaseDate = (subscription.originalPurchasedAt ?? subscription.purchasedAt).epochMilliseconds
        lastRenewalDate = subscription.purchasedAt.epochMilliseconds
        let state = subscription.state(at: now)
        expiryDate = subscription.expiresAt.map(\.epochMilliseconds)
        isExpired = !state.entitles
        renewalIntent = subscription.autoRenew.map { $0 ? "Renew" : "Lapse" }
        isBillingRetryPeriod = subscription.inBillingRetry
        cancelationReason =
            switch state {
            case .revoked: "Customer"
            case .upgraded: "System.Replaced"
            case .expired:
                switch subscription.expirationIntent {
                case 1: "Customer"
                case 2: "System.BillingError"
                case 3: "Customer.PriceIncrease"
                case 4: "System.ProductUnavailable"
                case 5: "Unknown"
                default: ""
                }
            default: ""
            }
    }

    /// The plugin's platform of a store's purchases (a store the plugin has no platform for: its own
    /// name, never another store's).
    static func platform(store: StoreName) -> String {
        switch store {
        case .appStore: "ios-appstore"
        case .googlePlay: "android-playstore"
        default: store.rawValue
        }
    }

    /// An unlock or a pass: a lifetime unlock never expires; a pass ends at its place in the user's
    /// chain of passes; a refunded or revoked one is expired and cancelled.
    init(grant: EntitlementGrant, now: Date) {
        id = grant.productId ?? grant.entitlement
        transactionId = grant.reference
        purchaseDate = grant.purchasedAt.epochMilliseconds
        expiryDate = grant.until.map(\.epochMilliseconds)
        switch grant.status(at: now) {
        case .active: isExpired = false
        case .expired: isExpired = true
        case .ended: (isExpired, cancelationReason) = (true, grant.endedReason == "REVOKE" ? "System" : "Customer")
        }
    }
}

/// The validator URL's `?key=` (cordova-plugin-purchase may send no header): client keys only,
/// since anything in a URL ends up in logs and app bundles.
struct ValidatorQueryKey: RouterMiddleware {
    typealias Context = BerthRequestContext
    let authenticator: Authenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if case .anonymous = context.authentication, let key = request.uri.queryParameters["key"] {
            do {
                let caller = try await authenticator.caller(key: String(key), request: request)
                guard caller.kind == .clientKey else {
                    throw APIError.forbidden(
                        "only client keys may be put in a validator URL; this one is a \(caller.kind.rawValue) key (revoke it: it is now in URLs and logs)"
                    )
                }
                context.authentication = .authenticated(caller)
                Authenticator.speak(caller)
            } catch let error as APIError {
                context.authentication = .refused(error)
            }
        }
        return try await next(request, context)
    }
}

import AppleSignedData
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import UseCases

/// FT Chinese's Apple IAP API, served as its existing clients expect it, for tenants that
/// list `subscriptions.ftcRoutes`: under each prefix (one per environment), FT Chinese's app's own paths, bodies,
/// `X-Ftc-Id` header and error convention (`{message}`, plus `error: {field, code}` on 422), mapped
/// onto the same use cases as Berth's own routes. The app's access token is a client key: it
/// verifies receipts, lists a user's subscriptions and links with a receipt as proof; loading by
/// id, stored receipts, refreshes and bare-id links take the backend's server (or an admin) key.
struct FTCRoutes {
    let tenants: TenantRegistry
    let applyReceipt: ApplyReceipt
    let subscriptionQueries: SubscriptionQueries
    let refreshSubscription: RefreshSubscription
    let authorizeLink: AuthorizeLink
    let linkSubscription: LinkSubscription
    let unlinkSubscription: UnlinkSubscription
    let notificationIntake: NotificationIntake

    struct Base: Sendable {
        var runtime: TenantRuntime
        var environment: StoreEnvironment
    }

    static let shape = ErrorShape(raw: { error, logger in try FTCShape.refusal(error, logger: logger) })

    struct Routes {
        /// The app's access token (client key) or the backend: receipts, a user's list, proven links.
        let app = RouteCollection(context: AppKeyContext.self)
        /// The backend (server key) or operators: by subscription id.
        let backend = RouteCollection(context: BackendContext.self)
        /// Apple's notifications (no credentials; the signature is the proof).
        let apple = RouteCollection(context: BerthRequestContext.self)
    }

    var routes: Routes {
        let routes = Routes()
        for runtime in tenants.tenants.values.sorted(by: { $0.id < $1.id }) {
            for ftc in runtime.tenant.subscriptions?.ftcRoutes ?? [] {
                let base = Base(runtime: runtime, environment: ftc.environment)
                let p = ftc.prefix
                let under = UnderPrefix(routes: self, base: base)
                routes.app.post("\(p)/apple/verify-receipt", use: under.verifyReceipt)
                routes.app.post("\(p)/apple/subs", use: under.verifySubscription)
                routes.app.get("\(p)/apple/subs", use: under.list)
                routes.backend.get("\(p)/apple/subs/{id}", use: under.load)
                routes.backend.patch("\(p)/apple/subs/{id}", use: under.refresh)
                routes.backend.get("\(p)/apple/receipt/{id}", use: under.receipt)
                routes.app.post("\(p)/apple/link", use: under.link)
                routes.app.post("\(p)/apple/unlink", use: under.unlink)
                routes.apple.post("\(p)/webhook/apple", use: under.notification)
            }
        }
        return routes
    }

    /// The handlers of one prefix: each checks the caller belongs to the prefix's tenant, then
    /// answers as FT Chinese's API does in the prefix's environment.
    struct UnderPrefix: Sendable {
        let routes: FTCRoutes
        let base: Base

        func verifyReceipt(_ request: Request, context: AppKeyContext) async throws -> Response {
            try await routes.verifyReceipt(base, request, routes.own(base, context))
        }

        func verifySubscription(_ request: Request, context: AppKeyContext) async throws -> Response {
            try await routes.verifySubscription(base, request, routes.own(base, context))
        }

        func list(_ request: Request, context: AppKeyContext) async throws -> Response {
            try await routes.list(base, request, routes.own(base, context))
        }

        func load(_ request: Request, context: BackendContext) async throws -> Response {
            try await routes.load(base, routes.own(base, context))
        }

        func refresh(_ request: Request, context: BackendContext) async throws -> Response {
            try await routes.refresh(base, routes.own(base, context))
        }

        func receipt(_ request: Request, context: BackendContext) async throws -> Response {
            try await routes.receipt(base, routes.own(base, context))
        }

        func link(_ request: Request, context: AppKeyContext) async throws -> Response {
            try await routes.link(base, request, routes.own(base, context))
        }

        func unlink(_ request: Request, context: AppKeyContext) async throws -> Response {
            try await routes.unlink(base, request, routes.own(base, context))
        }

        func notification(_ request: Request, context: BerthRequestContext) async throws -> Response {
            try await routes.notification(base, request, context)
        }
    }

    /// Whether `path` has the form of one of the routes above under some prefix (and is not one of
    /// Berth's own `/api/…` paths).
    static func hasRouteForm(_ path: String) -> Bool {
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count >= 3, !(parts[0] == "api" && SubscriptionSettings.berthAPISegments.contains(parts[1])) else { return false }
        let last2 = parts.suffix(2).joined(separator: "/"), last3 = parts.suffix(3).dropLast().joined(separator: "/")
        return ["apple/verify-receipt", "apple/subs", "apple/link", "apple/unlink", "webhook/apple"].contains(last2)
            || ["apple/subs", "apple/receipt"].contains(last3)
    }

    /// The caller's key must be of this prefix's app.
    private func own<C: GuardedContext>(_ base: Base, _ context: C) throws -> C {
        guard context.caller.tenant.id == base.runtime.id else { throw APIError.forbidden("this key belongs to another app") }
        return context
    }

    private func actor(_ context: some GuardedContext) -> Actor { context.caller.actor }

    struct ReceiptBody: Decodable { var receiptData: String? }
    /// FT Chinese's link body; `receiptData` is the proof an app (client key) links with.
    struct LinkBody: Decodable {
        var ftcId: String?
        var originalTxId: String?
        var force: Bool?
        var receiptData: String?
    }

    private func receiptData(_ request: Request) async throws -> String {
        let body = try await JSONCoding.decode(ReceiptBody.self, from: request)
        guard let data = body.receiptData, !data.isEmpty else { throw FTCShape.missing("receiptData") }
        return data
    }

    private func applyReceipt(_ base: Base, _ request: Request, _ context: AppKeyContext) async throws -> ApplyReceipt.Result {
        let data = try await receiptData(request)
        do {
            return try await applyReceipt(
                data,
                runtime: base.runtime,
                userId: nil,
                actor: actor(context),
                source: "ftc_verify_receipt",
                environment: base.environment
            )
        } catch let error as DomainError where error.kind != .unavailable {
            throw FTCShape.Refusal(status: .unprocessableContent, message: error.message, field: "verification", code: "invalid")
        }
    }

    /// `POST /apple/verify-receipt`: Apple's verifyReceipt answer as it came, or (verified offline)
    /// the same shape built from the receipt.
    func verifyReceipt(_ base: Base, _ request: Request, _ context: AppKeyContext) async throws -> Response {
        let result = try await applyReceipt(base, request, context)
        if let raw = result.appleResponse {
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: .init(bytes: raw)))
        }
        return try JSONCoding.response(FTCAppleReceiptResponse(result))
    }

    /// `POST /apple/subs`: the condensed subscription of the receipt.
    func verifySubscription(_ base: Base, _ request: Request, _ context: AppKeyContext) async throws -> Response {
        let result = try await applyReceipt(base, request, context)
        let all = result.subscriptions + result.ownedByOthers
        guard let latest = all.max(by: { ($0.expiresAt ?? .distantPast) < ($1.expiresAt ?? .distantPast) }) else {
            throw FTCShape.Refusal(
                status: .unprocessableContent,
                message: "the receipt holds no subscription",
                field: "verification",
                code: "invalid"
            )
        }
        return try JSONCoding.response(FTCSubscription(latest, inUse: nil))
    }

    func list(_ base: Base, _ request: Request, _ context: AppKeyContext) async throws -> Response {
        guard let given = request.headers[.xFtcId]?.trimmingCharacters(in: .whitespaces), !given.isEmpty else { throw FTCShape.missing("X-Ftc-Id") }
        let ftcId = try FTCShape.userId(given, field: "X-Ftc-Id", tenant: base.runtime.tenant)
        let query = request.uri.queryParameters
        let perPage = min(max(1, query["per_page"].flatMap { Int(String($0)) } ?? 20), Page.maximumLimit)
        // Pages past the listing's offset bound show its last page (no arithmetic on the raw number).
        let page = min(max(1, query["page"].flatMap { Int(String($0)) } ?? 1), Page.maximumOffset / perPage + 1)
        let (items, total) = try await subscriptionQueries.list(
            runtime: base.runtime,
            userId: ftcId,
            page: Page(limit: perPage, offset: (page - 1) * perPage)
        )
        return try JSONCoding.response(
            FTCSubscriptionList(total: total, page: page, limit: perPage, data: items.map { FTCSubscription($0.subscription, inUse: $0.inUse) })
        )
    }

    func load(_ base: Base, _ context: BackendContext) async throws -> Response {
        let listed = try await subscriptionQueries.subscription(runtime: base.runtime, originalTransactionId: try id(context), userId: nil)
        return try JSONCoding.response(FTCSubscription(listed.subscription, inUse: nil))
    }

    func refresh(_ base: Base, _ context: BackendContext) async throws -> Response {
        let listed = try await refreshSubscription(runtime: base.runtime, originalTransactionId: try id(context), userId: nil, actor: actor(context))
        return try JSONCoding.response(FTCSubscription(listed.subscription, inUse: nil))
    }

    func receipt(_ base: Base, _ context: BackendContext) async throws -> Response {
        let (listed, receipt) = try await subscriptionQueries.receipt(runtime: base.runtime, originalTransactionId: try id(context))
        guard let receipt else { throw FTCShape.Refusal(status: .notFound, message: "no receipt is kept for this subscription") }
        var body = FTCSubscription(listed.subscription, inUse: nil)
        body.receipt = receipt
        return try JSONCoding.response(body)
    }

    private func linkBody(_ request: Request, _ context: AppKeyContext, base: Base) async throws -> (String, String, Bool) {
        let body = try await JSONCoding.decode(LinkBody.self, from: request)
        guard let given = body.ftcId, !given.isEmpty else { throw FTCShape.missing("ftcId") }
        let ftcId = try FTCShape.userId(given, field: "ftcId", tenant: base.runtime.tenant)
        guard let otid = body.originalTxId, !otid.isEmpty else { throw FTCShape.missing("originalTxId") }
        // The backend links by id; the app (a client key) proves with the device's receipt.
        let authority: LinkAuthority =
            context.caller.kind == .clientKey
            ? .proof(body.receiptData.flatMap { $0.isEmpty ? nil : PurchaseProof.receipt($0, transactionId: otid) }) : .byId
        do {
            try await authorizeLink(authority, runtime: base.runtime, userId: ftcId, originalTransactionId: otid)
        } catch let error as DomainError where error.code == .proofRequired {
            throw FTCShape.Refusal(
                status: .unprocessableContent,
                message: "the app links with the device's receipt as proof: send receiptData (bare ids are for the backend's server key)",
                field: "receiptData",
                code: "missing_field"
            )
        }
        return (ftcId, otid, body.force ?? false)
    }

    func link(_ base: Base, _ request: Request, _ context: AppKeyContext) async throws -> Response {
        let (ftcId, otid, force) = try await linkBody(request, context, base: base)
        let membership = try await linkSubscription(
            runtime: base.runtime,
            userId: ftcId,
            originalTransactionId: otid,
            force: force,
            actor: actor(context)
        )
        return try JSONCoding.response(FTCMembership(membership))
    }

    func unlink(_ base: Base, _ request: Request, _ context: AppKeyContext) async throws -> Response {
        let (ftcId, otid, _) = try await linkBody(request, context, base: base)
        try await unlinkSubscription(runtime: base.runtime, userId: ftcId, originalTransactionId: otid, actor: actor(context))
        return Response(status: .noContent)
    }

    func notification(_ base: Base, _ request: Request, _ context: BerthRequestContext) async throws -> Response {
        let result = try await notificationIntake(request, context: context, runtime: base.runtime)
        return try JSONCoding.response(NotificationAck(outcome: result.outcome, duplicate: result.duplicate))
    }

    private func id(_ context: some RequestContext) throws -> String {
        guard let id = context.parameters.get("id"), !id.isEmpty, id.count <= 64 else {
            throw FTCShape.Refusal(status: .notFound, message: "Not Found")
        }
        return id
    }
}

extension HTTPField.Name {
    static let xFtcId = Self("X-Ftc-Id")!
}

/// FT Chinese's error convention: `{message}` always, `error: {field, code}` only on 422; 400 for a
/// body that cannot be parsed, 404 for what does not exist.
enum FTCShape {
    struct Refusal: Error {
        var status: HTTPResponse.Status
        var message: String
        var field: String?
        var code: String?
    }

    struct Body: Encodable {
        struct Detail: Encodable {
            var field: String
            var code: String
        }
        var message: String
        var error: Detail?
    }

    /// An FT Chinese user id, held to Berth's rule for user ids (at most 200 UTF-8 bytes, NFC).
    static func userId(_ text: String, field: String, tenant: Tenant) throws(Refusal) -> String {
        do {
            return try Authenticator.userId(text, field: field, tenant: tenant)
        } catch {
            throw Refusal(
                status: .unprocessableContent,
                message: (error as? APIError)?.message ?? "\(field) is not a user id of this app",
                field: field,
                code: "invalid"
            )
        }
    }

    static func missing(_ field: String) -> Refusal {
        Refusal(status: .unprocessableContent, message: "Missing required field", field: field, code: "missing_field")
    }

    /// Berth's field names and codes, as FT Chinese's clients know them.
    static func ftcField(_ field: String?) -> String {
        switch field {
        case "userId", "X-User-Id": "ftcId"
        case "originalTransactionId": "originalTxId"
        case "receipt", "receiptData": "receiptData"
        case let other?: other
        case nil: "request"
        }
    }

    static func ftcCode(_ code: ErrorCode) -> String {
        switch code {
        case .linkedToOtherAccount: "linked_to_other_ftc"
        case .missingField: "missing_field"
        case .linkedToOtherIAP, .hasValidNonIAP: code.rawValue
        default: "invalid"
        }
    }

    static func refusal(_ error: any Error, logger: Logger) throws -> Response {
        let refusal: Refusal
        switch error {
        case let r as Refusal:
            refusal = r
        case let e as DomainError:
            refusal = from(APIError(e))
        case let e as APIError:
            refusal = from(e)
        default:
            logger.error("FTC route failed: \(String(reflecting: error))")
            refusal = Refusal(status: .serviceUnavailable, message: "temporary server error; retry later")
        }
        let detail = refusal.status == .unprocessableContent ? Body.Detail(field: refusal.field ?? "request", code: refusal.code ?? "invalid") : nil
        return try JSONCoding.response(Body(message: refusal.message, error: detail), status: refusal.status)
    }

    static func from(_ e: APIError) -> Refusal {
        // Bodies that cannot be parsed are 400; everything that is well-formed but refused is 422.
        if e.status == .badRequest, e.code == .invalidJson || e.code == .bodyTooLarge { return Refusal(status: .badRequest, message: e.message) }
        if e.status == .badRequest || e.status == .conflict || e.status == .unprocessableContent {
            return Refusal(status: .unprocessableContent, message: e.message, field: ftcField(e.field), code: ftcCode(e.code))
        }
        return Refusal(status: e.status, message: e.message)
    }
}

// MARK: - Request and answer types of these routes

struct FTCSubscriptionList: Codable {
    var total: Int
    var page: Int
    var limit: Int
    var data: [FTCSubscription]
}

/// FT Chinese's `Membership`, the answer of `/apple/link`.
struct FTCMembership: Codable {
    var ftcId: String
    var unionId: String?
    var tier: String?
    var cycle: String?
    /// `2019-11-22`.
    var expireDate: String?
    var payMethod: String?
    var ftcPlanId: String?
    var stripeSubsId: String?
    var autoRenew: Bool
    var status: String?
    var appleSubsId: String?
    var b2bLicenceId: String?

    init(_ m: Membership) {
        ftcId = m.userId
        tier = m.tier
        cycle = m.cycle
        expireDate = m.expiresAt.map { String(BerthJSON.secondsTimestamp($0).prefix(10)) }
        payMethod = m.payMethod
        autoRenew = m.autoRenew
        appleSubsId = m.originalTransactionId
    }

    func encode(to encoder: any Encoder) throws {
        // FT Chinese's clients expect every key, nulls included.
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ftcId, forKey: .ftcId)
        try c.encode(unionId, forKey: .unionId)
        try c.encode(tier, forKey: .tier)
        try c.encode(cycle, forKey: .cycle)
        try c.encode(expireDate, forKey: .expireDate)
        try c.encode(payMethod, forKey: .payMethod)
        try c.encode(ftcPlanId, forKey: .ftcPlanId)
        try c.encode(stripeSubsId, forKey: .stripeSubsId)
        try c.encode(autoRenew, forKey: .autoRenew)
        try c.encode(status, forKey: .status)
        try c.encode(appleSubsId, forKey: .appleSubsId)
        try c.encode(b2bLicenceId, forKey: .b2bLicenceId)
    }
}

/// Apple's verifyReceipt shape, built from a receipt verified offline (when Berth did not ask Apple).
struct FTCAppleReceiptResponse: Encodable {
    struct Entry: Encodable {
        var product_id: String
        var transaction_id: String
        var original_transaction_id: String
        var purchase_date_ms: String
        var expires_date_ms: String?
        var cancellation_date_ms: String?
        var quantity: String
    }
    struct Receipt: Encodable {
        var bundle_id: String?
        var application_version: String?
        var in_app: [Entry]
    }
    var status = 0
    var environment: StoreEnvironment
    var receipt: Receipt
    var latest_receipt_info: [Entry]
    var pending_renewal_info: [String] = []

    init(_ result: ApplyReceipt.Result) {
        let entries = result.verified.receipt.inAppPurchases.compactMap { e -> Entry? in
            guard let product = e.productId, let id = e.transactionId else { return nil }
            return Entry(
                product_id: product,
                transaction_id: id,
                original_transaction_id: e.originalTransactionId ?? id,
                purchase_date_ms: String(e.purchaseDate?.date.epochMilliseconds ?? 0),
                expires_date_ms: e.subscriptionExpirationDate.map { String($0.date.epochMilliseconds) },
                cancellation_date_ms: e.cancellationDate.map { String($0.date.epochMilliseconds) },
                quantity: String(e.quantity ?? 1)
            )
        }
        environment = result.environment
        receipt = Receipt(
            bundle_id: result.verified.receipt.bundleId,
            application_version: result.verified.receipt.applicationVersion,
            in_app: entries
        )
        latest_receipt_info = entries.filter { $0.expires_date_ms != nil }.sorted {
            (Int64($0.purchase_date_ms) ?? 0) > (Int64($1.purchase_date_ms) ?? 0)
        }
    }
}

import AppStoreAPI
import Domain
import Foundation
import Hummingbird
import Logging
import UseCases

/// `/api/entitlements` and `/api/subscriptions…` for users; memberships paid elsewhere, cheat
/// attempts and unlink archives for the app's backend and operators.
struct SubscriptionRoutes {
    let records: OperatorRecords
    let userEntitlements: UserEntitlements
    let clock: any BerthClock
    let subscriptionQueries: SubscriptionQueries
    let refreshSubscription: RefreshSubscription
    let authorizeLink: AuthorizeLink
    let linkSubscription: LinkSubscription
    let logger: Logger
    let unlinkSubscription: UnlinkSubscription
    let recordMembership: RecordMembership
    let extendRenewalDates: ExtendRenewalDates
    let verifyPurchase: VerifyPurchase

    struct Routes {
        /// A user's own state: client keys, user tokens, server keys.
        let reads = RouteCollection(context: UserContext.self)
        /// Links and unlinks: with a proof, or by id for the backend.
        let link = RouteCollection(context: UserContext.self)
        /// One subscription by id: its user, or an operator.
        let view = RouteCollection(context: SubscriptionViewContext.self)
        /// Memberships paid elsewhere: the backend or operators.
        let backend = RouteCollection(context: BackendContext.self)
        let admin = RouteCollection(context: AdminRequestContext.self)
    }

    var routes: Routes {
        let routes = Routes()
        routes.reads.get("/api/entitlements", use: getEntitlements)
        routes.reads.get("/api/subscriptions", use: getSubscriptions)
        // A user sees only their own subscription; an admin key any of the app's.
        routes.view.get("/api/subscriptions/{id}", use: getSubscriptionsById)
        routes.view.patch("/api/subscriptions/{id}", use: patchSubscriptions)
        routes.link.post("/api/subscriptions/link", use: postSubscriptionsLink)
        routes.link.post("/api/subscriptions/unlink", use: postSubscriptionsUnlink)
        // The app's backend (server key) or an operator (admin key) records memberships paid elsewhere.
        routes.backend.put("/api/admin/memberships/{userId}", use: putAdminMemberships)
        routes.backend.get("/api/admin/memberships/{userId}", use: getAdminMemberships)
        routes.admin.get("/api/admin/subscriptions", use: getAdminSubscriptions)
        // Renewal-date extensions (outage compensation) through the App Store Server API.
        routes.admin.post("/api/admin/subscriptions/{id}/extend", use: postAdminSubscriptionsExtend)
        routes.admin.post("/api/admin/subscriptions/extend-all", use: postAdminSubscriptionsExtendAll)
        routes.admin.get("/api/admin/subscriptions/extend-all/{product}/{request}", use: getAdminSubscriptionsExtendAll)
        routes.admin.get("/api/admin/subscriptions/cheats", use: getAdminSubscriptionsCheats)
        routes.admin.get("/api/admin/subscriptions/unlinks", use: getAdminSubscriptionsUnlinks)
        return routes
    }

    /// `GET /api/entitlements`
    func getEntitlements(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let answer = try await userEntitlements(
            runtime: context.tenant,
            userId: context.userId,
            claimingWaitingWith: (context.caller.provesUser ? verifyPurchase.claims : nil)
        )
        let now = clock.now()
        let subscriptions = answer.subscriptions.map { listed in
            let s = listed.subscription
            return EntitlementsResponse.Item(
                entitlement: s.entitlement,
                productId: s.productId,
                expiresAt: s.accessUntil(at: now).map(APITime.init),
                state: s.state(at: now).rawValue,
                autoRenew: s.autoRenew,
                environment: s.environment,
                originalTransactionId: s.originalTransactionId,
                inUse: listed.inUse,
                source: s.grantSource.rawValue,
                eligibleWinBackOfferIds: s.eligibleWinBackOfferIds.isEmpty ? nil : s.eligibleWinBackOfferIds,
                familyShared: s.familyShared ? true : nil
            )
        }
        let unlocks = answer.entitlements.flatMap(\.grants).filter { $0.source == .unlock }.map { grant in
            // These items share the subscriptions' states: an ended (refunded) grant is `revoked`.
            let status = grant.status(at: now)
            let state = status == .ended ? "revoked" : status.rawValue
            return EntitlementsResponse.Item(
                entitlement: grant.entitlement,
                productId: grant.productId ?? "",
                expiresAt: grant.until.map(APITime.init),
                state: state,
                autoRenew: nil,
                environment: grant.environment ?? StoreEnvironment(rawValue: ""),  // a grant of Berth's own: no store, no environment
                originalTransactionId: grant.reference,
                inUse: true,
                source: grant.source.rawValue
            )
        }
        return try JSONCoding.response(
            EntitlementsResponse(
                isPremium: answer.isPremium,
                entitlements: subscriptions + unlocks,
                byEntitlement: answer.entitlements.map { HeldEntitlementDTO($0, now: now) },
                membership: answer.membership.map(MembershipDTO.init)
            )
        )
    }

    /// `GET /api/subscriptions`
    func getSubscriptions(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let (page, number, perPage) = try Self.page(request)
        let (items, total) = try await subscriptionQueries.list(runtime: context.tenant, userId: context.userId, page: page)
        let now = clock.now()
        return try JSONCoding.response(
            SubscriptionPage(
                total: total,
                page: number,
                limit: perPage,
                data: items.map { SubscriptionDTO($0.subscription, inUse: $0.inUse, now: now) }
            )
        )
    }

    /// `GET /api/subscriptions/{id}`
    func getSubscriptionsById(_ request: Request, context: SubscriptionViewContext) async throws -> some ResponseGenerator {
        let listed = try await subscriptionQueries.subscription(
            runtime: context.tenant,
            originalTransactionId: try Self.id(context),
            userId: context.caller.userId
        )
        return try JSONCoding.response(SubscriptionDTO(listed.subscription, inUse: listed.inUse, now: clock.now()))
    }

    /// `PATCH /api/subscriptions/{id}`
    func patchSubscriptions(_ request: Request, context: SubscriptionViewContext) async throws -> some ResponseGenerator {
        let listed = try await refreshSubscription(
            runtime: context.tenant,
            originalTransactionId: try Self.id(context),
            userId: context.caller.userId,
            actor: context.caller.actor
        )
        return try JSONCoding.response(SubscriptionDTO(listed.subscription, inUse: listed.inUse, now: clock.now()))
    }

    /// `POST /api/subscriptions/link`
    func postSubscriptionsLink(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(LinkRequest.self, from: request)
        let id = try Self.text(body.originalTransactionId, field: "originalTransactionId")
        try await authorizeLink(
            Self.authority(context, proof: body.proof(for: id)),
            runtime: context.tenant,
            userId: context.userId,
            originalTransactionId: id
        )
        let membership = try await linkSubscription(
            runtime: context.tenant,
            userId: context.userId,
            originalTransactionId: id,
            force: body.force ?? false,
            actor: context.caller.actor
        )
        // Apple's later transactions and notifications of it will name the owner.
        if context.tenant.appStore.serverAPI != nil,
            let linked = try? await subscriptionQueries.subscription(runtime: context.tenant, originalTransactionId: id, userId: context.userId)
        {
            await SetAppAccountToken(logger: logger).afterAttribution(
                runtime: context.tenant,
                store: linked.subscription.store,
                originalTransactionId: id,
                environment: linked.subscription.environment,
                owner: context.userId
            )
        }
        return try JSONCoding.response(MembershipDTO(membership))
    }

    /// `POST /api/subscriptions/unlink`
    func postSubscriptionsUnlink(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(UnlinkRequest.self, from: request)
        let id = try Self.text(body.originalTransactionId, field: "originalTransactionId")
        try await authorizeLink(
            Self.authority(context, proof: body.proof(for: id)),
            runtime: context.tenant,
            userId: context.userId,
            originalTransactionId: id
        )
        try await unlinkSubscription(runtime: context.tenant, userId: context.userId, originalTransactionId: id, actor: context.caller.actor)
        return Response(status: .noContent)
    }

    /// `PUT /api/admin/memberships/{userId}`
    func putAdminMemberships(_ request: Request, context: BackendContext) async throws -> some ResponseGenerator {
        let userId = try Self.text(context.parameters.get("userId") ?? "", field: "userId")
        let body = try await JSONCoding.decode(MembershipRequest.self, from: request)
        let membership = try await recordMembership(
            runtime: context.tenant,
            userId: userId,
            payMethod: body.payMethod,
            tier: body.tier,
            cycle: body.cycle,
            expiresAt: body.expiresAt.date,
            autoRenew: body.autoRenew ?? false,
            actor: context.caller.actor
        )
        return try JSONCoding.response(MembershipDTO(membership))
    }

    /// `GET /api/admin/memberships/{userId}`
    func getAdminMemberships(_ request: Request, context: BackendContext) async throws -> some ResponseGenerator {
        let userId = try Self.text(context.parameters.get("userId") ?? "", field: "userId")
        guard let membership = try await subscriptionQueries.membership(runtime: context.tenant, userId: userId) else {
            throw APIError(.notFound, .notFound, "the account has no membership", field: "userId")
        }
        return try JSONCoding.response(MembershipDTO(membership))
    }

    /// `GET /api/admin/subscriptions`
    func getAdminSubscriptions(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let page = try Paging.page(request)
        let userId = request.uri.queryParameters["userId"].map(String.init)
        let result = try await records.subscriptions(tenantId: context.tenant.id, userId: userId, page: page)
        let now = clock.now()
        return try JSONCoding.response(
            ListResponse(
                items: result.items.map { SubscriptionDTO($0, inUse: false, now: now) },
                total: result.total,
                limit: page.limit,
                offset: page.offset
            )
        )
    }

    /// `POST /api/admin/subscriptions/{id}/extend`
    func postAdminSubscriptionsExtend(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(ExtendRequest.self, from: request)
        let extended = try await extendRenewalDates.extend(
            runtime: context.tenant,
            originalTransactionId: try Self.id(context),
            days: body.days,
            reasonCode: body.reasonCode ?? 3,
            actor: context.actor
        )
        return try JSONCoding.response(SubscriptionDTO(extended, inUse: false, now: clock.now()))
    }

    /// `POST /api/admin/subscriptions/extend-all`
    func postAdminSubscriptionsExtendAll(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let body = try await JSONCoding.decode(ExtendAllRequest.self, from: request)
        let environment = body.environment ?? context.tenant.tenant.apple.environments.first ?? .production
        let identifier = try await extendRenewalDates.extendAll(
            runtime: context.tenant,
            productId: try Self.text(body.productId, field: "productId"),
            days: body.days,
            reasonCode: body.reasonCode ?? 3,
            storefronts: body.storefronts,
            environment: environment,
            actor: context.actor
        )
        return try JSONCoding.response(
            ExtendAllDTO(requestIdentifier: identifier, productId: body.productId, environment: environment),
            status: .accepted
        )
    }

    /// `GET /api/admin/subscriptions/extend-all/{product}/{request}`
    func getAdminSubscriptionsExtendAll(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let environment =
            request.uri.queryParameters["environment"].map { StoreEnvironment(rawValue: String($0)) } ?? context.tenant.tenant.apple.environments
            .first
            ?? .production
        let status = try await extendRenewalDates.status(
            runtime: context.tenant,
            productId: try Self.text(context.parameters.get("product") ?? "", field: "productId"),
            requestIdentifier: try Self.text(context.parameters.get("request") ?? "", field: "requestIdentifier"),
            environment: environment
        )
        return try JSONCoding.response(
            ExtendAllStatusDTO(
                requestIdentifier: status.requestIdentifier,
                complete: status.complete ?? false,
                completeDate: status.completeDate.map { APITime(Date(timeIntervalSince1970: Double($0) / 1000)) },
                succeededCount: status.succeededCount ?? 0,
                failedCount: status.failedCount ?? 0
            )
        )
    }

    /// `GET /api/admin/subscriptions/cheats`
    func getAdminSubscriptionsCheats(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let page = try Paging.page(request)
        let result = try await records.subscriptionCheats(tenantId: context.tenant.id, page: page)
        return try JSONCoding.response(
            ListResponse(items: result.items.map(CheatDTO.init), total: result.total, limit: page.limit, offset: page.offset)
        )
    }

    /// `GET /api/admin/subscriptions/unlinks`
    func getAdminSubscriptionsUnlinks(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let page = try Paging.page(request)
        let result = try await records.unlinks(tenantId: context.tenant.id, page: page)
        return try JSONCoding.response(
            ListResponse(items: result.items.map(UnlinkDTO.init), total: result.total, limit: page.limit, offset: page.offset)
        )
    }

    /// Server keys holding the subscriptions scope link by id; everyone else proves.
    static func authority(_ context: UserContext, proof: PurchaseProof?) -> LinkAuthority {
        context.caller.kind == .serverKey && context.caller.scopes.contains(.subscriptions) ? .byId : .proof(proof)
    }

    /// `page` (from 1) and `per_page` (1…200, default 20).
    static func page(_ request: Request) throws -> (Page, Int, Int) {
        let query = request.uri.queryParameters
        func number(_ name: String, default value: Int) throws -> Int {
            guard let text = query[name[...]] else { return value }
            guard let n = Int(String(text)), n >= 1 else {
                throw APIError(.badRequest, .invalidQuery, "\(name) must be a positive integer", field: name)
            }
            return n
        }
        let page = try number("page", default: 1)
        let perPage = min(try number("per_page", default: 20), Page.maximumLimit)
        // Pages past the listing's offset bound are refused before any arithmetic on them.
        guard page <= Page.maximumOffset / perPage + 1 else {
            throw APIError(
                .badRequest,
                .invalidQuery,
                "page must be at most \(Page.maximumOffset / perPage + 1) with per_page \(perPage)",
                field: "page"
            )
        }
        return (Page(limit: perPage, offset: (page - 1) * perPage), page, perPage)
    }

    static func id(_ context: some RequestContext) throws -> String {
        try text(context.parameters.get("id") ?? "", field: "originalTransactionId")
    }

    static func text(_ value: String, field: String) throws -> String {
        let trimmed = Text.trimmed(value)
        guard !trimmed.isEmpty, Text.length(trimmed) <= 200 else {
            throw APIError(.badRequest, .invalidField, "\(field) must be 1 to 200 characters", field: field)
        }
        return trimmed
    }
}

/// `POST /api/admin/subscriptions/{id}/extend`: 1…90 days; reasonCode 0…3 (default 3, a service issue or outage).
struct ExtendRequest: Codable, RefusesNull {
    var days: Int
    var reasonCode: Int?
}

/// `POST /api/admin/subscriptions/extend-all`: every active subscriber of a product (optionally some storefronts).
struct ExtendAllRequest: Codable, RefusesNull {
    var productId: String
    var days: Int
    var reasonCode: Int?
    var storefronts: [String]?
    var environment: StoreEnvironment?
}

struct ExtendAllDTO: Codable {
    var requestIdentifier: String
    var productId: String
    var environment: StoreEnvironment
}

struct ExtendAllStatusDTO: Codable {
    var requestIdentifier: String?
    var complete: Bool
    var completeDate: APITime?
    var succeededCount: Int64
    var failedCount: Int64
}

// MARK: - Request and answer types of these routes

/// `GET /api/entitlements`.
struct EntitlementsResponse: Codable {
    /// One per subscription the user owns, then one per unlock or pass.
    struct Item: Codable {
        var entitlement: String
        var productId: String
        var expiresAt: APITime?
        /// Subscriptions: their state; unlocks: `active`, `expired` or `revoked`.
        var state: String
        var autoRenew: Bool?
        var environment: StoreEnvironment
        /// Subscriptions: the originalTransactionId; unlocks: the transaction id.
        var originalTransactionId: String
        var inUse: Bool
        /// `app_store_subscription` or `unlock`.
        var source: String?
        /// Subscriptions: the win-back offers Apple says the customer may redeem (left out when none).
        var eligibleWinBackOfferIds: [String]? = nil
        /// Present (true) for a subscription the user has through Family Sharing.
        var familyShared: Bool? = nil
    }
    var isPremium: Bool
    var entitlements: [Item]
    /// Each entitlement the user has or had, with every grant that gives it and until when.
    var byEntitlement: [HeldEntitlementDTO]?
    /// The membership the account uses (from an Apple subscription or paid elsewhere), if any.
    var membership: MembershipDTO?
}

/// `GET /api/subscriptions?page=&per_page=`.
struct SubscriptionPage: Codable {
    var total: Int
    var page: Int
    var limit: Int
    var data: [SubscriptionDTO]
}

/// A link or unlink request. From the app (a user's token or a client key) it carries the store's
/// proof that this device holds the subscription; the app's backend (server key) may name it alone.
struct LinkRequest: Codable, RefusesNull, CarriesLinkProof {
    var originalTransactionId: String
    var force: Bool?
    var jwsRepresentation: String?
    var receipt: String?
    var transactionId: String?
}

struct UnlinkRequest: Codable, RefusesNull, CarriesLinkProof {
    var originalTransactionId: String
    var jwsRepresentation: String?
    var receipt: String?
    var transactionId: String?
}

/// `PUT /api/admin/memberships/{userId}`: a membership paid outside the App Store.
struct MembershipRequest: Codable, RefusesNull {
    /// `alipay`, `wechat`, `stripe`, …; omit when unknown (created by hand).
    var payMethod: String?
    var tier: String?
    var cycle: String?
    var expiresAt: APITime
    var autoRenew: Bool?
}

struct CheatDTO: Codable {
    var id: Int64
    var userId: String
    var originalTransactionId: String
    var ownerUserId: String?
    var source: String
    var at: APITime

    init(_ c: SubscriptionCheat) {
        id = c.id
        userId = c.userId
        originalTransactionId = c.originalTransactionId
        ownerUserId = c.ownerUserId
        source = c.source
        at = APITime(c.at)
    }
}

struct UnlinkDTO: Codable {
    var id: Int64
    var userId: String
    var originalTransactionId: String
    var actor: String
    /// The membership the unlink removed, as JSON text (null when the subscription was not in use).
    var membershipSnapshot: String?
    var at: APITime

    init(_ a: UnlinkArchive) {
        id = a.id
        userId = a.userId
        originalTransactionId = a.originalTransactionId
        actor = a.actor
        membershipSnapshot = a.membershipSnapshot
        at = APITime(a.at)
    }
}

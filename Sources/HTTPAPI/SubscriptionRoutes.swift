import Domain
import Foundation
import Hummingbird
import UseCases

/// `/api/entitlements` and `/api/subscriptions…` for users; memberships paid elsewhere, cheat
/// attempts and unlink archives for the app's backend and operators.
struct SubscriptionRoutes {
    let services: BerthServices

    var subscriptions: Subscriptions { Subscriptions(store: services.store, clock: services.clock, logger: services.logger) }

    func register(on router: Router<BerthRequestContext>) {
        router.get("/api/entitlements") { _, context in
            let (runtime, userId, _) = try context.requireUser()
            let (items, membership) = try await subscriptions.entitlements(runtime: runtime, userId: userId)
            let now = services.clock.now()
            let entitlements = items.map { listed in
                let s = listed.subscription
                return EntitlementsResponse.Item(entitlement: s.entitlement, productId: s.productId, expiresAt: s.accessUntil(at: now).map(APITime.init),
                                                 state: s.state(at: now).rawValue, autoRenew: s.autoRenew, environment: s.environment,
                                                 originalTransactionId: s.originalTransactionId, inUse: listed.inUse)
            }
            let paidElsewhere = membership.map { !$0.isApple && !$0.isExpired(at: now) } ?? false
            return try JSONCoding.response(EntitlementsResponse(isPremium: items.contains { $0.subscription.state(at: now).entitles } || paidElsewhere,
                                                                entitlements: entitlements, membership: membership.map(MembershipDTO.init)))
        }
        router.get("/api/subscriptions") { request, context in
            let (runtime, userId, _) = try context.requireUser()
            let (page, number, perPage) = try Self.page(request)
            let (items, total) = try await subscriptions.list(runtime: runtime, userId: userId, page: page)
            let now = services.clock.now()
            return try JSONCoding.response(SubscriptionPage(total: total, page: number, limit: perPage,
                                                            data: items.map { SubscriptionDTO($0.subscription, inUse: $0.inUse, now: now) }))
        }
        router.get("/api/subscriptions/{id}") { _, context in
            let (runtime, userId) = try Self.caller(context)
            let listed = try await subscriptions.subscription(runtime: runtime, originalTransactionId: try Self.id(context), userId: userId)
            return try JSONCoding.response(SubscriptionDTO(listed.subscription, inUse: listed.inUse, now: services.clock.now()))
        }
        router.patch("/api/subscriptions/{id}") { _, context in
            let (runtime, userId) = try Self.caller(context)
            try services.rateLimiter.check(context, scope: .verification)
            let listed = try await subscriptions.refresh(runtime: runtime, originalTransactionId: try Self.id(context), userId: userId, actor: Self.actor(context))
            return try JSONCoding.response(SubscriptionDTO(listed.subscription, inUse: listed.inUse, now: services.clock.now()))
        }
        router.post("/api/subscriptions/link") { request, context in
            let (runtime, userId, actor) = try context.requireUser()
            let body = try await JSONCoding.decode(LinkRequest.self, from: request)
            let id = try Self.text(body.originalTransactionId, field: "originalTransactionId")
            let membership = try await subscriptions.link(runtime: runtime, userId: userId, originalTransactionId: id, force: body.force ?? false, actor: actor)
            return try JSONCoding.response(MembershipDTO(membership))
        }
        router.post("/api/subscriptions/unlink") { request, context in
            let (runtime, userId, actor) = try context.requireUser()
            let body = try await JSONCoding.decode(UnlinkRequest.self, from: request)
            let id = try Self.text(body.originalTransactionId, field: "originalTransactionId")
            try await subscriptions.unlink(runtime: runtime, userId: userId, originalTransactionId: id, actor: actor)
            return Response(status: .noContent)
        }
        // The app's backend (server key) or an operator (admin key) records memberships paid elsewhere.
        router.put("/api/admin/memberships/{userId}") { request, context in
            let runtime = try Self.backend(context)
            let userId = try Self.text(context.parameters.get("userId") ?? "", field: "userId")
            let body = try await JSONCoding.decode(MembershipRequest.self, from: request)
            let membership = try await subscriptions.recordMembership(runtime: runtime, userId: userId, payMethod: body.payMethod, tier: body.tier, cycle: body.cycle,
                                                                      expiresAt: body.expiresAt.date, autoRenew: body.autoRenew ?? false, actor: Self.actor(context))
            return try JSONCoding.response(MembershipDTO(membership))
        }
        router.get("/api/admin/memberships/{userId}") { _, context in
            let runtime = try Self.backend(context)
            let userId = try Self.text(context.parameters.get("userId") ?? "", field: "userId")
            guard let membership = try await subscriptions.membership(runtime: runtime, userId: userId) else {
                throw APIError(.notFound, .notFound, "the account has no membership", field: "userId")
            }
            return try JSONCoding.response(MembershipDTO(membership))
        }
        router.get("/api/admin/subscriptions") { request, context in
            let (runtime, _) = try context.requireAdmin()
            let page = try Paging.page(request)
            let userId = request.uri.queryParameters["userId"].map(String.init)
            let tenantId = runtime.id
            let result = try await services.store.read { try $0.subscriptions.subscriptions(tenantId: tenantId, userId: userId, page: page) }
            let now = services.clock.now()
            return try JSONCoding.response(ListResponse(items: result.items.map { SubscriptionDTO($0, inUse: false, now: now) }, total: result.total,
                                                        limit: page.limit, offset: page.offset))
        }
        router.get("/api/admin/subscriptions/cheats") { request, context in
            let (runtime, _) = try context.requireAdmin()
            let page = try Paging.page(request)
            let tenantId = runtime.id
            let result = try await services.store.read { try $0.subscriptions.cheats(tenantId: tenantId, page: page) }
            return try JSONCoding.response(ListResponse(items: result.items.map(CheatDTO.init), total: result.total, limit: page.limit, offset: page.offset))
        }
        router.get("/api/admin/subscriptions/unlinks") { request, context in
            let (runtime, _) = try context.requireAdmin()
            let page = try Paging.page(request)
            let tenantId = runtime.id
            let result = try await services.store.read { try $0.subscriptions.unlinks(tenantId: tenantId, page: page) }
            return try JSONCoding.response(ListResponse(items: result.items.map(UnlinkDTO.init), total: result.total, limit: page.limit, offset: page.offset))
        }
    }

    /// `page` (from 1) and `per_page` (1…200, default 20).
    static func page(_ request: Request) throws -> (Page, Int, Int) {
        let query = request.uri.queryParameters
        func number(_ name: String, default value: Int) throws -> Int {
            guard let text = query[name[...]] else { return value }
            guard let n = Int(String(text)), n >= 1 else { throw APIError(.badRequest, .invalidQuery, "\(name) must be a positive integer", field: name) }
            return n
        }
        let page = try number("page", default: 1)
        let perPage = min(try number("per_page", default: 20), Page.maximumLimit)
        return (Page(limit: perPage, offset: (page - 1) * perPage), page, perPage)
    }

    /// A user (who sees only their own subscriptions) or an admin key (any).
    static func caller(_ context: BerthRequestContext) throws -> (TenantRuntime, String?) {
        if case .admin(let tenant, _) = context.identity { return (tenant, nil) }
        let (runtime, userId, _) = try context.requireUser()
        return (runtime, userId)
    }

    static func backend(_ context: BerthRequestContext) throws -> TenantRuntime {
        switch context.identity {
        case .admin(let tenant, _), .server(let tenant, _): return tenant
        case .user: throw APIError.forbidden("memberships are recorded by the app's backend (server key) or an operator (admin key)")
        case nil: throw APIError.unauthenticated("send Authorization: Bearer <server or admin API key>")
        }
    }

    static func actor(_ context: BerthRequestContext) -> Actor {
        switch context.identity {
        case .admin(_, let id): .admin(keyId: id)
        case .server(_, let id): .server(keyId: id)
        case .user(_, _, let via): Actor(rawValue: via)
        case nil: .system
        }
    }

    static func id(_ context: BerthRequestContext) throws -> String {
        try text(context.parameters.get("id") ?? "", field: "originalTransactionId")
    }

    static func text(_ value: String, field: String) throws -> String {
        let trimmed = Text.trimmed(value)
        guard !trimmed.isEmpty, Text.length(trimmed) <= 200 else { throw APIError(.badRequest, .invalidField, "\(field) must be 1 to 200 characters", field: field) }
        return trimmed
    }
}

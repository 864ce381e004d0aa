import Domain
import Foundation
import Hummingbird
import Logging
import UseCases

/// The `/v1/...` credit routes of apps whose clients were written against a NestJS backend (the AI
/// image stylist): `GET /v1/credits/balance`, `GET /v1/credits/transactions`, `POST
/// /v1/credits/purchase` and the public `GET /v1/iap/products`, in snake_case, one credit type,
/// prices in currency units. Served for tenants with `credits.v1Routes`; the user is the token's
/// subject (a Firebase ID token picks its tenant by its issuer, the project).
struct V1CreditRoutes {
    let creditQueries: CreditQueries
    let verifyPurchase: VerifyPurchase
    let tenants: TenantRegistry

    static let shape = ErrorShape(api: { error in try refusal(error) })

    struct Routes {
        let reads = RouteCollection(context: UserContext.self)
        let purchases = RouteCollection(context: UserContext.self)
        let open = RouteCollection(context: BerthRequestContext.self)
    }

    var routes: Routes {
        let routes = Routes()
        routes.reads.get("/v1/credits/balance", use: getV1CreditsBalance)
        routes.reads.get("/v1/credits/transactions", use: getV1CreditsTransactions)
        routes.purchases.post("/v1/credits/purchase", use: purchase)
        routes.open.get("/v1/iap/products", use: getV1IapProducts)
        return routes
    }

    /// `GET /v1/credits/balance`
    func getV1CreditsBalance(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let (runtime, type) = try Self.served(context.tenant)
        let balances = try await creditQueries.balances(
            runtime,
            userId: context.userId,
            claimingWaitingWith: (context.caller.provesUser ? verifyPurchase.claims : nil)
        )
        return try JSONCoding.response(V1Balance(credits: balances.first { $0.creditType == type }?.balance ?? 0))
    }

    /// `GET /v1/credits/transactions`
    func getV1CreditsTransactions(_ request: Request, context: UserContext) async throws -> some ResponseGenerator {
        let (runtime, type) = try Self.served(context.tenant)
        let page = try Paging.page(request)
        let result = try await creditQueries.history(runtime, userId: context.userId, filter: LedgerFilter(creditType: type), page: page)
        return try JSONCoding.response(
            V1TransactionHistory(
                transactions: result.items.map(V1Transaction.init),
                meta: LedgerPageMeta(total: result.total, limit: page.limit, offset: page.offset)
            )
        )
    }

    /// `GET /v1/iap/products`
    func getV1IapProducts(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        let runtime = try catalogTenant(request, context)
        let tenantId = runtime.id
        let products = try await creditQueries.activeProducts(tenantId: tenantId).sorted {
            ($0.displayOrder, $0.productId) < ($1.displayOrder, $1.productId)
        }
        return try JSONCoding.response(V1Products(products: products.map { V1Product($0, tenantId: tenantId) }))
    }

    /// `{transaction_data, product_id}`: the StoreKit 2 signed transaction, claimed like
    /// `/api/verify-purchase`. A retry of the same transaction by its owner succeeds and adds nothing.
    func purchase(_ request: Request, _ context: UserContext) async throws -> Response {
        let (runtime, _) = try Self.served(context.tenant)
        let body = try await JSONCoding.decode(V1PurchaseRequest.self, from: request)
        guard let data = body.transactionData?.trimmingCharacters(in: .whitespacesAndNewlines), !data.isEmpty else {
            throw APIError(.badRequest, .missingField, "transaction_data (Transaction.jwsRepresentation) is required", field: "transaction_data")
        }
        guard let productId = body.productId, !productId.isEmpty else {
            throw APIError(.badRequest, .missingField, "product_id is required", field: "product_id")
        }
        let result = try await verifyPurchase(
            .init(
                runtime: runtime,
                userId: context.userId,
                productId: productId,
                proof: .jws(data),
                target: nil,
                callerProvesUser: context.caller.provesUser
            )
        )
        if let refusal = VerifyPurchaseRoutes.refusal(result.outcome, namesBooking: false) { throw refusal }
        guard let purchase = result.outcome.purchase, case .credits(let credits) = result.state else {
            throw APIError(.unprocessableContent, .productMismatch, "product_id is not a credit pack of this app", field: "product_id")
        }
        let added: Int64 = if case .applied = result.outcome { purchase.credits ?? 0 } else { 0 }
        return try JSONCoding.response(V1PurchaseResponse(transactionId: purchase.transactionId, creditsAdded: added, newBalance: credits.balance))
    }

    /// The caller's tenant and its one credit type, when it serves these routes.
    static func served(_ runtime: TenantRuntime) throws -> (TenantRuntime, String) {
        guard let settings = runtime.tenant.credits, settings.v1Routes == true, let type = settings.types.first else {
            throw APIError(.notFound, .notFound, "this app does not serve the /v1 credit routes")
        }
        return (runtime, type)
    }

    /// The public catalog's tenant: the caller's when credentials came, else `?tenant=`, else the
    /// first tenant (in products.json order) that serves these routes with a public catalog.
    private func catalogTenant(_ request: Request, _ context: BerthRequestContext) throws -> TenantRuntime {
        switch context.authentication {
        case .authenticated(let caller):
            return try Self.served(caller.tenant).0
        case .refused(let error):
            throw error
        case .anonymous:
            let open = tenants.ordered.filter { $0.tenant.credits?.v1Routes == true && $0.tenant.credits?.publicProducts == true }
            if let id = request.uri.queryParameters["tenant"] {
                guard let found = open.first(where: { $0.id == String(id) }) else {
                    throw APIError(.notFound, .notFound, "no app publishes its /v1 products under this tenant id", field: "tenant")
                }
                return found
            }
            guard let first = open.first else { throw APIError.unauthenticated("no app publishes its /v1 products without credentials") }
            return first
        }
    }

    /// NestJS's error body (`statusCode`, `message`, `error`) with Berth's stable `code`.
    static func refusal(_ error: APIError) throws -> Response {
        var response = try JSONCoding.response(
            V1Error(
                statusCode: Int(error.status.code),
                code: error.code.rawValue,
                message: error.message,
                error: error.status.reasonPhrase,
                field: error.field,
                credits: error.credits.map(CreditBalanceDTO.init)
            ),
            status: error.status
        )
        for field in error.headers { response.headers.append(field) }
        return response
    }
}

struct V1Balance: Codable {
    var credits: Int64
}

struct V1PurchaseRequest: Decodable {
    var transactionData: String?
    var productId: String?

    enum CodingKeys: String, CodingKey {
        case transactionData = "transaction_data"
        case productId = "product_id"
    }
}

struct V1PurchaseResponse: Codable {
    var transactionId: String
    var creditsAdded: Int64
    var newBalance: Int64

    enum CodingKeys: String, CodingKey {
        case transactionId = "transaction_id"
        case creditsAdded = "credits_added"
        case newBalance = "new_balance"
    }
}

/// A ledger entry in the client's vocabulary: `type` is `purchase`, `usage` or `bonus`, `status`
/// `completed` or `refunded`; `id` is the entry's number as a UUID (`00000000-0000-4000-8000-<12 hex digits>`).
struct V1Transaction: Codable {
    var id: String
    var type: String
    var amount: Int64
    var productId: String?
    var status: String
    var createdAt: APITime

    enum CodingKeys: String, CodingKey {
        case id, type, amount, status
        case productId = "product_id"
        case createdAt = "created_at"
    }

    init(_ entry: LedgerEntry) {
        id = Self.uuid(entry.id)
        amount = entry.amount
        productId = entry.productId
        status = entry.status.rawValue
        createdAt = APITime(entry.createdAt)
        switch entry.type {
        case .purchase, .refundReversal:
            type = "purchase"
        case .refund:
            // The credits a refund took back: the purchase's own row, refunded.
            type = "purchase"
            status = LedgerEntryStatus.refunded.rawValue
        case .bonus:
            type = "bonus"
        case .usage, .debtSettlement:
            type = "usage"
        case .adjustment:
            type = entry.amount < 0 ? "usage" : "bonus"
        }
    }

    static func uuid(_ id: Int64) -> String {
        let bits = UInt64(bitPattern: id)
        func hex(_ value: UInt64, _ digits: Int) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: max(0, digits - text.count)) + text
        }
        return hex(bits >> 48, 8) + "-0000-4000-8000-" + hex(bits & 0xFFFF_FFFF_FFFF, 12)
    }
}

struct V1TransactionHistory: Codable {
    var transactions: [V1Transaction]
    var meta: LedgerPageMeta
}

/// A credit pack on sale: `price` in currency units (0.99), null when the catalog has none.
struct V1Product: Codable {
    var id: String
    var productId: String
    var name: String
    var description: String?
    var credits: Int64
    var price: Decimal?
    var currency: String
    var displayOrder: Int

    enum CodingKeys: String, CodingKey {
        case id, name, description, credits, price, currency
        case productId = "product_id"
        case displayOrder = "display_order"
    }

    init(_ product: CreditProduct, tenantId: String) {
        id = AccountTokens.nameUUID("\(tenantId)/\(product.productId)")
        productId = product.productId
        name = product.title
        description = product.description
        credits = product.credits
        price = product.priceMinor.map { CurrencyUnits.amount(minor: $0, currency: product.currency) }
        currency = product.currency
        displayOrder = product.displayOrder
    }
}

struct V1Products: Codable {
    var products: [V1Product]
}

struct V1Error: Codable {
    var statusCode: Int
    var code: String
    var message: String
    var error: String
    var field: String?
    var credits: CreditBalanceDTO?
}

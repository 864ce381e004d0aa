import Domain
import Foundation
import Hummingbird
import NIOCore
import UseCases

/// `/api/admin/credit-products…` and `/api/admin/credits/…`: the operators' CMS of a credit app
/// (admin API key): products, the ledger with filters and CSV export, statistics, adjustments and
/// the ledger check.
struct AdminCreditRoutes {
    let records: OperatorRecords
    let creditReports: CreditReports
    let createCreditProduct: CreateCreditProduct
    let updateCreditProduct: UpdateCreditProduct
    let adjustCredits: AdjustCredits

    /// Rows one CSV export returns at most (narrow the filters for more).
    static let exportLimit = 100_000

    /// The routes of this controller, for its group in `buildRouter`.
    var routes: RouteCollection<AdminRequestContext> {
        let router = RouteCollection(context: AdminRequestContext.self)
        router.get("/api/admin/credit-products", use: getAdminCreditProducts)
        router.post("/api/admin/credit-products", use: postAdminCreditProducts)
        router.patch("/api/admin/credit-products/{productId}", use: patchAdminCreditProducts)
        router.get("/api/admin/credits/ledger", use: getAdminCreditsLedger)
        router.get("/api/admin/credits/stats", use: getAdminCreditsStats)
        router.get("/api/admin/credits/check", use: getAdminCreditsCheck)
        router.post("/api/admin/credits/adjustments", use: postAdminCreditsAdjustments)
        return router
    }

    /// `GET /api/admin/credit-products`
    func getAdminCreditProducts(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (runtime, _) = admin(context)
        let products = try await creditReports.products(runtime)
        return try JSONCoding.response(ProductsResponse(products: products.map(ProductDTO.init)))
    }

    /// `POST /api/admin/credit-products`
    func postAdminCreditProducts(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (runtime, keyId) = admin(context)
        let body = try await JSONCoding.decode(CreditProductRequest.self, from: request)
        guard let productId = body.productId.map(Text.trimmed), !productId.isEmpty else {
            throw APIError(.badRequest, .missingField, "productId is required", field: "productId")
        }
        let product = try await createCreditProduct(runtime, productId: productId, fields: body.fields, actor: .admin(keyId: keyId))
        return try JSONCoding.response(CreditProductResponse(product: ProductDTO(product)), status: .created)
    }

    /// `PATCH /api/admin/credit-products/{productId}`
    func patchAdminCreditProducts(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (runtime, keyId) = admin(context)
        let productId = context.parameters.get("productId") ?? ""
        let body = try await JSONCoding.decode(CreditProductRequest.self, from: request)
        if let renamed = body.productId, renamed != productId {
            throw APIError(.badRequest, .invalidField, "a product id cannot change; create a new product", field: "productId")
        }
        let product = try await updateCreditProduct(runtime, productId: productId, fields: body.fields, actor: .admin(keyId: keyId))
        return try JSONCoding.response(CreditProductResponse(product: ProductDTO(product)))
    }

    /// `GET /api/admin/credits/ledger`
    func getAdminCreditsLedger(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (runtime, _) = admin(context)
        let filter = try LedgerQuery.filter(request, settings: try CreditRequests.settings(runtime), forAdmin: true)
        let tenantId = runtime.id
        if try Self.wantsCSV(request) {
            let entries = try await records.exportLedger(tenantId: tenantId, filter: filter, limit: Self.exportLimit)
            return Response(
                status: .ok,
                headers: [
                    .contentType: "text/csv; charset=utf-8",
                    .contentDisposition: "attachment; filename=\"\(tenantId)-ledger.csv\"",
                ],
                body: .init(byteBuffer: ByteBuffer(string: LedgerCSV.render(entries, zone: runtime.tenant.zone)))
            )
        }
        let page = try Paging.page(request)
        let result = try await records.ledger(tenantId: tenantId, filter: filter, page: page)
        return try JSONCoding.response(
            ListResponse(items: result.items.map(LedgerEntryDTO.init), total: result.total, limit: page.limit, offset: page.offset)
        )
    }

    /// `GET /api/admin/credits/stats`
    func getAdminCreditsStats(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (runtime, _) = admin(context)
        let from = try Paging.time(request, "from"), to = try Paging.time(request, "to")
        let stats = try await creditReports.stats(runtime, from: from, to: to)
        return try JSONCoding.response(
            CreditStatsResponse(
                from: from.map(APITime.init),
                to: to.map(APITime.init),
                products: stats.map {
                    CreditStatsDTO(
                        productId: $0.productId,
                        purchases: $0.purchases,
                        creditsGranted: $0.creditsGranted,
                        refunds: $0.refunds,
                        creditsRefunded: $0.creditsRefunded
                    )
                }
            )
        )
    }

    /// `GET /api/admin/credits/check`
    func getAdminCreditsCheck(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (runtime, _) = admin(context)
        let result = try await creditReports.check(runtime)
        return try JSONCoding.response(
            LedgerCheckResponse(
                consistent: result.problemCount == 0,
                accounts: result.accounts,
                problemCount: result.problemCount,
                problems: result.problems.map {
                    LedgerCheckResponse.Problem(userId: $0.0.userId, creditType: $0.0.creditType, problems: $0.1)
                }
            )
        )
    }

    /// `POST /api/admin/credits/adjustments`
    func postAdminCreditsAdjustments(_ request: Request, context: AdminRequestContext) async throws -> some ResponseGenerator {
        let (runtime, keyId) = admin(context)
        let body = try await JSONCoding.decode(AdjustmentRequest.self, from: request)
        let trimmed = Text.trimmed(body.userId)
        guard !trimmed.isEmpty, let userId = try? Authenticator.userId(trimmed, field: "userId", tenant: runtime.tenant) else {
            throw APIError(.badRequest, .invalidField, "userId must be 1-\(Authenticator.maximumUserIdBytes) bytes", field: "userId")
        }
        let reason = Text.trimmed(body.reason)
        guard !reason.isEmpty else { throw APIError(.badRequest, .missingField, "an adjustment needs a reason", field: "reason") }
        guard Text.length(reason) <= 500 else {
            throw APIError(.badRequest, .invalidField, "reason is limited to 500 characters", field: "reason")
        }
        let result = try await adjustCredits(
            runtime,
            userId: userId,
            creditType: body.creditType,
            amount: body.amount,
            reason: reason,
            actor: .admin(keyId: keyId)
        )
        return try JSONCoding.response(
            AdjustmentResponse(entry: LedgerEntryDTO(result.entry), credits: CreditBalanceDTO(result.credits)),
            status: .created
        )
    }

    private func admin(_ context: AdminRequestContext) -> (TenantRuntime, Int64) {
        (context.tenant, context.keyId)
    }

    /// `?format=csv` (or `json`, the default), or `Accept: text/csv`. Any other format is refused.
    static func wantsCSV(_ request: Request) throws -> Bool {
        let formats = request.uri.queryParameters.getAll("format")
        guard formats.count <= 1, formats.allSatisfy({ $0 == "csv" || $0 == "json" }) else {
            throw APIError(.badRequest, .invalidQuery, "format must be json or csv", field: "format")
        }
        return formats.first == "csv" || (formats.isEmpty && request.headers[.accept]?.contains("text/csv") == true)
    }
}

extension CreditProductRequest {
    var fields: CreditProductFields {
        CreditProductFields(
            creditType: creditType,
            credits: credits,
            title: title?.trimmingCharacters(in: .whitespaces),
            description: description,
            priceMinor: priceMinor,
            displayOrder: displayOrder,
            active: active
        )
    }
}

/// The ledger as CSV (RFC 4180): a header row, one entry per row, oldest first. Text cells that a
/// spreadsheet would run as a formula are prefixed with `'`.
enum LedgerCSV {
    static let header = [
        "id", "createdAt", "userId", "creditType", "type", "amount", "debtChange", "balanceAfter", "status", "actor", "reason",
        "productId", "transactionId", "purchaseId", "reservationId", "profileId", "reference", "localCreatedAt", "timeZone",
    ]

    /// `zone`: the app's, for the last two columns (the entry's time with its offset there).
    static func render(_ entries: [LedgerEntry], zone: TimeZone = ZonedTime.utc) -> String {
        var lines = [header.joined(separator: ",")]
        for e in entries {
            let numbers: (Int64?) -> String = { $0.map(String.init) ?? "" }
            lines.append(
                [
                    String(e.id), APITime.format(e.createdAt), text(e.userId), e.creditType, e.type.rawValue, String(e.amount), String(e.debtChange),
                    String(e.balanceAfter), e.status.rawValue, text(e.actor), text(e.reason), text(e.productId), text(e.transactionId),
                    numbers(e.purchaseId), numbers(e.reservationId), text(e.profileId), text(e.reference),
                    ZonedTime.format(e.createdAt, in: zone), ZonedTime.name(zone),
                ].joined(separator: ",")
            )
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    static func text(_ value: String?) -> String {
        guard let value else { return "" }
        let guarded = guardFormulas(value)
        guard guarded.unicodeScalars.contains(where: { quoted.contains($0) }) else { return guarded }
        return "\"" + guarded.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Scalars that make a cell quoted: RFC 4180's, and the separators of spreadsheets in other locales
    /// (`;` in Italian, German, French… Excel; tab) which would otherwise split the cell (V10).
    static let quoted: Set<Unicode.Scalar> = [",", ";", "\t", "\"", "\r", "\n"]
    /// Where a spreadsheet may start a new cell inside the text if it ignores the quotes.
    static let separators: Set<Unicode.Scalar> = [",", ";", "\t", "\r", "\n"]
    static let formulaStarts: Set<Unicode.Scalar> = ["=", "+", "-", "@", "\t", "\r"]

    /// `'` before every part of the text that a spreadsheet could read as a formula: the text's start
    /// and each start after a separator, leading spaces skipped. Scalars, not Characters: "=" followed
    /// by a combining mark is one grapheme that is not "=", and a spreadsheet still reads a formula.
    static func guardFormulas(_ value: String) -> String {
        var out = String.UnicodeScalarView()
        var atStart = true
        var changed = false
        for scalar in value.unicodeScalars {
            if atStart, scalar != " " {
                if formulaStarts.contains(scalar) {
                    out.append("'")
                    changed = true
                }
                atStart = false
            }
            out.append(scalar)
            if separators.contains(scalar) { atStart = true }
        }
        return changed ? String(out) : value
    }
}

// MARK: - Request and answer types of these routes

struct CreditProductRequest: Decodable, RefusesNull {
    static let nullable: Set<String> = ["description", "priceMinor"]
    var productId: String?
    var creditType: String?
    var credits: Int64?
    var title: String?
    /// Absent: left as it is; `null`: cleared (`.some(nil)`).
    var description: String??
    var priceMinor: Int64??
    var displayOrder: Int?
    var active: Bool?

    enum CodingKeys: String, CodingKey {
        case productId, creditType, credits, title, description, priceMinor, displayOrder, active
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        creditType = try c.decodeIfPresent(String.self, forKey: .creditType)
        credits = try c.decodeIfPresent(Int64.self, forKey: .credits)
        title = try c.decodeIfPresent(String.self, forKey: .title)
        description = c.contains(.description) ? .some(try c.decodeIfPresent(String.self, forKey: .description)) : nil
        priceMinor = c.contains(.priceMinor) ? .some(try c.decodeIfPresent(Int64.self, forKey: .priceMinor)) : nil
        displayOrder = try c.decodeIfPresent(Int.self, forKey: .displayOrder)
        active = try c.decodeIfPresent(Bool.self, forKey: .active)
    }
}

struct CreditProductResponse: Codable {
    var product: ProductDTO
}

struct AdjustmentRequest: Codable, RefusesNull {
    var userId: String
    var creditType: String?
    var amount: Int64
    var reason: String
}

struct AdjustmentResponse: Codable {
    var success = true
    var entry: LedgerEntryDTO
    var credits: CreditBalanceDTO
}

struct CreditStatsResponse: Codable {
    var from: APITime?
    var to: APITime?
    var products: [CreditStatsDTO]
}

struct LedgerCheckResponse: Codable {
    struct Problem: Codable {
        var userId: String
        var creditType: String
        var problems: [String]
    }

    /// True when every account's balance, debt and lots agree with the ledger.
    var consistent: Bool
    var accounts: Int
    /// How many accounts disagree; `problems` lists the first 100.
    var problemCount: Int
    var problems: [Problem]
}

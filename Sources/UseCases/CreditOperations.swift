import Domain
import Foundation

/// What a tenant's operators do with credits (admin key): the credit products on sale, manual
/// adjustments, the ledger check. Every change is audited.
public struct CreditOperations: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    /// The fields of a product an operator sends; nil leaves a field as it is (on create: its default).
    public struct ProductFields: Sendable {
        public var creditType: String?
        public var credits: Int64?
        public var title: String?
        public var description: String??
        public var priceMinor: Int64??
        public var displayOrder: Int?
        public var active: Bool?

        public init(creditType: String? = nil, credits: Int64? = nil, title: String? = nil, description: String?? = nil, priceMinor: Int64?? = nil,
                    displayOrder: Int? = nil, active: Bool? = nil) {
            self.creditType = creditType
            self.credits = credits
            self.title = title
            self.description = description
            self.priceMinor = priceMinor
            self.displayOrder = displayOrder
            self.active = active
        }
    }

    public func products(_ runtime: TenantRuntime) async throws -> [CreditProduct] {
        _ = try CreditAccounts.settings(runtime)
        let tenantId = runtime.id
        return try await store.read { try $0.credits.products(tenantId: tenantId) }
    }

    /// A new credit product (409 `product_exists` if the id is taken).
    public func create(_ runtime: TenantRuntime, productId: String, fields: ProductFields, actor: Actor) async throws -> CreditProduct {
        let settings = try CreditAccounts.settings(runtime)
        let now = clock.now()
        guard let credits = fields.credits else { throw DomainError(.invalidInput, .missingField, "credits is required", field: "credits") }
        guard let title = fields.title else { throw DomainError(.invalidInput, .missingField, "title is required", field: "title") }
        let type = try CreditAccounts.creditType(fields.creditType, settings: settings)
        if let product = runtime.tenant.product(id: productId), product.kind != .credits {
            throw DomainError(.conflict, .productExists, "\(productId) is a \(product.kind.rawValue) product of this app", field: "productId")
        }
        let product = CreditProduct(tenantId: runtime.id, productId: productId, creditType: type, credits: credits, title: title,
                                    description: fields.description ?? nil, priceMinor: fields.priceMinor ?? nil, currency: runtime.tenant.currency,
                                    displayOrder: fields.displayOrder ?? 0, active: fields.active ?? true, createdAt: now, updatedAt: now)
        try product.validate(settings: settings)
        return try await store.write { tx in
            guard try tx.credits.product(tenantId: product.tenantId, productId: productId) == nil else {
                throw DomainError(.conflict, .productExists, "\(productId) already exists; edit it with PATCH", field: "productId")
            }
            try tx.credits.insert(product)
            try tx.audit.append(AuditRecord(tenantId: product.tenantId, actor: actor, action: .creditProductCreated, bookingId: nil, purchaseId: nil,
                                            detail: Self.detail(product), at: now))
            return product
        }
    }

    /// Edits a product; a change of credits applies to purchases verified from now on.
    public func update(_ runtime: TenantRuntime, productId: String, fields: ProductFields, actor: Actor) async throws -> CreditProduct {
        let settings = try CreditAccounts.settings(runtime)
        let tenantId = runtime.id, now = clock.now()
        if let type = fields.creditType { _ = try CreditAccounts.creditType(type, settings: settings) }
        return try await store.write { tx in
            guard var product = try tx.credits.product(tenantId: tenantId, productId: productId) else {
                throw DomainError(.notFound, .productNotFound, "no credit product \(productId) in this app", field: "productId")
            }
            let before = product
            if let v = fields.creditType { product.creditType = v }
            if let v = fields.credits { product.credits = v }
            if let v = fields.title { product.title = v }
            if let v = fields.description { product.description = v }
            if let v = fields.priceMinor { product.priceMinor = v }
            if let v = fields.displayOrder { product.displayOrder = v }
            if let v = fields.active { product.active = v }
            try product.validate(settings: settings)
            guard product != before else { return product }
            product.updatedAt = now
            try tx.credits.update(product)
            var detail = Self.detail(product)
            detail["before"] = Self.detail(before).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";")
            try tx.audit.append(AuditRecord(tenantId: tenantId, actor: actor, action: .creditProductUpdated, bookingId: nil, purchaseId: nil, detail: detail, at: now))
            return product
        }
    }

    static func detail(_ p: CreditProduct) -> [String: String] {
        var detail = ["productId": p.productId, "creditType": p.creditType, "credits": String(p.credits), "title": p.title, "displayOrder": String(p.displayOrder),
                      "active": String(p.active)]
        if let price = p.priceMinor { detail["priceMinor"] = String(price) }
        return detail
    }

    /// An operator's correction of a user's balance (positive or negative), with its reason.
    public func adjust(_ runtime: TenantRuntime, userId: String, creditType: String?, amount: Int64, reason: String,
                       actor: Actor) async throws -> (entry: LedgerEntry, credits: CreditSummary) {
        let settings = try CreditAccounts.settings(runtime)
        let type = try CreditAccounts.creditType(creditType, settings: settings)
        // A range check, not abs(): abs(Int64.min) traps.
        guard amount != 0, (-1_000_000...1_000_000).contains(amount) else {
            throw DomainError(.invalidInput, .invalidField, "amount must be a non-zero integer within ±1000000", field: "amount")
        }
        let tenantId = runtime.id, emits = runtime.webhook != nil, now = clock.now()
        return try await store.write { tx in
            let account = try tx.credits.account(tenantId: tenantId, userId: userId, creditType: type, now: now, forUpdate: true)
            let change = try CreditRules.adjust(account, amount: amount, actor: actor, reason: reason, negativeAllowed: settings.negativeAllowed, now: now)
            try tx.save(change, now: now)
            try tx.audit.append(AuditRecord(tenantId: tenantId, actor: actor, action: .creditsAdjusted, bookingId: nil, purchaseId: nil,
                                            detail: ["userId": userId, "creditType": type, "amount": String(amount), "reason": reason], at: now))
            if emits, let event = change.event(reason: .adjustment) { try tx.outbox.enqueue([event], tenantId: tenantId, now: now) }
            return (change.entries[0], change.account.summary)
        }
    }

    /// Proves the ledger and the balances agree: every account's balance is the sum of its entries,
    /// its debt the sum of their debt changes, its lots hold its balance, each lot's uses explain it.
    /// The accounts are read in batches of `batchSize`, each in its own read (no single query over a
    /// whole tenant); at most `problemLimit` problems are returned, `problemCount` tells how many there are.
    public func check(_ runtime: TenantRuntime, batchSize: Int = 500, problemLimit: Int = 100) async throws
        -> (accounts: Int, problemCount: Int, problems: [(LedgerTotals, [String])]) {
        let settings = try CreditAccounts.settings(runtime)
        let tenantId = runtime.id, size = max(1, batchSize)
        var accounts = 0, count = 0
        var problems: [(LedgerTotals, [String])] = []
        var after: (userId: String, creditType: String)?
        while true {
            let cursor = after
            let batch = try await store.read { try $0.credits.totals(tenantId: tenantId, after: cursor, limit: size) }
            accounts += batch.count
            for totals in batch {
                let found = totals.problems(negativeAllowed: settings.negativeAllowed)
                guard !found.isEmpty else { continue }
                count += 1
                if problems.count < problemLimit { problems.append((totals, found)) }
            }
            guard batch.count == size, let last = batch.last else { break }
            after = (last.userId, last.creditType)
            await Task.yield()
        }
        return (accounts, count, problems)
    }

    /// Sales per credit product over [from, to): every product of the tenant, with zeros where nothing sold.
    public func stats(_ runtime: TenantRuntime, from: Date?, to: Date?) async throws -> [CreditProductStats] {
        _ = try CreditAccounts.settings(runtime)
        let tenantId = runtime.id
        let (products, stats) = try await store.read { tx in
            (try tx.credits.products(tenantId: tenantId), try tx.credits.stats(tenantId: tenantId, from: from, to: to))
        }
        var result = products.map { p in
            stats.first { $0.productId == p.productId } ?? CreditProductStats(productId: p.productId, purchases: 0, creditsGranted: 0, refunds: 0, creditsRefunded: 0)
        }
        result += stats.filter { s in !products.contains { $0.productId == s.productId } }
        return result
    }
}

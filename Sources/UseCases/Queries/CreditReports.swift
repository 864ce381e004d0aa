import Domain
import Foundation

/// What operators read of a tenant's credits: the products, the ledger check, sales per product.
public struct CreditReports: Sendable {
    let store: any Store
    let clock: any BerthClock

    public init(store: any Store, clock: any BerthClock) {
        self.store = store
        self.clock = clock
    }

    public func products(_ runtime: TenantRuntime) async throws -> [CreditProduct] {
        _ = try CreditRequests.settings(runtime)
        let tenantId = runtime.id
        return try await store.read { try $0.credits.products(tenantId: tenantId) }
    }

    /// Proves the ledger and the balances agree: every account's balance is the sum of its entries,
    /// its debt the sum of their debt changes, its lots hold its balance, each lot's uses explain it.
    /// The accounts are read in batches of `batchSize`, each in its own read (no single query over a
    /// whole tenant); at most `problemLimit` problems are returned, `problemCount` tells how many there are.
    public func check(
        _ runtime: TenantRuntime,
        batchSize: Int = 500,
        problemLimit: Int = 100
    ) async throws
        -> (accounts: Int, problemCount: Int, problems: [(LedgerTotals, [String])])
    {
        let settings = try CreditRequests.settings(runtime)
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
        _ = try CreditRequests.settings(runtime)
        let tenantId = runtime.id
        let (products, stats) = try await store.read { tx in
            (try tx.credits.products(tenantId: tenantId), try tx.credits.stats(tenantId: tenantId, from: from, to: to))
        }
        var result = products.map { p in
            stats.first { $0.productId == p.productId }
                ?? CreditProductStats(productId: p.productId, purchases: 0, creditsGranted: 0, refunds: 0, creditsRefunded: 0)
        }
        result += stats.filter { s in !products.contains { $0.productId == s.productId } }
        return result
    }
}

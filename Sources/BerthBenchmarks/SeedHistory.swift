import Domain
import Foundation
import SQLStore

/// Writes `count` past purchases of the tenant straight into a migrated SQLite database, for the
/// "cost flat in history" measurement: benchmarks/run with HISTORY=N then runs every phase over a
/// database that already holds N purchases (each a credits purchase of its own user and transaction,
/// through the store's own repository, so every index a first-time purchase touches is that deep).
func seedHistory(databasePath: String, tenantId: String, count: Int) async throws {
    let store = try SQLiteStore.open(path: databasePath)
    let batch = 5_000
    let start = Date()
    let createdAt = start.addingTimeInterval(-86_400 * 365)
    var written = 0
    while written < count {
        let first = written
        let size = min(batch, count - written)
        try await store.write { tx in
            for n in first..<(first + size) {
                let transaction = "history-\(n)"
                let purchase = Purchase(
                    id: RecordID.next(),
                    tenantId: tenantId,
                    userId: "history-user-\(n % 50_000)",
                    target: .credits(type: "credits"),
                    store: .appStore,
                    environment: .sandbox,
                    transactionId: transaction,
                    originalTransactionId: transaction,
                    productId: "history.credits",
                    status: .applied,
                    outcomeCode: nil,
                    purchasedAt: createdAt.addingTimeInterval(Double(n)),
                    createdAt: createdAt.addingTimeInterval(Double(n)),
                    priceMilliunits: 990,
                    currency: "EUR",
                    quantity: 1,
                    credits: 10
                )
                try tx.purchases.insert(purchase, proofHash: "history-proof-\(n)")
            }
        }
        written += size
    }
    try store.close()
    print("seeded \(count) purchases in \(String(format: "%.1f", Date().timeIntervalSince(start))) s")
}

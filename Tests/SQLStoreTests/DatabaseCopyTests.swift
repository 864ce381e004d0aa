import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

@Suite(
    "moving a SQLite deployment to PostgreSQL",
    .enabled(if: TestPostgres.url != nil, "BERTH_TEST_POSTGRES_URL is not set: SKIPPED (run scripts/test)")
)
struct DatabaseCopyTests {
    @Test("copy-database carries bookings, purchases, replays and audit over; PostgreSQL then answers as SQLite did and refuses the same replays")
    func copy() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try SQLiteStore.open(path: directory.appendingPathComponent("berth.sqlite").path)
        defer { try? sqlite.close() }
        try await StoreConformance.StoreBackend.prepare(sqlite)
        let start = StoreConformance.now.addingTimeInterval(86_400)
        var bookings: [Booking] = []
        for index in 0..<3 {
            let booking = try await StoreConformance.admit(
                sqlite,
                user: "u\(index)",
                quote: StoreConformance.quote(StoreConformance.rental, start: start.addingTimeInterval(Double(index) * 86_400))
            )
            bookings.append(booking)
            _ = try await StoreConformance.claim(sqlite, booking: booking, user: "u\(index)", transactionId: "30000000000000\(index)")
        }
        let replay = try await StoreConformance.claim(sqlite, booking: bookings[1], user: "u1", transactionId: "300000000000000")
        guard case .replay = replay else {
            Issue.record("expected a replay, got \(replay)")
            return
        }
        let before = try await sqlite.read { tx in
            (
                try tx.purchases.purchases(tenantId: "a", page: Page()),
                try tx.bookings.bookings(tenantId: "a", filter: BookingFilter(), page: Page()),
                try tx.purchases.replays(tenantId: "a", page: Page()).total, try tx.audit.audit(tenantId: "a", page: Page()).total
            )
        }

        try await TestPostgres.withDatabase { postgres in
            try await Migrator(directory: StoreConformance.migrations).apply(to: postgres, now: StoreConformance.now)
            let counts = try await DatabaseCopy().copy(from: sqlite, to: postgres)
            #expect(counts.first { $0.table == "purchases" }?.rows == 3)
            let after = try await postgres.read { tx in
                (
                    try tx.purchases.purchases(tenantId: "a", page: Page()),
                    try tx.bookings.bookings(tenantId: "a", filter: BookingFilter(), page: Page()),
                    try tx.purchases.replays(tenantId: "a", page: Page()).total, try tx.audit.audit(tenantId: "a", page: Page()).total
                )
            }
            #expect(after.0.items == before.0.items && after.0.total == 3)
            #expect(after.1.items == before.1.items && after.1.items.allSatisfy { $0.status == .confirmed })
            #expect(after.2 == before.2 && after.3 == before.3)
            // The exactly-once index came along: the same transaction on another booking is a replay on PostgreSQL too.
            let again = try await StoreConformance.claim(postgres, booking: bookings[2], user: "u2", transactionId: "300000000000000")
            guard case .replay = again else {
                Issue.record("expected a replay on PostgreSQL, got \(again)")
                return
            }
            // A second copy into a database that holds data is refused.
            await #expect(throws: StoreError.self) { try await DatabaseCopy().copy(from: sqlite, to: postgres) }
        }
    }
}

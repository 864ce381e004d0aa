import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

@Suite("A closed store, on every backend")
struct ClosedStoreTests {
    @Test("refuses reads and writes with StoreClosed (not SQLite's misuse code 21, 'out of memory'); a second close does nothing")
    func refusesAfterClose() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-closed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore.open(path: directory.appendingPathComponent("db.sqlite").path)
        try await StoreBackend.prepare(store)
        #expect(try await store.read { try $0.outbox.pendingCount() } == 0)
        try store.close()
        await #expect(throws: StoreClosed.self) { _ = try await store.read { try $0.outbox.pendingCount() } }
        await #expect(throws: StoreClosed.self) { _ = try await store.write { try $0.outbox.pendingCount() } }
        try store.close()
    }

    @Test(
        "PostgreSQL: refuses reads, single-statement reads and writes with StoreClosed; a second close does nothing",
        .enabled(if: TestPostgres.url != nil || TestPostgres.required, "BERTH_TEST_POSTGRES_URL is not set: SKIPPED (run scripts/test)")
    )
    func postgresRefusesAfterClose() async throws {
        await OpenStoreBudget.shared.enter()
        defer { OpenStoreBudget.shared.leave() }
        try await TestPostgres.withDatabase { store in
            try await StoreBackend.prepare(store)
            #expect(try await store.read { try $0.outbox.pendingCount() } == 0)
            try store.close()
            await #expect(throws: StoreClosed.self) { _ = try await store.read { try $0.outbox.pendingCount() } }
            await #expect(throws: StoreClosed.self) { _ = try await store.readStatement { try $0.outbox.pendingCount() } }
            await #expect(throws: StoreClosed.self) { _ = try await store.write { try $0.outbox.pendingCount() } }
            try store.close()
        }
    }
}

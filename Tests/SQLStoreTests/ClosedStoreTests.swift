import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

@Suite("A closed SQLite store")
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
}

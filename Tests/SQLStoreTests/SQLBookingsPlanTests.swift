import Domain
import Foundation
import GRDB
import Testing

@testable import SQLStore

/// SQLite's plan of each statement of a booking's admission: read by the index that keeps its cost
/// independent of how many bookings wait on the slot, on a fresh database and on one whose slot holds
/// thousands of unpaid bookings after `ANALYZE` (the planner's statistics can change its mind). A plan
/// that reads `bookings_by_status` or `bookings_by_resource` instead reads every unpaid booking of the
/// window per admission: the benchmark's 100,000 pending bookings timed requests out that way.
@Suite("Booking admission reads by indexes that do not grow with the slot's bookings")
struct SQLBookingsPlanTests {
    func plans(_ db: Database) throws -> [String: String] {
        var plans: [String: String] = [:]
        for statement in SQLBookings.Admission.all {
            let placeholders = statement.sql.filter { $0 == "?" }.count
            let rows = try Row.fetchAll(
                db,
                sql: "EXPLAIN QUERY PLAN " + statement.sql,
                arguments: StatementArguments(Array(repeating: 1 as Int64, count: placeholders))
            )
            plans[statement.name] = rows.map { $0["detail"] as String? ?? "" }.joined(separator: " | ")
        }
        return plans
    }

    func check(_ plans: [String: String], _ when: String) {
        for statement in SQLBookings.Admission.all {
            let plan = plans[statement.name] ?? ""
            #expect(plan.contains("INDEX \(statement.index)"), "\(statement.name) \(when): \(plan)")
            #expect(
                !plan.contains("SCAN bookings") && !plan.contains("bookings_by_status") && !plan.contains("bookings_by_resource"),
                "\(statement.name) \(when): \(plan)"
            )
        }
    }

    @Test("each admission statement's plan, fresh and after ANALYZE of a slot with 5,000 unpaid bookings among 2,000 slots")
    func admissionPlans() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-plan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore.open(path: directory.appendingPathComponent("db.sqlite").path)
        defer { try? store.close() }
        try await Migrator(directory: MigratorTests.repositoryMigrations).apply(to: store, now: Date())
        check(try await store.withConnection { try plans($0) }, "on a fresh database")

        let start = Date().addingTimeInterval(86_400).epochMilliseconds
        let hold = Date().addingTimeInterval(3_600).epochMilliseconds
        try await store.withConnection { db in
            try db.inTransaction {
                try db.execute(sql: "INSERT INTO tenants (id, name, created_at) VALUES ('t', 'T', 0)")
                for id in 1...5_000 {
                    try MigratorTests.insertBooking(
                        db,
                        id: Int64(id),
                        user: "u\(id)",
                        resource: "fleet",
                        kind: "rental",
                        start: start,
                        end: start + 3_600_000,
                        status: "pending_payment",
                        hold: hold,
                        extra: [("occupying", 1), ("created_via", "user:u\(id)")]
                    )
                }
                try db.execute(
                    sql:
                        "INSERT INTO slot_occupancy (tenant_id, resource_id, starts_at, ends_at, bookings, seats, holds) VALUES ('t', 'fleet', ?, ?, 5000, 5000, 5000)",
                    arguments: [start, start + 3_600_000]
                )
                // Other slots of the resource and other resources, as a catalog in use has them.
                for index in 1...2_000 {
                    try db.execute(
                        sql:
                            "INSERT INTO slot_occupancy (tenant_id, resource_id, starts_at, ends_at, bookings, seats, holds) VALUES ('t', ?, ?, ?, 1, 1, 0)",
                        arguments: ["resource-\(index % 40)", start + Int64(index) * 3_600_000, start + Int64(index + 1) * 3_600_000]
                    )
                }
                try db.execute(sql: "ANALYZE")
                return .commit
            }
        }
        check(try await store.withConnection { try plans($0) }, "after ANALYZE of 5,000 unpaid bookings on one slot")
    }
}

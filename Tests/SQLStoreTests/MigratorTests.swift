import Domain
import Foundation
import GRDB
import StoreTesting
import Testing

@testable import SQLStore

@Suite("Migrations and persistence on a real SQLite file")
struct MigratorTests {
    /// A one-hour slot tomorrow, and hold deadlines an hour ahead and an hour ago (epoch ms).
    static func slotTimes() -> (hour: Int64, start: Int64, future: Int64, past: Int64) {
        (
            3_600_000, Date().addingTimeInterval(86_400).epochMilliseconds, Date().addingTimeInterval(3_600).epochMilliseconds,
            Date().addingTimeInterval(-3_600).epochMilliseconds
        )
    }

    static let repositoryMigrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("migrations")

    /// A booking row written by hand into the schema a migration test has reached: the columns every
    /// version has (price 100 EUR, product `p`, created and updated at 0), plus `extra` columns a
    /// later migration added (`occupying`, `created_via`, `confirmed_at`, …).
    static func insertBooking(
        _ db: Database,
        id: Int64,
        tenant: String = "t",
        user: String = "u",
        resource: String,
        kind: String,
        start: Int64,
        end: Int64,
        seats: Int = 1,
        status: String,
        hold: Int64,
        extra: [(column: String, value: (any DatabaseValueConvertible)?)] = []
    ) throws {
        let columns =
            ["id", "tenant_id", "user_id", "resource_id", "resource_kind", "starts_at", "ends_at", "seats", "price_minor", "currency"]
            + ["required_product_id", "status", "hold_expires_at", "created_at", "updated_at"] + extra.map(\.column)
        let values: [(any DatabaseValueConvertible)?] =
            [id, tenant, user, resource, kind, start, end, seats, 100, "EUR", "p", status, hold, 0, 0] + extra.map(\.value)
        try db.execute(
            sql: "INSERT INTO bookings (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))",
            arguments: StatementArguments(values)
        )
    }

    func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("berth-sql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A SQLite database in a scratch directory migrated with every migration before `prefix`, and the
    /// directory's migrations folder holding only those (``restore(_:into:)`` puts a later one back).
    func migrated(before prefix: String) async throws -> (directory: URL, migrations: URL, database: SQLiteStore) {
        let directory = try scratch()
        let migrations = directory.appendingPathComponent("migrations")
        try FileManager.default.copyItem(at: Self.repositoryMigrations, to: migrations)
        for name in try FileManager.default.contentsOfDirectory(atPath: migrations.path) where name >= prefix {
            try FileManager.default.removeItem(at: migrations.appendingPathComponent(name))
        }
        let database = try SQLiteStore.open(path: directory.appendingPathComponent("db.sqlite").path)
        try await Migrator(directory: migrations).apply(to: database, now: Date())
        return (directory, migrations, database)
    }

    func restore(_ name: String, into migrations: URL) throws {
        try FileManager.default.copyItem(at: Self.repositoryMigrations.appendingPathComponent(name), to: migrations.appendingPathComponent(name))
    }

    /// Puts every later migration back and applies them: the repositories read today's schema.
    func applyRest(into migrations: URL, _ database: SQLiteStore) async throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.repositoryMigrations.path)
        where name.hasSuffix(".sql")
            && !FileManager.default.fileExists(atPath: migrations.appendingPathComponent(name).path)
        {
            try restore(name, into: migrations)
        }
        try await Migrator(directory: migrations).apply(to: database, now: Date())
    }

    @Test("migrations apply once, are recorded with a checksum, and an edited file is refused")
    func checksumRefusal() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let migrations = directory.appendingPathComponent("migrations")
        try FileManager.default.copyItem(at: Self.repositoryMigrations, to: migrations)
        let path = directory.appendingPathComponent("db.sqlite").path

        let database = try SQLiteStore.open(path: path)
        #expect(
            try await Migrator(directory: migrations).apply(to: database, now: Date()) == [
                "001_initial", "002_receipt_checks", "003_apple_notifications", "004_webhooks", "005_unclaimed_transactions", "006_hardening",
                "007_core", "008_credits", "009_subscriptions", "010_key_roles", "011_webhook_dead_letters", "012_product_kinds", "013_part_payments",
                "014_unapplied_payments", "015_account_tokens", "016_card_payments", "017_google_play", "018_apple_lifecycle",
                "019_subscription_offers", "020_consumption_answers", "021_booking_references", "022_order_ids", "023_outbox_claim",
                "024_play_pending_claims", "025_slot_holds", "026_owed_resolutions", "027_refund_times", "028_inventory", "029_closures",
                "030_booking_changes",
            ]
        )
        #expect(try await Migrator(directory: migrations).apply(to: database, now: Date()).isEmpty)
        let journal = try await database.withConnection { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(journal == "wal")
        let foreignKeys = try await database.withConnection { db in try Int.fetchOne(db, sql: "PRAGMA foreign_keys") }
        #expect(foreignKeys == 1)
        let synchronous = try await database.withConnection { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(synchronous == 1, "synchronous=NORMAL")
        // The writer keeps its statement journal (the group commit's savepoints) in memory; readers keep the default.
        let writerTempStore = try await database.withConnection { db in try Int.fetchOne(db, sql: "PRAGMA temp_store") }
        #expect(writerTempStore == 2, "temp_store=MEMORY on the writer")
        let readerTempStore = try await database.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA temp_store") }
        #expect(readerTempStore == 0, "readers keep the default")

        let file = migrations.appendingPathComponent("001_initial.sql")
        try Data((try String(contentsOf: file, encoding: .utf8) + "\n-- an innocent edit\n").utf8).write(to: file)
        await #expect(throws: StoreError.self) { try await Migrator(directory: migrations).apply(to: database, now: Date()) }

        // A new numbered file is fine once the old one is restored.
        try FileManager.default.removeItem(at: file)
        try FileManager.default.copyItem(at: Self.repositoryMigrations.appendingPathComponent("001_initial.sql"), to: file)
        try Data("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL);\n".utf8).write(
            to: migrations.appendingPathComponent("099_notes.sql")
        )
        #expect(try await Migrator(directory: migrations).apply(to: database, now: Date()) == ["099_notes"])
        try database.close()
    }

    @Test("a migration missing from the directory is refused")
    func unknownAppliedMigration() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        let database = try SQLiteStore.open(path: path)
        try await Migrator(directory: Self.repositoryMigrations).apply(to: database, now: Date())
        try await database.withConnection { db in
            try db.execute(sql: "INSERT INTO schema_migrations (version, checksum, applied_at) VALUES ('999_future', 'x', 0)")
        }
        await #expect(throws: StoreError.self) { try await Migrator(directory: Self.repositoryMigrations).apply(to: database, now: Date()) }
        try database.close()
    }

    @Test("a purchase is unique per store, environment and transaction id, and survives a reopen")
    func uniqueIndexAndRestart() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        let database = try SQLiteStore.open(path: path)
        try await Migrator(directory: Self.repositoryMigrations).apply(to: database, now: Date())
        try await database.withConnection { db in try db.execute(sql: "INSERT INTO tenants (id, name, created_at) VALUES ('t', 'T', 0)") }
        let insert: @Sendable (Int64) -> @Sendable (Database) throws -> Void = { id in
            { db in
                try db.execute(
                    sql: """
                        INSERT INTO purchases (id, tenant_id, user_id, store, environment, transaction_id, original_transaction_id, product_id, status, proof_hash, purchased_at, created_at)
                        VALUES (?, 't', 'u', 'app_store', 'Sandbox', '2000000000000001', '2000000000000001', 'p', 'applied', 'h', 0, 0)
                        """,
                    arguments: [id]
                )
            }
        }
        try await database.withConnection(insert(1))
        await #expect(throws: (any Error).self) { try await database.withConnection(insert(2)) }
        try database.close()

        let reopened = try SQLiteStore.open(path: path)
        let count = try await reopened.withConnection { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM purchases") }
        #expect(count == 1)
        try reopened.close()
    }

    @Test("two processes' worth of migrators on one new file: each migration applies once")
    func concurrentMigrators() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        let stores = try (0..<4).map { _ in try SQLiteStore.open(path: path) }
        let applied = try await withThrowingTaskGroup(of: [String].self) { group in
            for store in stores { group.addTask { try await Migrator(directory: Self.repositoryMigrations).apply(to: store, now: Date()) } }
            var all: [String] = []
            for try await versions in group { all += versions }
            return all
        }
        #expect(applied.count == Set(applied).count, "a migration applied twice: \(applied)")
        #expect(Set(applied).count == (try Migrator(directory: Self.repositoryMigrations)).migrations.count)
        for store in stores { try store.close() }
    }

    @Test("migration 007 counts the slots that existing bookings hold, so an upgraded database admits no overbooking")
    func occupancyBackfill() async throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let migrations = directory.appendingPathComponent("migrations")
        try FileManager.default.copyItem(at: Self.repositoryMigrations, to: migrations)
        let core = try Data(contentsOf: migrations.appendingPathComponent("007_core.sql"))
        for name in try FileManager.default.contentsOfDirectory(atPath: migrations.path) where name >= "007" {
            try FileManager.default.removeItem(at: migrations.appendingPathComponent(name))
        }
        let database = try SQLiteStore.open(path: directory.appendingPathComponent("db.sqlite").path)
        defer { try? database.close() }
        try await Migrator(directory: migrations).apply(to: database, now: Date())
        let (hour, start, future, past) = Self.slotTimes()
        try await database.withConnection { db in
            try db.execute(sql: "INSERT INTO tenants (id, name, created_at) VALUES ('t', 'T', 0)")
            // confirmed, pending within its hold, pending expired, cancelled: only the first two hold the slot.
            for (id, status, hold, seats) in [
                (1, "confirmed", past, 2), (2, "pending_payment", future, 3), (3, "pending_payment", past, 4), (4, "cancelled", future, 5),
            ] {
                try Self.insertBooking(
                    db,
                    id: Int64(id),
                    resource: "tour",
                    kind: "experience",
                    start: start,
                    end: start + hour,
                    seats: seats,
                    status: status,
                    hold: hold
                )
            }
        }
        try core.write(to: migrations.appendingPathComponent("007_core.sql"))
        #expect(try await Migrator(directory: migrations).apply(to: database, now: Date()) == ["007_core"])
        let occupancy = try await database.write { tx in
            try tx.bookings.admit(
                tenantId: "t",
                resourceId: "tour",
                start: Date(epochMilliseconds: start),
                end: Date(epochMilliseconds: start + hour),
                excluding: nil,
                now: Date()
            )
        }
        #expect(occupancy == Occupancy(bookings: 2, seats: 5))
    }

    @Test("migration 025 counts each slot's unpaid holds from the bookings that occupy it: paid and released bookings are not holds")
    func slotHoldsBackfill() async throws {
        let (directory, migrations, database) = try await migrated(before: "025")
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? database.close()
        }
        let (hour, start, future, past) = Self.slotTimes()
        try await database.withConnection { db in
            try db.execute(sql: "INSERT INTO tenants (id, name, created_at) VALUES ('t', 'T', 0)")
            // confirmed, two pending within their hold, pending released: two holds, three occupying.
            for (id, status, hold, occupying) in [
                (1, "confirmed", past, 1), (2, "pending_payment", future, 1), (3, "pending_payment", future, 1), (4, "pending_payment", past, 0),
            ] {
                try Self.insertBooking(
                    db,
                    id: Int64(id),
                    resource: "tour",
                    kind: "experience",
                    start: start,
                    end: start + hour,
                    status: status,
                    hold: hold,
                    extra: [("occupying", occupying)]
                )
            }
            try db.execute(
                sql: "INSERT INTO slot_occupancy (tenant_id, resource_id, starts_at, ends_at, bookings, seats) VALUES ('t', 'tour', ?, ?, 3, 3)",
                arguments: [start, start + hour]
            )
        }
        try restore("025_slot_holds.sql", into: migrations)
        #expect(try await Migrator(directory: migrations).apply(to: database, now: Date()) == ["025_slot_holds"])
        try await applyRest(into: migrations, database)
        let holds = try await database.read { tx in
            try tx.bookings.activeHolds(
                tenantId: "t",
                resourceId: "tour",
                start: Date(epochMilliseconds: start),
                end: Date(epochMilliseconds: start + hour),
                now: Date(),
                upTo: 100
            )
        }
        #expect(holds == 2)
    }

    @Test("migration 012 moves today's purchases and replays to (kind, reference): bookings, credits and subscriptions read back as before")
    func targetsBackfill() async throws {
        let (directory, migrations, database) = try await migrated(before: "012")
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? database.close()
        }
        try await database.withConnection { db in
            try db.execute(sql: "INSERT INTO tenants (id, name, created_at) VALUES ('t', 'T', 0)")
            try Self.insertBooking(db, id: 7, resource: "boat", kind: "rental", start: 0, end: 1, status: "confirmed", hold: 0)
            // The three shapes purchases had before 012: a booking's, a credit pack's, a subscription period's.
            for (id, booking, creditType, credits, subscription) in [
                (1, 7 as Int64?, nil as String?, nil as Int64?, 0), (2, nil, "gen", 50, 0), (3, nil, nil, nil, 1),
            ] {
                try db.execute(
                    sql: """
                        INSERT INTO purchases (id, tenant_id, user_id, booking_id, store, environment, transaction_id, original_transaction_id, product_id, status,
                        proof_hash, purchased_at, created_at, credit_type, credits, subscription)
                        VALUES (?, 't', 'u', ?, 'app_store', 'Sandbox', ?, ?, 'p', 'applied', 'h', 0, 0, ?, ?, ?)
                        """,
                    arguments: [id, booking, "tx\(id)", "otx\(id)", creditType, credits, subscription]
                )
            }
            try db.execute(
                sql: """
                    INSERT INTO replay_attempts (id, tenant_id, user_id, booking_id, store, environment, transaction_id, existing_purchase_id, reason, proof_hash, at)
                    VALUES (1, 't', 'v', 7, 'app_store', 'Sandbox', 'tx1', 1, 'transaction already used by another user', 'h', 0)
                    """
            )
        }
        try restore("012_product_kinds.sql", into: migrations)
        #expect(try await Migrator(directory: migrations).apply(to: database, now: Date()) == ["012_product_kinds"])
        try await applyRest(into: migrations, database)
        let (purchases, replays) = try await database.read { tx in
            (
                try tx.purchases.purchases(tenantId: "t", filter: PurchaseFilter(), page: Page(limit: 10)).items,
                try tx.purchases.replays(tenantId: "t", page: Page(limit: 10)).items
            )
        }
        let targets = Dictionary(purchases.map { ($0.id, $0.target) }, uniquingKeysWith: { first, _ in first })
        #expect(targets[1] == .booking(id: 7))
        #expect(targets[2] == .credits(type: "gen"))
        #expect(targets[3] == .subscription(originalTransactionId: "otx3"))
        #expect(purchases.first { $0.id == 2 }?.credits == 50)
        #expect(replays.map(\.target) == [.booking(id: 7)])
    }

    @Test("migration 013: bookings paid before it count as fully paid; pending ones have paid nothing")
    func partPaymentsBackfill() async throws {
        let (directory, migrations, database) = try await migrated(before: "013")
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? database.close()
        }
        try await database.withConnection { db in
            try db.execute(sql: "INSERT INTO tenants (id, name, created_at) VALUES ('t', 'T', 0)")
            for (id, status, confirmed) in [(7, "confirmed", 5 as Int64?), (8, "pending_payment", nil)] {
                try Self.insertBooking(
                    db,
                    id: Int64(id),
                    resource: "boat",
                    kind: "experience",
                    start: 0,
                    end: 1,
                    seats: 3,
                    status: status,
                    hold: 0,
                    extra: [("confirmed_at", confirmed), ("required_quantity", 3)]
                )
            }
        }
        try restore("013_part_payments.sql", into: migrations)
        #expect(try await Migrator(directory: migrations).apply(to: database, now: Date()) == ["013_part_payments"])
        try await applyRest(into: migrations, database)
        let (paid, pending) = try await database.read { tx in
            (try tx.bookings.booking(id: 7, tenantId: "t", forUpdate: false), try tx.bookings.booking(id: 8, tenantId: "t", forUpdate: false))
        }
        #expect(paid?.paidQuantity == 3 && paid?.remainingQuantity == 0)
        #expect(pending?.paidQuantity == 0 && pending?.remainingQuantity == 3)
    }

    @Test("migration 021: every booking made before it gets its own reference (unique within the tenant) and no zone (UTC, as then)")
    func referencesBackfill() async throws {
        let (directory, migrations, database) = try await migrated(before: "021")
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? database.close()
        }
        try await database.withConnection { db in
            for tenant in ["t", "u"] { try db.execute(sql: "INSERT INTO tenants (id, name, created_at) VALUES (?, 'T', 0)", arguments: [tenant]) }
            for id in 1...300 {
                try Self.insertBooking(
                    db,
                    id: Int64(id),
                    tenant: id % 2 == 0 ? "t" : "u",
                    resource: "boat",
                    kind: "rental",
                    start: 0,
                    end: 1,
                    status: "confirmed",
                    hold: 0
                )
            }
        }
        try restore("021_booking_references.sql", into: migrations)
        #expect(try await Migrator(directory: migrations).apply(to: database, now: Date()) == ["021_booking_references"])
        // Read through today's repository, which needs the later columns too.
        try await applyRest(into: migrations, database)
        let bookings = try await database.read { tx in
            try (1...300).compactMap { id in try tx.bookings.booking(id: Int64(id), tenantId: id % 2 == 0 ? "t" : "u", forUpdate: false) }
        }
        #expect(bookings.count == 300)
        #expect(bookings.allSatisfy { BookingReference.normalized($0.reference) == $0.reference && $0.timeZone == nil && $0.zoneName == "UTC" })
        #expect(Set(bookings.map(\.reference)).count == 300)
        let found = try await database.read { tx in try tx.bookings.booking(reference: bookings[41].reference, tenantId: bookings[41].tenantId) }
        #expect(found?.id == bookings[41].id)
        let elsewhere = try await database.read { tx in
            try tx.bookings.booking(reference: bookings[41].reference, tenantId: bookings[41].tenantId == "t" ? "u" : "t")
        }
        #expect(elsewhere == nil, "a reference names a booking within its tenant only")
    }

    @Test("database URLs", arguments: [("sqlite:./b.sqlite", "./b.sqlite"), ("sqlite:///tmp/x.db", "/tmp/x.db"), ("plain.sqlite", "plain.sqlite")])
    func databaseURLs(url: String, path: String) throws {
        #expect(try SQLiteStore.path(fromURL: url) == path)
    }

    @Test("unsupported database URLs are refused")
    func unsupportedURL() {
        #expect(throws: StoreError.self) { try SQLiteStore.path(fromURL: "mysql://localhost/db") }
    }
}

@Suite("PostgreSQL settings")
struct PostgresSettingsTests {
    @Test("S12: TLS is required unless the URL says otherwise; the password never comes from the URL")
    func tlsByDefault() throws {
        #expect(try PostgresSettings(url: "postgres://berth@db.internal/berth", environment: [:]).tls == .require)
        #expect(try PostgresSettings(url: "postgres://berth@db.internal/berth?sslmode=prefer", environment: [:]).tls == .prefer)
        #expect(try PostgresSettings(url: "postgres://berth@127.0.0.1/berth?sslmode=disable", environment: [:]).tls == .disable)
        #expect(throws: (any Error).self) { try PostgresSettings(url: "postgres://berth:secret@db.internal/berth", environment: [:]) }
        #expect(try PostgresSettings(url: "postgres://berth@db.internal/berth", environment: [:]).redacted.contains("sslmode=require"))
    }
}

@Suite("Migrations compiled into the binary")
struct EmbeddedMigrationsTests {
    @Test("the embedded migrations are exactly the files of migrations/, byte for byte")
    func embeddedMatchDirectory() throws {
        let fromDirectory = try Migrator(directory: MigratorTests.repositoryMigrations).migrations
        let embedded = try Migrator().migrations
        #expect(embedded.map(\.version) == fromDirectory.map(\.version), "add the new file to EmbeddedMigrations.swift and Package.swift")
        #expect(embedded.map(\.checksum) == fromDirectory.map(\.checksum))
    }

    @Test("the embedded migrations build a database the directory's migrator finds complete")
    func embeddedApply() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("berth-sql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try SQLiteStore.open(path: directory.appendingPathComponent("db.sqlite").path)
        defer { try? database.close() }
        #expect(try await Migrator().apply(to: database, now: Date()).count == (try Migrator().migrations.count))
        #expect(try await Migrator(directory: MigratorTests.repositoryMigrations).apply(to: database, now: Date()).isEmpty)
    }
}

import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

/// The App Store lifecycle's tables on every backend: consumption consents (the latest answer per
/// user) and the notification-history marks (per tenant and environment, never moving back).
@Suite("AppleLifecycleConformance")
struct AppleLifecycleConformance {
    typealias Backend = StoreConformance.StoreBackend
    static let now = StoreConformance.now

    @Test("a consent is the user's latest answer, per tenant; none before the first", arguments: Backend.available)
    func consents(backend: Backend) async throws {
        try await backend.scope { store in
            #expect(try await store.read { try $0.consents.consent(tenantId: "a", userId: "ana") } == nil)
            let yes = ConsumptionConsent(tenantId: "a", userId: "ana", consented: true, textVersion: "v1", recordedAt: Self.now)
            try await store.write { try $0.consents.record(yes) }
            #expect(try await store.read { try $0.consents.consent(tenantId: "a", userId: "ana") } == yes)
            let no = ConsumptionConsent(
                tenantId: "a",
                userId: "ana",
                consented: false,
                textVersion: "v2",
                recordedAt: Self.now.addingTimeInterval(60)
            )
            try await store.write { try $0.consents.record(no) }
            #expect(try await store.read { try $0.consents.consent(tenantId: "a", userId: "ana") } == no)
            #expect(try await store.read { try $0.consents.consent(tenantId: "b", userId: "ana") } == nil, "another tenant's user is another user")
        }
    }

    @Test("a history mark is per tenant and environment and only moves forward", arguments: Backend.available)
    func historyMarks(backend: Backend) async throws {
        try await backend.scope { store in
            #expect(try await store.read { try $0.appleHistory.mark(tenantId: "a", environment: .sandbox) } == nil)
            let later = Self.now.addingTimeInterval(3600)
            try await store.write { try $0.appleHistory.setMark(tenantId: "a", environment: .sandbox, checkedUntil: later, at: later) }
            try await store.write { try $0.appleHistory.setMark(tenantId: "a", environment: .sandbox, checkedUntil: Self.now, at: later) }
            #expect(
                try await store.read { try $0.appleHistory.mark(tenantId: "a", environment: .sandbox) } == later,
                "an older reading does not move it back"
            )
            #expect(try await store.read { try $0.appleHistory.mark(tenantId: "a", environment: .production) } == nil)
            #expect(try await store.read { try $0.appleHistory.mark(tenantId: "b", environment: .sandbox) } == nil)
        }
    }

    @Test(
        "a consumption answer is owed once per request, leased to one owner at a time, retried when due, and ends when recorded",
        arguments: Backend.available
    )
    func consumptionAnswers(backend: Backend) async throws {
        try await backend.scope { store in
            let owed = ConsumptionAnswer(
                id: RecordID.next(),
                tenantId: "a",
                environment: .sandbox,
                transactionId: "t1",
                notificationUUID: "uuid-1",
                requestedAt: Self.now,
                nextAttemptAt: Self.now,
                createdAt: Self.now
            )
            let lease = Self.now.addingTimeInterval(120)
            #expect(try await store.write { try $0.consumptionAnswers.enqueue(owed, owner: "intake", leaseUntil: lease) })
            var retry = owed
            retry.id = RecordID.next()
            let again = retry
            #expect(
                try await store.write { try $0.consumptionAnswers.enqueue(again, owner: "intake", leaseUntil: lease) } == false,
                "Apple's retry of the request owes nothing more"
            )
            #expect(
                try await store.write { try $0.consumptionAnswers.claimDue(now: Self.now, limit: 10, owner: "w1", leaseUntil: lease) }.isEmpty,
                "the intake holds its lease while it tries"
            )
            // The intake's attempt failed: due again in a minute, for anyone.
            try await store.write {
                try $0.consumptionAnswers.record(
                    owed,
                    status: .pending,
                    error: "HTTP 500",
                    nextAttemptAt: Self.now.addingTimeInterval(60),
                    now: Self.now
                )
            }
            #expect(
                try await store.write {
                    try $0.consumptionAnswers.claimDue(now: Self.now.addingTimeInterval(30), limit: 10, owner: "w1", leaseUntil: lease)
                }.isEmpty
            )
            let later = Self.now.addingTimeInterval(61)
            let claimed = try await store.write {
                try $0.consumptionAnswers.claimDue(now: later, limit: 10, owner: "w1", leaseUntil: later.addingTimeInterval(120))
            }
            #expect(claimed.map(\.id) == [owed.id] && claimed.first?.attempts == 1 && claimed.first?.lastError == "HTTP 500")
            #expect(
                try await store.write {
                    try $0.consumptionAnswers.claimDue(now: later, limit: 10, owner: "w2", leaseUntil: later.addingTimeInterval(120))
                }.isEmpty,
                "one owner at a time"
            )
            try await store.write { try $0.consumptionAnswers.record(owed, status: .sent, error: nil, nextAttemptAt: later, now: later) }
            // A second record of a finished answer changes nothing.
            try await store.write { try $0.consumptionAnswers.record(owed, status: .expired, error: "late", nextAttemptAt: later, now: later) }
            let rows = try await store.read { try $0.consumptionAnswers.answers(tenantId: "a", transactionId: "t1") }
            #expect(
                rows.count == 1 && rows.first?.status == .sent && rows.first?.attempts == 2 && rows.first?.doneAt == later
                    && rows.first?.lastError == nil
            )
            #expect(try await store.read { try $0.consumptionAnswers.answers(tenantId: "b", transactionId: "t1") }.isEmpty)
            #expect(
                try await store.write {
                    try $0.consumptionAnswers.claimDue(now: later.addingTimeInterval(3600), limit: 10, owner: "w1", leaseUntil: later)
                }.isEmpty
            )
        }
    }
}

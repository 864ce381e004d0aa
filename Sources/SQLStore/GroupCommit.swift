import Foundation
import GRDB
import Synchronization

/// Runs a unit of work on its caller's thread when nobody is writing; under load, runs queued units
/// of work together: one `BEGIN IMMEDIATE … COMMIT` on the writer for every unit that queued while
/// the previous group (or inline unit) ran, each unit in its own savepoint, so that a unit that
/// throws is rolled back alone and never affects the others. Callers are answered only after the
/// group's COMMIT (a failed COMMIT fails every unit of the group); under load this saves a hop to
/// the writer queue and a WAL commit per unit.
final class GroupCommit: Sendable {
    /// One unit of work: runs in its savepoint and returns how to answer its caller once committed,
    /// or how to fail it if the group's commit fails.
    struct Job: Sendable {
        var run: @Sendable (Database) -> (@Sendable () -> Void)
        var fail: @Sendable (any Error) -> Void
    }

    private struct State {
        var jobs: [Job] = []
        var scheduled = false
    }

    private let pool: DatabasePool
    private let state = Mutex(State())
    /// Most units in one transaction (bounds the latency one group adds to its first unit).
    let maximumGroup: Int

    init(pool: DatabasePool, maximumGroup: Int = 64) {
        self.pool = pool
        self.maximumGroup = maximumGroup
    }

    /// Units of work waiting for the writer (queued behind the one that holds it).
    var queued: Int { state.withLock { $0.jobs.count } }

    func submit<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        // Nobody writing: run this unit at once on the calling thread, in its own transaction (no hop
        // to the writer's queue and back). Units that queue meanwhile are left to an asynchronous group.
        let alone = state.withLock { state in
            guard !state.scheduled, state.jobs.isEmpty else { return false }
            state.scheduled = true
            return true
        }
        if alone {
            defer { releaseOrDrain() }
            return try writeHere(body)
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job = Job(
                run: { db in
                    do {
                        var result: T?
                        try db.inSavepoint {
                            result = try body(db)
                            return .commit
                        }
                        guard let result else { return { continuation.resume(throwing: StoreError("the unit of work returned nothing")) } }
                        return { continuation.resume(returning: result) }
                    } catch {
                        return { continuation.resume(throwing: error) }
                    }
                },
                fail: { continuation.resume(throwing: $0) }
            )
            let schedule = state.withLock { state in
                state.jobs.append(job)
                guard !state.scheduled else { return false }
                state.scheduled = true
                return true
            }
            if schedule { drain() }
        }
    }

    /// One unit in its own transaction, on the calling thread (a synchronous function, so that
    /// GRDB's blocking overload is the one called).
    private func writeHere<T: Sendable>(_ body: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            var result: T?
            try db.inTransaction(.immediate) {
                result = try body(db)
                return .commit
            }
            guard let result else { throw StoreError("the unit of work returned nothing") }
            return result
        }
    }

    /// After a unit run on its caller's thread, or a group: the writer is given up when nothing
    /// queued meanwhile, else the queued units get the next group.
    private func releaseOrDrain() {
        let again = state.withLock { state in
            if state.jobs.isEmpty {
                state.scheduled = false
                return false
            }
            return true
        }
        if again { drain() }
    }

    private func drain() {
        pool.asyncWriteWithoutTransaction { [self] db in
            let group = state.withLock { state in
                let group = Array(state.jobs.prefix(maximumGroup))
                state.jobs.removeFirst(group.count)
                return group
            }
            var answers: [@Sendable () -> Void] = []
            do {
                try db.beginTransaction(.immediate)
                for job in group { answers.append(job.run(db)) }
                try db.commit()
                for answer in answers { answer() }
            } catch {
                // L16: a transaction left open at the end of this access is a trap in GRDB (a
                // precondition), so a ROLLBACK that fails is tried again (its statements are reset by
                // then); SQLite's own ROLLBACK of a WAL write transaction fails only on I/O errors.
                for _ in 0..<3 where db.isInsideTransaction { try? db.rollback() }
                for job in group { job.fail(error) }
            }
            releaseOrDrain()
        }
    }
}

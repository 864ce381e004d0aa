import AsyncHTTPClient
import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import Synchronization
import Testing

@testable import UseCases

/// The tenant's receiver as the delivery policy sees it (``WebhookSending``): records what it was
/// sent and answers with the statuses it is given, in turn (then 200). The HTTP client itself and
/// real receivers are HTTPAPITests' (WebhookTests, WebhookSecurityTests).
final class RecordingReceiver: WebhookSending {
    struct Sent: Sendable {
        var type: String
        var subject: String
        var headers: [String: String]
        var body: String
    }

    private let state: Mutex<(sent: [Sent], answers: [Int])>

    init(answers: [Int] = []) { state = Mutex((sent: [], answers: answers)) }

    var sent: [Sent] { state.withLock { $0.sent } }

    func send(_ body: String, headers: [(String, String)], to webhook: Tenant.Webhook) async -> WebhookAttempt {
        let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        let data = object["data"] as? [String: Any] ?? [:]
        let subject = (data["bookingId"]).map { "booking:\($0)" } ?? ""
        let sent = Sent(
            type: object["type"] as? String ?? "",
            subject: subject,
            headers: Dictionary(headers, uniquingKeysWith: { _, last in last }),
            body: body
        )
        let status = state.withLock { state in
            state.sent.append(sent)
            return state.answers.isEmpty ? 200 : state.answers.removeFirst()
        }
        return (200..<300).contains(status) ? WebhookAttempt(statusCode: status) : WebhookAttempt(statusCode: status, failure: "http_status")
    }
}

@Suite("Webhooks through the delivery policy, on every backend")
struct WebhookUseCasesTests {
    static let secret = "webhook-secret-0123456789abcdef-0123456789"

    static func runtime() async throws -> TenantRuntime {
        var tenant = try SeasonFixture.tenant(units: 4)
        tenant.webhook = Tenant.Webhook(url: "https://hooks.example/berth", secretEnv: "HOOK_SECRET")
        return try await TenantRuntime(
            tenant: tenant,
            baseDirectory: FileManager.default.temporaryDirectory,
            environment: ["HOOK_SECRET": secret],
            clock: ManualClock(SeasonFixture.now),
            httpClient: .shared,
            logger: Logger(label: "use-cases-test")
        )
    }

    static func deliverer(_ store: any Store, _ runtime: TenantRuntime, _ receiver: RecordingReceiver, _ clock: ManualClock) -> DeliverWebhooks {
        DeliverWebhooks(
            store: store,
            tenants: TenantRegistry([runtime]),
            sender: receiver,
            clock: clock,
            logger: Logger(label: "use-cases-test"),
            owner: "test"
        )
    }

    /// Ana's booking, confirmed then cancelled by an operator: two events of one subject, in that order.
    static func confirmThenCancel(_ store: any Store, _ runtime: TenantRuntime, _ clock: ManualClock, dayOffset: Int) async throws {
        let booking = try await CreateBooking(store: store, clock: clock)(
            .init(runtime: runtime, userId: "ana", createdVia: .user("ana"), request: SeasonFixture.rental(dayOffset: dayOffset))
        )
        let transition = AdminBookingTransition(store: store, clock: clock)
        _ = try await transition(booking.id, to: .confirmed, runtime: runtime, actor: .admin(keyId: 1), reason: nil)
        _ = try await transition(booking.id, to: .cancelled, runtime: runtime, actor: .admin(keyId: 1), reason: "storm")
    }

    @Test(
        "an operator's confirm and cancel reach the receiver in that order, each signed with the tenant's secret",
        arguments: StoreBackend.available
    )
    func orderedAndSigned(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime()
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            try await Self.confirmThenCancel(store, runtime, clock, dayOffset: 2)
            let receiver = RecordingReceiver()
            _ = try await Self.deliverer(store, runtime, receiver, clock).deliverDue(tenantId: "a")
            let types = receiver.sent.map(\.type).filter { $0 == "booking.confirmed" || $0 == "booking.cancelled" }
            #expect(types == ["booking.confirmed", "booking.cancelled"], "\(receiver.sent.map(\.type))")
            // Berth-Signature: t=<seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">, t from the deliverer's clock.
            for sent in receiver.sent {
                let header = try #require(sent.headers["Berth-Signature"])
                var fields: [String: String] = [:]
                for part in header.split(separator: ",") {
                    let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
                    if pair.count == 2 { fields[pair[0]] = pair[1] }
                }
                #expect(fields["t"] == String(Int64(clock.now().timeIntervalSince1970)))
                #expect(fields["v1"] == DeliverWebhooks.signature(secret: Self.secret, timestamp: fields["t"] ?? "", body: sent.body))
                #expect(fields["v1"] != DeliverWebhooks.signature(secret: "another secret", timestamp: fields["t"] ?? "", body: sent.body))
                #expect(sent.headers["Berth-Event"] == sent.type)
            }
            let again = try await Self.deliverer(store, runtime, receiver, clock).deliverDue(tenantId: "a")
            #expect(again == 0, "a delivered message is not sent again")
        }
    }

    @Test(
        "a receiver that fails: the subject's later event waits behind the retry; after the retry both arrive in order",
        arguments: StoreBackend.available
    )
    func retryKeepsOrder(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime()
        try await backend.run { store in
            let clock = ManualClock(SeasonFixture.now)
            try await Self.confirmThenCancel(store, runtime, clock, dayOffset: 4)
            let receiver = RecordingReceiver(answers: [500])
            let deliver = Self.deliverer(store, runtime, receiver, clock)
            _ = try await deliver.deliverDue(tenantId: "a")
            #expect(receiver.sent.count == 1, "after the first failure the rest of the subject waits: \(receiver.sent.map(\.type))")
            _ = try await deliver.deliverDue(tenantId: "a")
            #expect(receiver.sent.count == 1, "nothing is due before the retry's time")
            clock.advance(3600)
            _ = try await deliver.deliverDue(tenantId: "a")
            let types = receiver.sent.map(\.type)
            #expect(types.count >= 3 && types[0] == types[1], "the failed event is sent again first: \(types)")
            let firstConfirmed = types.firstIndex(of: "booking.confirmed")
            let firstCancelled = types.firstIndex(of: "booking.cancelled")
            #expect((firstConfirmed ?? .max) < (firstCancelled ?? .min), "\(types)")
            let deliveries = try await store.read { try $0.outbox.deliveries(tenantId: "a", page: Page()) }
            #expect(deliveries.total >= 3, "every attempt is recorded")
        }
    }

    @Test("runs: each subject's messages in their order, a message without a subject alone")
    func runs() {
        func message(_ id: Int64, _ subject: String?) -> OutboxMessage {
            OutboxMessage(id: id, tenantId: "a", eventType: "e", payload: "{}", attempts: 0, subject: subject, sequence: id)
        }
        let runs = DeliverWebhooks.runs(of: [message(1, "b:1"), message(2, "b:2"), message(3, "b:1"), message(4, nil), message(5, "b:2")])
        #expect(runs.map { $0.map(\.id) } == [[1, 3], [2, 5], [4]])
    }

    @Test(
        "attempts that end while a batch is written are recorded together in the next unit of work, and each caller resumes once its record is committed",
        arguments: StoreBackend.available
    )
    func attemptsRecordedInBatches(backend: StoreBackend) async throws {
        let runtime = try await Self.runtime()
        try await backend.run { inner in
            let clock = ManualClock(SeasonFixture.now)
            for day in 0..<6 { try await Self.confirmThenCancel(inner, runtime, clock, dayOffset: 10 + 2 * day) }
            let messages = try await Self.deliverer(inner, runtime, RecordingReceiver(), clock).claim(tenantId: "a", limit: 100)
            #expect(messages.count >= 6, "one message per subject is due: \(messages.count)")
            let store = FirstWriteHeld(inner)
            let recorder = AttemptRecorder(store: store)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for message in messages {
                    group.addTask {
                        try await recorder.record(.init(message: message, statusCode: 200, delivered: true, now: clock.now()))
                    }
                }
                // The first batch's write is held (its attempts are fixed once it began); every other
                // attempt queues behind it (counted, not timed).
                await store.firstWriteStarted()
                let first = recorder.counts.inBatch
                while recorder.counts.waiting < messages.count - first { await Task.yield() }
                store.release()
                try await group.waitForAll()
                #expect(
                    store.writes == (first == messages.count ? 1 : 2),
                    "\(first) attempts, then the other \(messages.count - first) in one unit of work"
                )
            }
            #expect(store.writes < messages.count, "\(messages.count) attempts in \(store.writes) writes")
            let deliveries = try await inner.read { try $0.outbox.deliveries(tenantId: "a", page: Page()) }
            #expect(deliveries.total == messages.count, "every attempt is recorded once")
            let again = try await Self.deliverer(inner, runtime, RecordingReceiver(), clock).claim(tenantId: "a", limit: 100)
            #expect(Set(again.map(\.id)).isDisjoint(with: messages.map(\.id)), "a recorded delivery is not claimed again")
        }
    }
}

/// A store whose first write waits until ``release()``; it counts writes.
final class FirstWriteHeld: Store {
    private let inner: any Store
    private let state = Mutex<
        (writes: Int, started: CheckedContinuation<Void, Never>?, hasStarted: Bool, gate: CheckedContinuation<Void, Never>?, released: Bool)
    >(
        (0, nil, false, nil, false)
    )

    init(_ inner: any Store) { self.inner = inner }

    var writes: Int { state.withLock { $0.writes } }

    /// Returns once the first write has begun (and waits at the gate).
    func firstWriteStarted() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.hasStarted { return true }
                state.started = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets the first write go on.
    func release() {
        let gate = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.released = true
            defer { state.gate = nil }
            return state.gate
        }
        gate?.resume()
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        let first = state.withLock { state -> Bool in
            state.writes += 1
            return state.writes == 1
        }
        if first {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (started, released) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
                    state.hasStarted = true
                    if !state.released { state.gate = continuation }
                    defer { state.started = nil }
                    return (state.started, state.released)
                }
                started?.resume()
                if released { continuation.resume() }
            }
        }
        return try await inner.write(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T { try await inner.read(body) }

    func engineGauges() -> [(name: String, value: Double)] { inner.engineGauges() }
}

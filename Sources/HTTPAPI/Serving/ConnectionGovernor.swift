import Foundation
import NIOCore
import NIOHTTPTypes
import Synchronization

/// How many connections Berth holds and how long a request's head may take (T2: idle connections
/// that trickle a partial request line must not take the service off the air).
public struct ConnectionLimits: Sendable, Equatable {
    /// Connections open at once, over all clients.
    public var maximum: Int
    /// Connections open at once from one client address.
    public var perAddress: Int
    /// From a request's first byte until its head has arrived whole. Separate from the idle
    /// timeout (60 s), which covers a silent connection, a request's body and the answer.
    public var headTimeout: TimeAmount

    public static let defaultMaximum = 4096
    public static let defaultPerAddress = 512
    public static let defaultHeadSeconds: Int64 = 10
    /// Descriptors kept for everything that is not a client connection: the database (SQLite's
    /// readers, WAL and shared memory, or PostgreSQL's pool), webhook and store clients, the
    /// event loops, the listening socket, logs, and the backtracer should anything trap.
    public static let descriptorReserve = 96

    public init(
        maximum: Int = ConnectionLimits.defaultMaximum,
        perAddress: Int = ConnectionLimits.defaultPerAddress,
        headTimeout: TimeAmount = .seconds(ConnectionLimits.defaultHeadSeconds)
    ) {
        self.maximum = max(1, maximum)
        self.perAddress = max(1, perAddress)
        self.headTimeout = headTimeout
    }

    /// The limits for a process allowed `descriptors` open files, from `environment`
    /// (`BERTH_MAX_CONNECTIONS`, `BERTH_MAX_CONNECTIONS_PER_ADDRESS`, `BERTH_HEAD_TIMEOUT_SECONDS`).
    /// The overall cap never exceeds the descriptors less ``descriptorReserve`` (at least 16 connections).
    public static func from(environment: [String: String], descriptors: Int) throws -> ConnectionLimits {
        func positive(_ name: String) throws -> Int? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let value = Int(text), value > 0, value <= 1_000_000 else {
                throw ConnectionLimitsError(description: "\(name) is '\(text)'; give a whole number from 1 to 1000000")
            }
            return value
        }
        let ceiling = max(16, descriptors - descriptorReserve)
        let maximum = min(try positive("BERTH_MAX_CONNECTIONS") ?? defaultMaximum, ceiling)
        let perAddress = min(try positive("BERTH_MAX_CONNECTIONS_PER_ADDRESS") ?? defaultPerAddress, maximum)
        let head = try positive("BERTH_HEAD_TIMEOUT_SECONDS").map { Int64($0) } ?? defaultHeadSeconds
        return ConnectionLimits(maximum: maximum, perAddress: perAddress, headTimeout: .seconds(min(head, 3600)))
    }
}

/// A limit that cannot be used, and why.
public struct ConnectionLimitsError: Error, CustomStringConvertible {
    public var description: String
}

/// Counts the server's connections and decides, as each one opens, whether it is admitted. At a cap,
/// the connection that has waited longest for a request head (an idle keep-alive connection, or one
/// trickling a partial request line) is closed to make room; a new connection is refused only when
/// every connection it competes with is in the middle of a request.
public final class ConnectionGovernor: Sendable {
    public let limits: ConnectionLimits
    let metrics: BerthMetrics?

    private struct Entry {
        var channel: any Channel
        var address: String
        /// When it began waiting for a request head, written by its connection without the lock.
        var waiting: WaitingSince
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var perAddress: [String: Int] = [:]
        var nextId: UInt64 = 1
    }

    private let state = Mutex(State())

    public init(limits: ConnectionLimits, metrics: BerthMetrics?) {
        self.limits = limits
        self.metrics = metrics
    }

    /// Connections open now.
    public var open: Int { state.withLock { $0.entries.count } }

    enum Admission {
        case admitted(id: UInt64, shed: [any Channel])
        case refused
    }

    /// Admits `channel` from `address` (waiting for its first head), shedding what must go to make room.
    /// `waiting` is the connection's own record of whether it waits for a request head, and since when.
    func admit(_ channel: any Channel, address: String, waiting: WaitingSince) -> Admission {
        waiting.startWaiting()
        let limits = self.limits
        let (admission, open) = state.withLock { state -> (Admission, Int) in
            var shed: [any Channel] = []
            if state.perAddress[address, default: 0] >= limits.perAddress {
                guard let oldest = Self.oldestWaiting(state, address: address) else { return (.refused, state.entries.count) }
                if let channel = Self.remove(&state, oldest) { shed.append(channel) }
            }
            if state.entries.count >= limits.maximum {
                guard let oldest = Self.oldestWaiting(state, address: nil) else { return (.refused, state.entries.count) }
                if let channel = Self.remove(&state, oldest) { shed.append(channel) }
            }
            let id = state.nextId
            state.nextId &+= 1
            state.entries[id] = Entry(channel: channel, address: address, waiting: waiting)
            state.perAddress[address, default: 0] += 1
            return (.admitted(id: id, shed: shed), state.entries.count)
        }
        switch admission {
        case .refused:
            metrics?.count("berth_connections_refused_total")
        case .admitted(_, let shed):
            if !shed.isEmpty { metrics?.count("berth_connections_shed_total", [("reason", "capacity")], by: Int64(shed.count)) }
        }
        metrics?.gauge("berth_connections_open", [], Double(open))
        return admission
    }

    /// The connection closed (whoever closed it).
    func closed(_ id: UInt64) {
        let open = state.withLock { state -> Int? in
            guard Self.remove(&state, id) != nil else { return nil }
            return state.entries.count
        }
        if let open { metrics?.gauge("berth_connections_open", [], Double(open)) }
    }

    /// A connection closed because its request head did not arrive in time.
    func headTimedOut() {
        metrics?.count("berth_connections_shed_total", [("reason", "head_timeout")])
    }

    private static func oldestWaiting(_ state: State, address: String?) -> UInt64? {
        var best: (id: UInt64, since: UInt64)?
        for (id, entry) in state.entries {
            guard address == nil || entry.address == address, let since = entry.waiting.since else { continue }
            if let current = best, current.since < since || (current.since == since && current.id < id) { continue }
            best = (id, since)
        }
        return best?.id
    }

    @discardableResult
    private static func remove(_ state: inout State, _ id: UInt64) -> (any Channel)? {
        guard let entry = state.entries.removeValue(forKey: id) else { return nil }
        let left = (state.perAddress[entry.address] ?? 1) - 1
        state.perAddress[entry.address] = left > 0 ? left : nil
        return entry.channel
    }

    /// The handler each connection's pipeline gets (after HTTP decoding, before Hummingbird's).
    public func handler() -> any RemovableChannelHandler {
        ConnectionGuard(governor: self)
    }
}

/// Whether one connection waits for a request head, and since when: written by the connection on its
/// event loop at each request's start and end (an atomic store: the governor's lock and map are not
/// touched per request), read by the governor under its lock when it must pick a connection to shed.
final class WaitingSince: Sendable {
    /// Uptime in nanoseconds when it began waiting; 0 while it serves a request.
    private let nanoseconds = Atomic<UInt64>(0)

    init() {}

    var since: UInt64? {
        let value = nanoseconds.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }

    func startWaiting() {
        nanoseconds.store(max(1, DispatchTime.now().uptimeNanoseconds), ordering: .relaxed)
    }

    func startServing() {
        nanoseconds.store(0, ordering: .relaxed)
    }
}

/// Sees the connection's bytes before the HTTP decoder: the first bytes of a request start its
/// head's deadline (``ConnectionGuard``). Idle time before them is the idle timeout's.
final class FirstBytes: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    /// The guard of the same connection (same event loop); weak: the pipeline owns both.
    weak var owner: ConnectionGuard?

    init(owner: ConnectionGuard) { self.owner = owner }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if unwrapInboundIn(data).readableBytes > 0 { owner?.bytesArrived() }
        context.fireChannelRead(data)
    }
}

/// One connection's view of the governor: admitted when it becomes active, serving from a request
/// head until its answer's end, waiting otherwise. While it waits, the first bytes of the next
/// request start the head deadline: a head that does not arrive whole in time closes the
/// connection. (A connection that sends nothing is the idle timeout's, and is shed first at a cap.)
///
/// The deadline costs a clock read per request, not a timer: one timer per connection is armed when a
/// head starts and none is pending; when it fires it closes the connection if the head it finds
/// started a whole timeout ago and has not arrived, re-arms itself for the head that started later,
/// and lapses while a request is served (the next head's bytes arm it again). Scheduling and
/// cancelling a timer for every request cost about 3.5 % of a `GET /healthz`'s CPU (perf).
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let governor: ConnectionGovernor
    private let waiting = WaitingSince()
    private var id: UInt64?
    /// Requests whose head arrived and whose answer has not ended (HTTP/1.1 pipelining).
    private var inFlight = 0
    /// When the head being waited for sent its first bytes; nil when none has (or one is served).
    private var headStartedAt: NIODeadline?
    /// The connection's one head timer, while it is armed.
    private var timer: Scheduled<Void>?
    /// This handler's context while it is in the pipeline (used on its event loop only).
    private var context: ChannelHandlerContext?

    init(governor: ConnectionGovernor) {
        self.governor = governor
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // Before the HTTP decoder: raw bytes tell when a request begins.
        try? context.pipeline.syncOperations.addHandler(FirstBytes(owner: self), position: .first)
        if context.channel.isActive { admit(context) }
    }

    /// Bytes arrived: while waiting for a request, its head's deadline starts now.
    func bytesArrived() {
        guard id != nil, inFlight == 0, headStartedAt == nil, let context else { return }
        let now = NIODeadline.now()
        headStartedAt = now
        if timer == nil { arm(context, at: now + governor.limits.headTimeout) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            inFlight += 1
            if inFlight == 1, id != nil {
                waiting.startServing()
                headStartedAt = nil
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), inFlight > 0 {
            inFlight -= 1
            if inFlight == 0, id != nil {
                waiting.startWaiting()
                headStartedAt = nil
            }
        }
        context.write(data, promise: promise)
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard id == nil else { return }
        let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        switch governor.admit(context.channel, address: address, waiting: waiting) {
        case .refused:
            context.close(promise: nil)
        case .admitted(let admitted, let shed):
            id = admitted
            headStartedAt = nil
            for channel in shed { channel.close(promise: nil) }
        }
    }

    private func arm(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) { bound.value.timerFired() }
    }

    /// The head timer fired (on the connection's event loop).
    private func timerFired() {
        timer = nil
        guard id != nil, inFlight == 0, let started = headStartedAt, let context else { return }
        let due = started + governor.limits.headTimeout
        if due <= NIODeadline.now() {
            governor.headTimedOut()
            context.channel.close(promise: nil)
        } else {
            arm(context, at: due)
        }
    }

    private func release() {
        timer?.cancel()
        timer = nil
        headStartedAt = nil
        if let id {
            governor.closed(id)
            self.id = nil
        }
    }
}

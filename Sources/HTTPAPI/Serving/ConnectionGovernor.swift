import CHeapStats
import Foundation
import NIOCore
import NIOHTTPTypes
import Synchronization

/// How many connections Berth holds, and how long a request and its answer may take (T2, V1, V2 of the
/// security reviews: connections that trickle a request line, a head or a body, or that never read
/// their answers, must not take the service off the air or pin its memory).
public struct ConnectionLimits: Sendable, Equatable {
    /// Connections open at once, over all clients.
    public var maximum: Int
    /// Connections open at once from one client address.
    public var perAddress: Int
    /// From a request's first byte until its head has arrived whole. Separate from the idle
    /// timeout (60 s), which covers a silent connection between requests.
    public var headTimeout: TimeAmount
    /// From a request's head until its body has arrived whole (a body limit of 64 KiB, so at least
    /// 64 KiB in this time). A body still arriving then closes the connection.
    public var bodyTimeout: TimeAmount
    /// Request bodies being received at once from one client address. A request whose body does not
    /// arrive with its head counts from then until its last byte; one more from the same address
    /// closes that connection. Whole requests (a head and its body in one read) never count.
    public var bodiesPerAddress: Int
    /// How long a connection's unsent answers may stay above the output buffer's high-water mark
    /// (64 KiB) before the connection is closed: a client that does not read its answers.
    public var sendTimeout: TimeAmount

    public static let defaultMaximum = 4096
    public static let defaultPerAddress = 512
    public static let defaultHeadSeconds: Int64 = 10
    public static let defaultBodySeconds: Int64 = 15
    public static let defaultBodiesPerAddress = 32
    public static let defaultSendSeconds: Int64 = 10
    /// Requests of one connection read ahead of their answers (HTTP/1.1 pipelining): the connection
    /// reads no more from its socket while this many are unanswered or its unsent answers are over
    /// the high-water mark.
    public static let pipelineDepth = 2
    /// Descriptors kept for everything that is not a client connection: the database (SQLite's
    /// readers, WAL and shared memory, or PostgreSQL's pool), webhook and store clients, the
    /// event loops, the listening socket, logs, and the backtracer should anything trap.
    public static let descriptorReserve = 96

    public init(
        maximum: Int = ConnectionLimits.defaultMaximum,
        perAddress: Int = ConnectionLimits.defaultPerAddress,
        headTimeout: TimeAmount = .seconds(ConnectionLimits.defaultHeadSeconds),
        bodyTimeout: TimeAmount = .seconds(ConnectionLimits.defaultBodySeconds),
        bodiesPerAddress: Int = ConnectionLimits.defaultBodiesPerAddress,
        sendTimeout: TimeAmount = .seconds(ConnectionLimits.defaultSendSeconds)
    ) {
        self.maximum = max(1, maximum)
        self.perAddress = max(1, perAddress)
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
        self.bodiesPerAddress = max(1, bodiesPerAddress)
        self.sendTimeout = sendTimeout
    }

    /// The limits for a process allowed `descriptors` open files, from `environment`
    /// (`BERTH_MAX_CONNECTIONS`, `BERTH_MAX_CONNECTIONS_PER_ADDRESS`, `BERTH_HEAD_TIMEOUT_SECONDS`,
    /// `BERTH_BODY_TIMEOUT_SECONDS`, `BERTH_MAX_BODIES_PER_ADDRESS`, `BERTH_SEND_TIMEOUT_SECONDS`).
    /// The overall cap never exceeds the descriptors less ``descriptorReserve`` (at least 16 connections).
    public static func from(environment: [String: String], descriptors: Int) throws -> ConnectionLimits {
        func positive(_ name: String) throws -> Int? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let value = Int(text), value > 0, value <= 1_000_000 else {
                throw ConnectionLimitsError(description: "\(name) is '\(text)'; give a whole number from 1 to 1000000")
            }
            return value
        }
        func seconds(_ name: String, _ fallback: Int64) throws -> TimeAmount {
            .seconds(min(try positive(name).map { Int64($0) } ?? fallback, 3600))
        }
        let ceiling = max(16, descriptors - descriptorReserve)
        let maximum = min(try positive("BERTH_MAX_CONNECTIONS") ?? defaultMaximum, ceiling)
        let perAddress = min(try positive("BERTH_MAX_CONNECTIONS_PER_ADDRESS") ?? defaultPerAddress, maximum)
        return ConnectionLimits(
            maximum: maximum,
            perAddress: perAddress,
            headTimeout: try seconds("BERTH_HEAD_TIMEOUT_SECONDS", defaultHeadSeconds),
            bodyTimeout: try seconds("BERTH_BODY_TIMEOUT_SECONDS", defaultBodySeconds),
            bodiesPerAddress: min(try positive("BERTH_MAX_BODIES_PER_ADDRESS") ?? defaultBodiesPerAddress, perAddress),
            sendTimeout: try seconds("BERTH_SEND_TIMEOUT_SECONDS", defaultSendSeconds)
        )
    }

    /// One line for the start log.
    public var summary: String {
        "connections: at most \(maximum), \(perAddress) per client address; a request's head within \(Self.wholeSeconds(headTimeout)) s, "
            + "its body within \(Self.wholeSeconds(bodyTimeout)) s, \(bodiesPerAddress) bodies arriving per address; "
            + "unread answers closed after \(Self.wholeSeconds(sendTimeout)) s"
    }

    static func wholeSeconds(_ amount: TimeAmount) -> Int64 { amount.nanoseconds / 1_000_000_000 }
}

/// A limit that cannot be used, and why.
public struct ConnectionLimitsError: Error, CustomStringConvertible {
    public var description: String
}

/// Counts the server's connections and decides, as each one opens, whether it is admitted. At a cap,
/// the connection that has waited longest for a request head (an idle keep-alive connection, or one
/// trickling a partial request line) is closed to make room; failing that, the one receiving its
/// request body most slowly (bytes per second since its head, once it has had a second); a new
/// connection is refused only when every connection it competes with is being answered. Request
/// bodies arriving at once from one address are capped too (``ConnectionLimits/bodiesPerAddress``).
public final class ConnectionGovernor: Sendable {
    public let limits: ConnectionLimits
    let metrics: BerthMetrics?

    private struct Entry {
        var channel: any Channel
        var address: String
        /// The connection's own record of what it is doing, written by it without the lock.
        var record: ConnectionRecord
        /// Whether it counts in `bodies` for its address now.
        var receivingBody = false
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var perAddress: [String: Int] = [:]
        var bodies: [String: Int] = [:]
        var nextId: UInt64 = 1
        /// Most connections open at once since memory was last given back.
        var peak = 0
    }

    private let state = Mutex(State())

    /// A body has this long to show its rate before it may be shed for being slow.
    static let bodyGraceNanoseconds: UInt64 = 1_000_000_000

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
    /// `record` is the connection's own record of whether it waits for a request head or receives a body.
    func admit(_ channel: any Channel, address: String, record: ConnectionRecord) -> Admission {
        record.startWaiting()
        let limits = self.limits
        let now = DispatchTime.now().uptimeNanoseconds
        let (admission, open) = state.withLock { state -> (Admission, Int) in
            var shed: [any Channel] = []
            if state.perAddress[address, default: 0] >= limits.perAddress {
                guard let victim = Self.victim(state, address: address, now: now) else { return (.refused, state.entries.count) }
                if let channel = Self.remove(&state, victim) { shed.append(channel) }
            }
            if state.entries.count >= limits.maximum {
                guard let victim = Self.victim(state, address: nil, now: now) else { return (.refused, state.entries.count) }
                if let channel = Self.remove(&state, victim) { shed.append(channel) }
            }
            let id = state.nextId
            state.nextId &+= 1
            state.entries[id] = Entry(channel: channel, address: address, record: record)
            state.perAddress[address, default: 0] += 1
            state.peak = max(state.peak, state.entries.count)
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

    /// Connection `id`'s request body did not arrive with its head: it counts against its address's
    /// bodies from now. False when the address already has as many bodies arriving as it may (the
    /// caller closes the connection).
    func bodyStarted(_ id: UInt64) -> Bool {
        let admitted = state.withLock { state -> Bool in
            guard var entry = state.entries[id] else { return false }
            if entry.receivingBody { return true }
            guard state.bodies[entry.address, default: 0] < limits.bodiesPerAddress else { return false }
            state.bodies[entry.address, default: 0] += 1
            entry.receivingBody = true
            state.entries[id] = entry
            return true
        }
        if !admitted { metrics?.count("berth_connections_shed_total", [("reason", "bodies_per_address")]) }
        return admitted
    }

    /// Connection `id`'s request body has arrived whole.
    func bodyEnded(_ id: UInt64) {
        state.withLock { state in
            guard var entry = state.entries[id], entry.receivingBody else { return }
            entry.receivingBody = false
            state.entries[id] = entry
            Self.dropBody(&state, address: entry.address)
        }
    }

    /// The connection closed (whoever closed it).
    func closed(_ id: UInt64) {
        let (open, wave) = state.withLock { state -> (Int?, Bool) in
            guard Self.remove(&state, id) != nil else { return (nil, false) }
            let open = state.entries.count
            // A wave of connections has gone (a flood, or a peak of traffic): most of what they held is free.
            guard state.peak >= Self.waveConnections, open <= state.peak / 8 else { return (open, false) }
            state.peak = open
            return (open, true)
        }
        if let open { metrics?.gauge("berth_connections_open", [], Double(open)) }
        if wave { MemoryRelease.afterWave() }
    }

    /// Connections open at once that make their leaving a wave worth giving memory back for.
    static let waveConnections = 64

    /// A connection closed by one of its own deadlines: `head_timeout`, `body_timeout` or `send_timeout`.
    func timedOut(_ reason: String) {
        metrics?.count("berth_connections_shed_total", [("reason", reason)])
    }

    /// What to close to make room: the connection waiting longest for a head, else the slowest body.
    private static func victim(_ state: State, address: String?, now: UInt64) -> UInt64? {
        oldestWaiting(state, address: address) ?? slowestBody(state, address: address, now: now)
    }

    private static func oldestWaiting(_ state: State, address: String?) -> UInt64? {
        var best: (id: UInt64, since: UInt64)?
        for (id, entry) in state.entries {
            guard address == nil || entry.address == address, let since = entry.record.waitingSince else { continue }
            if let current = best, current.since < since || (current.since == since && current.id < id) { continue }
            best = (id, since)
        }
        return best?.id
    }

    /// The request body arriving most slowly (fewest bytes per second since it began), among those
    /// that began at least ``bodyGraceNanoseconds`` ago.
    private static func slowestBody(_ state: State, address: String?, now: UInt64) -> UInt64? {
        var best: (id: UInt64, rate: Double)?
        for (id, entry) in state.entries {
            guard address == nil || entry.address == address, let since = entry.record.bodySince, now > since,
                now - since >= bodyGraceNanoseconds
            else { continue }
            let rate = Double(entry.record.bodyBytes) / (Double(now - since) / 1e9)
            if let current = best, current.rate < rate || (current.rate == rate && current.id < id) { continue }
            best = (id, rate)
        }
        return best?.id
    }

    @discardableResult
    private static func remove(_ state: inout State, _ id: UInt64) -> (any Channel)? {
        guard let entry = state.entries.removeValue(forKey: id) else { return nil }
        let left = (state.perAddress[entry.address] ?? 1) - 1
        state.perAddress[entry.address] = left > 0 ? left : nil
        if entry.receivingBody { dropBody(&state, address: entry.address) }
        return entry.channel
    }

    private static func dropBody(_ state: inout State, address: String) {
        let left = (state.bodies[address] ?? 1) - 1
        state.bodies[address] = left > 0 ? left : nil
    }

    /// The handler each connection's pipeline gets (after HTTP decoding, before Hummingbird's).
    public func handler() -> any RemovableChannelHandler {
        ConnectionGuard(governor: self)
    }
}

/// What one connection is doing, as the governor needs it to pick a connection to shed: whether it
/// waits for a request head and since when, and whether a request body is arriving, since when and
/// how much of it. Written by the connection on its event loop (atomic stores: the governor's lock
/// and map are not touched per request), read by the governor under its lock.
final class ConnectionRecord: Sendable {
    /// Uptime in nanoseconds when it began waiting; 0 while it serves a request.
    private let waiting = Atomic<UInt64>(0)
    /// Uptime in nanoseconds when a body that did not arrive with its head began; 0 otherwise.
    private let body = Atomic<UInt64>(0)
    /// Bytes of that body so far.
    private let bytes = Atomic<Int>(0)

    init() {}

    var waitingSince: UInt64? {
        let value = waiting.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }

    var bodySince: UInt64? {
        let value = body.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }

    var bodyBytes: Int { bytes.load(ordering: .relaxed) }

    func startWaiting() {
        waiting.store(max(1, DispatchTime.now().uptimeNanoseconds), ordering: .relaxed)
    }

    func startServing() {
        waiting.store(0, ordering: .relaxed)
    }

    func startBody(at uptime: UInt64) {
        bytes.store(0, ordering: .relaxed)
        body.store(max(1, uptime), ordering: .relaxed)
    }

    func addBodyBytes(_ count: Int) {
        bytes.wrappingAdd(count, ordering: .relaxed)
    }

    func endBody() {
        body.store(0, ordering: .relaxed)
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
/// head until its answer's end, waiting otherwise; and its own deadlines:
///
/// - **Head.** While it waits, the first bytes of the next request start the head deadline: a head
///   that does not arrive whole in time closes the connection. (A connection that sends nothing is
///   the idle timeout's, and is shed first at a cap.) The deadline costs a clock read per request,
///   not a timer: one timer per connection is armed when a head starts and none is pending; when it
///   fires it closes the connection if the head it finds started a whole timeout ago and has not
///   arrived, re-arms itself for the head that started later, and lapses while a request is served.
///   Scheduling and cancelling a timer for every request cost about 3.5 % of a `GET /healthz`'s CPU.
/// - **Body.** A request whose body has not arrived whole by the end of the read that brought its
///   head (rare: clients send small bodies with their heads) counts against its address's bodies
///   and gets a timer: the body's last byte within ``ConnectionLimits/bodyTimeout`` or the
///   connection closes.
/// - **Answers.** The connection stops reading from its socket while ``ConnectionLimits/pipelineDepth``
///   requests are unanswered or its unsent answers are over the high-water mark (a client that
///   pipelines and never reads holds at most that much of Berth's memory); unsent answers over the
///   mark for ``ConnectionLimits/sendTimeout`` close it.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let governor: ConnectionGovernor
    private let record = ConnectionRecord()
    private var id: UInt64?
    /// Requests whose head arrived and whose answer has not ended (HTTP/1.1 pipelining).
    private var inFlight = 0
    /// When the head being waited for sent its first bytes; nil when none has (or one is served).
    private var headStartedAt: NIODeadline?
    /// The connection's one head timer, while it is armed.
    private var timer: Scheduled<Void>?
    /// A request's head arrived and its body's end has not.
    private var receiving = false
    /// That body did not come with its head: it counts with the governor and has a deadline.
    private var slowBody = false
    /// The body deadline's timer, while a slow body arrives.
    private var bodyTimer: Scheduled<Void>?
    /// The send deadline's timer, while unsent answers are over the high-water mark.
    private var sendTimer: Scheduled<Void>?
    /// A read the channel asked for and this handler holds back (too many requests unanswered, or
    /// the answers are not leaving).
    private var heldRead = false
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
        switch unwrapInboundIn(data) {
        case .head:
            inFlight += 1
            receiving = true
            if inFlight == 1, id != nil {
                record.startServing()
                headStartedAt = nil
            }
        case .body(let buffer):
            if slowBody { record.addBodyBytes(buffer.readableBytes) }
        case .end:
            receiving = false
            if slowBody { endSlowBody() }
        }
        context.fireChannelRead(data)
    }

    /// The end of a read: a body still arriving now did not come with its head.
    func channelReadComplete(context: ChannelHandlerContext) {
        if receiving, !slowBody, let id { startSlowBody(context, id: id) }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), inFlight > 0 {
            inFlight -= 1
            if inFlight == 0, id != nil {
                record.startWaiting()
                headStartedAt = nil
            }
            if heldRead { releaseRead(context) }
        }
        context.write(data, promise: promise)
    }

    func read(context: ChannelHandlerContext) {
        if inFlight >= ConnectionLimits.pipelineDepth || !context.channel.isWritable {
            heldRead = true
        } else {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            sendTimer?.cancel()
            sendTimer = nil
            if heldRead { releaseRead(context) }
        } else if sendTimer == nil {
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            sendTimer = context.eventLoop.scheduleTask(in: governor.limits.sendTimeout) { bound.value.sendTimerFired() }
        }
        context.fireChannelWritabilityChanged()
    }

    private func releaseRead(_ context: ChannelHandlerContext) {
        guard inFlight < ConnectionLimits.pipelineDepth, context.channel.isWritable else { return }
        heldRead = false
        context.read()
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard id == nil else { return }
        let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        switch governor.admit(context.channel, address: address, record: record) {
        case .refused:
            context.close(promise: nil)
        case .admitted(let admitted, let shed):
            id = admitted
            headStartedAt = nil
            for channel in shed { channel.close(promise: nil) }
        }
    }

    private func startSlowBody(_ context: ChannelHandlerContext, id: UInt64) {
        slowBody = true
        record.startBody(at: DispatchTime.now().uptimeNanoseconds)
        guard governor.bodyStarted(id) else {
            context.channel.close(promise: nil)
            return
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        bodyTimer = context.eventLoop.scheduleTask(in: governor.limits.bodyTimeout) { bound.value.bodyTimerFired() }
    }

    private func endSlowBody() {
        slowBody = false
        record.endBody()
        bodyTimer?.cancel()
        bodyTimer = nil
        if let id { governor.bodyEnded(id) }
    }

    private func bodyTimerFired() {
        bodyTimer = nil
        guard slowBody, id != nil, let context else { return }
        governor.timedOut("body_timeout")
        context.channel.close(promise: nil)
    }

    private func sendTimerFired() {
        sendTimer = nil
        guard id != nil, let context, !context.channel.isWritable else { return }
        governor.timedOut("send_timeout")
        context.channel.close(promise: nil)
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
            governor.timedOut("head_timeout")
            context.channel.close(promise: nil)
        } else {
            arm(context, at: due)
        }
    }

    private func release() {
        timer?.cancel()
        timer = nil
        bodyTimer?.cancel()
        bodyTimer = nil
        sendTimer?.cancel()
        sendTimer = nil
        headStartedAt = nil
        slowBody = false
        record.endBody()
        if let id {
            governor.closed(id)
            self.id = nil
        }
    }
}

/// Gives the allocator's free memory back to the system after a wave of connections has gone (V2:
/// glibc keeps what 500 connections freed in its per-thread arenas, so the process stayed at its
/// peak after a flood). `malloc_trim` walks every arena; it runs off the event loops, at most one at a
/// time, and only after a wave (``ConnectionGovernor/waveConnections``), never per request.
enum MemoryRelease {
    private static let running = Atomic<Bool>(false)

    static func afterWave() {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        DispatchQueue.global(qos: .utility).async {
            berth_release_free_memory()
            running.store(false, ordering: .releasing)
        }
    }
}

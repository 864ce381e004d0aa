import AsyncHTTPClient
import Domain
import Foundation
import Logging
import NIOCore
import NIOPosix
import OutboundHTTP
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
import NIOHTTP1
#endif

/// The one HTTP client that sends webhooks: a service of the application (shut down with it), never
/// `HTTPClient.shared`. It follows no redirects, speaks https only (plain http to loopback only when
/// the tenant allows it explicitly), and refuses receivers whose host resolves to loopback,
/// link-local, private or otherwise non-public addresses unless allowed (an IPv4 address embedded
/// in NAT64, 6to4 or IPv4-compatible IPv6 is judged as that IPv4), so a tenant's receiver (or
/// whoever controls its DNS) cannot point Berth at its own network. The name is resolved once, on
/// a thread of NIO's blocking pool with a deadline (never on the concurrency pool that serves
/// requests), and the connection goes to the address that was vetted, with the name kept for the
/// Host header, SNI and certificate check: a second DNS answer (rebinding) never gets a say.
/// Failures are reported as a coarse class, never as the transport's text.
public final class WebhookHTTPClient: Service, Sendable, CustomStringConvertible {
    public var description: String { "WebhookHTTPClient" }

    /// Why a delivery failed, coarse on purpose: it is shown to tenants' admins.
    public enum Failure: String, Sendable {
        case invalidURL = "invalid_url"
        case schemeRefused = "scheme_refused"
        case addressRefused = "address_refused"
        case unresolvable
        case timeout
        case connectFailed = "connect_failed"
        case tlsFailed = "tls_failed"
        case redirectRefused = "redirect_refused"
        case httpStatus = "http_status"
        case transport
    }

    public struct Outcome: Sendable {
        public var statusCode: Int?
        public var failure: Failure?
    }

    let timeout: TimeAmount
    /// Resolves a host name to its addresses (blocking; run on the thread pool). Tests replace it.
    let resolver: @Sendable (String) -> [Address]
    let resolutionDeadline: Duration

    /// - Parameter timeout: the whole exchange with one receiver.
    public convenience init(timeout: Duration = .seconds(10)) {
        self.init(timeout: timeout, resolver: Self.resolve)
    }

    init(timeout: Duration = .seconds(10), resolutionDeadline: Duration = .seconds(5), resolver: @escaping @Sendable (String) -> [Address]) {
        self.timeout = .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        self.resolver = resolver
        self.resolutionDeadline = resolutionDeadline
    }

    /// One client per receiver name and vetted address, kept so that deliveries reuse their
    /// connections (a new TLS connection per event halved the rate); the least recently used goes
    /// when there are more than ``keptClients``.
    private let clients = Mutex<KeptClients>(KeptClients())
    static let keptClients = 64

    struct KeptClients {
        var byKey: [String: HTTPClient] = [:]
        /// Keys, least recently used first.
        var order: [String] = []
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes the kept clients and their connections.
    public func shutdown() async throws {
        let kept = clients.withLock { kept in
            defer { kept = KeptClients() }
            return Array(kept.byKey.values)
        }
        for client in kept { try? await client.shutdown() }
    }

    deinit {
        // A client that was never shut down (a test that drops this one) still closes its own.
        for client in clients.withLock({ Array($0.byKey.values) }) { client.shutdown { _ in } }
    }

    /// The kept client that connects to `vetted` for `name` (the name stays for Host, SNI and the
    /// certificate), made on first use.
    private func client(for name: String, vetted: Address) -> HTTPClient {
        let key = name + "\u{0}" + vetted.text
        let (client, evicted) = clients.withLock { kept -> (HTTPClient, HTTPClient?) in
            if let client = kept.byKey[key] {
                if let index = kept.order.firstIndex(of: key) { kept.order.remove(at: index) }
                kept.order.append(key)
                return (client, nil)
            }
            var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
            configuration.timeout = .init(connect: .seconds(5), read: timeout)
            // As many connections to one receiver as subjects may be sent at once (BERTH_WEBHOOK_PARALLEL ≤ 64).
            configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
            if vetted.text != name { configuration.dnsOverride = [name: vetted.text] }
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            var evicted: HTTPClient?
            if kept.order.count >= Self.keptClients {
                let oldest = kept.order.removeFirst()
                evicted = kept.byKey.removeValue(forKey: oldest)
            }
            kept.byKey[key] = client
            kept.order.append(key)
            return (client, evicted)
        }
        evicted?.shutdown { _ in }
        return client
    }

    /// The host's addresses, resolved on NIO's blocking pool; empty when it does not resolve in time.
    func addresses(of host: String) async -> [Address] {
        let resolver = self.resolver, deadline = resolutionDeadline
        // A blocking lookup cannot be cancelled: whichever ends first, the lookup or the deadline,
        // answers; a lookup that ends later is dropped.
        return await withCheckedContinuation { (continuation: CheckedContinuation<[Address], Never>) in
            let answer = FirstAnswer(continuation)
            Task { answer.resume((try? await NIOThreadPool.singleton.runIfActive { resolver(host) }) ?? []) }
            Task {
                try? await Task.sleep(for: deadline)
                answer.resume([])
            }
        }
    }

    /// POSTs `body` to the tenant's receiver if its URL and addresses pass the policy.
    public func post(_ body: String, headers: [(String, String)], to webhook: Tenant.Webhook) async -> Outcome {
        guard let components = URLComponents(string: webhook.url), let scheme = components.scheme?.lowercased(), let host = components.host else {
            return Outcome(failure: .invalidURL)
        }
        guard scheme == "https" || (scheme == "http" && webhook.allowLoopbackHTTP == true) else { return Outcome(failure: .schemeRefused) }
        let name = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let addresses = await self.addresses(of: name)
        guard let vetted = addresses.first else { return Outcome(failure: .unresolvable) }
        for address in addresses {
            switch address.scope {
            case .public: continue
            case .loopback where webhook.allowLoopbackHTTP == true: continue
            case .private where webhook.allowPrivateAddresses == true: continue
            default: return Outcome(failure: .addressRefused)
            }
        }
        // Plain http is for loopback only, even when allowed.
        if scheme == "http", !addresses.allSatisfy({ $0.scope == .loopback }) { return Outcome(failure: .schemeRefused) }

        var request = HTTPClientRequest(url: webhook.url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(string: body))
        // The connection goes to the vetted address; the URL's name stays for Host, SNI and the certificate.
        return await exchange(request, on: client(for: name, vetted: vetted))
    }

    private func exchange(_ request: HTTPClientRequest, on client: HTTPClient) async -> Outcome {
        do {
            let response = try await client.execute(request, timeout: timeout)
            _ = try? await response.body.collect(upTo: 64 * 1024)
            let code = Int(response.status.code)
            if (200..<300).contains(code) { return Outcome(statusCode: code) }
            return Outcome(statusCode: code, failure: (300..<400).contains(code) ? .redirectRefused : .httpStatus)
        } catch {
            // By the error's type (OutboundHTTP's classification, shared with the other clients).
            switch TransportFailure.kind(of: error) {
            case .tls: return Outcome(failure: .tlsFailed)
            case .connect: return Outcome(failure: .connectFailed)
            case .timeout: return Outcome(failure: .timeout)
            case .other: return Outcome(failure: .transport)
            }
        }
    }

    // MARK: - Addresses

    struct Address: Hashable {
        enum Scope { case `public`, loopback, `private`, reserved }
        var bytes: [UInt8]

        var scope: Scope {
            if bytes.count == 4 { return Self.scopeV4(bytes) }
            guard bytes.count == 16 else { return .reserved }
            // IPv4-mapped IPv6 (::ffff:a.b.c.d) is judged as IPv4.
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff { return Self.scopeV4(Array(bytes[12...])) }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return .loopback }
            if bytes.allSatisfy({ $0 == 0 }) { return .reserved }
            // IPv4-compatible (::a.b.c.d, deprecated) and NAT64 (64:ff9b::/96) carry the IPv4 they reach.
            if bytes[0..<12].allSatisfy({ $0 == 0 }) { return Self.scopeV4(Array(bytes[12...])) }
            if bytes[0..<12] == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] { return Self.scopeV4(Array(bytes[12...])) }
            if bytes[0] == 0x00, bytes[1] == 0x64, bytes[2] == 0xff, bytes[3] == 0x9b { return .reserved }  // 64:ff9b:1::/48, local NAT64
            // 6to4 (2002::/16) reaches the IPv4 in its next four bytes.
            if bytes[0] == 0x20, bytes[1] == 0x02 { return Self.scopeV4(Array(bytes[2..<6])) }
            if bytes[0] & 0xfe == 0xfc { return .private }  // fc00::/7 unique local
            if bytes[0] == 0xfe, bytes[1] & 0xc0 == 0x80 { return .reserved }  // fe80::/10 link-local
            if bytes[0] == 0xff { return .reserved }  // multicast
            return .public
        }

        /// The address as text (dotted IPv4, or IPv6 without brackets), to connect to.
        var text: String {
            if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
            var raw = in6_addr()
            withUnsafeMutableBytes(of: &raw) { target in
                for (index, byte) in bytes.prefix(16).enumerated() { target[index] = byte }
            }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)) != nil else { return "::" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }

        static func scopeV4(_ b: [UInt8]) -> Scope {
            switch (b[0], b[1]) {
            case (127, _): return .loopback
            case (10, _), (172, 16...31), (192, 168): return .private
            case (100, 64...127): return .private  // carrier-grade NAT
            case (169, 254): return .reserved  // link-local, cloud metadata
            case (0, _), (224...255, _): return .reserved  // "this network", multicast, reserved, broadcast
            case (192, 0) where b[2] == 0, (198, 18...19): return .reserved
            default: return .public
            }
        }
    }

    /// The host's addresses (an IP literal is its own address); empty when it does not resolve.
    static func resolve(_ host: String) -> [Address] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [Address] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let socketAddress = info.pointee.ai_addr {
                switch Int32(socketAddress.pointee.sa_family) {
                case AF_INET:
                    socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var raw = v4.pointee.sin_addr.s_addr
                        addresses.append(Address(bytes: withUnsafeBytes(of: &raw) { Array($0) }))
                    }
                case AF_INET6:
                    socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var raw = v6.pointee.sin6_addr
                        addresses.append(Address(bytes: withUnsafeBytes(of: &raw) { Array($0) }))
                    }
                default:
                    break
                }
            }
            cursor = info.pointee.ai_next
        }
        return Array(Set(addresses))
    }
}

/// Resumes a continuation with the first of several answers; later ones are dropped.
final class FirstAnswer<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Value, Never>?>

    init(_ continuation: CheckedContinuation<Value, Never>) { self.continuation = Mutex(continuation) }

    func resume(_ value: Value) {
        let waiting = continuation.withLock { stored in
            defer { stored = nil }
            return stored
        }
        waiting?.resume(returning: value)
    }
}

import AsyncHTTPClient
import Domain
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// The one HTTP client that sends webhooks: a service of the application (shut down with it), never
/// `HTTPClient.shared`. It follows no redirects, speaks https only (plain http to loopback only when
/// the tenant allows it explicitly), and refuses receivers whose host resolves to loopback,
/// link-local, private or otherwise non-public addresses unless allowed, so a tenant's receiver (or
/// whoever controls its DNS) cannot point Berth at its own network. Failures are reported as a coarse
/// class, never as the transport's text.
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

    let client: HTTPClient
    let timeout: TimeAmount

    /// - Parameter timeout: the whole exchange with one receiver.
    public init(timeout: Duration = .seconds(10)) {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(10))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.timeout = .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    public func shutdown() async throws {
        try await client.shutdown()
    }

    /// POSTs `body` to the tenant's receiver if its URL and addresses pass the policy.
    public func post(_ body: String, headers: [(String, String)], to webhook: Tenant.Webhook) async -> Outcome {
        guard let components = URLComponents(string: webhook.url), let scheme = components.scheme?.lowercased(), let host = components.host else {
            return Outcome(failure: .invalidURL)
        }
        guard scheme == "https" || (scheme == "http" && webhook.allowLoopbackHTTP == true) else { return Outcome(failure: .schemeRefused) }
        let addresses = Self.resolve(host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
        guard !addresses.isEmpty else { return Outcome(failure: .unresolvable) }
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
        do {
            let response = try await client.execute(request, timeout: timeout)
            _ = try? await response.body.collect(upTo: 64 * 1024)
            let code = Int(response.status.code)
            if (200..<300).contains(code) { return Outcome(statusCode: code) }
            return Outcome(statusCode: code, failure: (300..<400).contains(code) ? .redirectRefused : .httpStatus)
        } catch let error as HTTPClientError {
            switch error {
            case .connectTimeout, .readTimeout, .deadlineExceeded, .writeTimeout: return Outcome(failure: .timeout)
            default: return Outcome(failure: .transport)
            }
        } catch {
            let name = String(describing: type(of: error))
            if name.contains("SSL") || name.contains("TLS") || name.contains("BoringSSL") { return Outcome(failure: .tlsFailed) }
            if name.contains("Connect") || name.contains("IOError") || name.contains("NIOConnection") { return Outcome(failure: .connectFailed) }
            return Outcome(failure: .transport)
        }
    }

    // MARK: - Addresses

    struct Address: Hashable {
        enum Scope { case `public`, loopback, `private`, reserved }
        var bytes: [UInt8]

        var scope: Scope {
            if bytes.count == 4 { return Self.scopeV4(bytes) }
            // IPv4-mapped IPv6 (::ffff:a.b.c.d) is judged as IPv4.
            if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff { return Self.scopeV4(Array(bytes[12...])) }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return .loopback }
            if bytes.allSatisfy({ $0 == 0 }) { return .reserved }
            if bytes[0] & 0xfe == 0xfc { return .private }                     // fc00::/7 unique local
            if bytes[0] == 0xfe, bytes[1] & 0xc0 == 0x80 { return .reserved }  // fe80::/10 link-local
            if bytes[0] == 0xff { return .reserved }                           // multicast
            return .public
        }

        static func scopeV4(_ b: [UInt8]) -> Scope {
            switch (b[0], b[1]) {
            case (127, _): return .loopback
            case (10, _), (172, 16...31), (192, 168): return .private
            case (100, 64...127): return .private                    // carrier-grade NAT
            case (169, 254): return .reserved                         // link-local, cloud metadata
            case (0, _), (224...255, _): return .reserved             // "this network", multicast, reserved, broadcast
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

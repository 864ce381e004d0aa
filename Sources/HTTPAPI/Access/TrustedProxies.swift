import Foundation
import HTTPTypes

/// Where a request comes from, for limits on routes without credentials: the peer's address, or,
/// when the peer is one of the operator's reverse proxies (`BERTH_TRUSTED_PROXIES`), the address
/// that proxy appended to `X-Forwarded-For` (read right to left, skipping the trusted proxies).
/// Without configured proxies the header is ignored: anyone can write it.
public struct TrustedProxies: Sendable {
    public var addresses: Set<String>

    public init(_ addresses: Set<String> = []) { self.addresses = addresses }

    /// `BERTH_TRUSTED_PROXIES`: comma-separated IP addresses.
    public init(environment value: String?) {
        self.init(Set((value ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }))
    }

    public func clientAddress(peer: String?, forwardedFor: [String]) -> String {
        guard let peer else { return "unknown" }
        guard addresses.contains(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        // The last hop a trusted proxy did not add is the client; the rest of the header is the client's own text.
        for hop in hops.reversed() where !addresses.contains(hop) { return String(hop.utf8.prefix(64)) ?? peer }
        return hops.first.map { String($0.utf8.prefix(64)) ?? peer } ?? peer
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
    static let forwarded = Self("Forwarded")!
    static let xRealIP = Self("X-Real-IP")!
}

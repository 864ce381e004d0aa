import AppleSignedData
import Domain
import Foundation
import HTTPTypes
import Hummingbird
import UseCases

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

/// The App Store notification endpoints' common step (Berth's and FT Chinese's URL): every body is
/// verified, and only what fails draws from the per-address limit. A notification that verifies is
/// never refused for the traffic of others (behind one proxy, Apple and an attacker share an
/// address); junk stays cheap to refuse (cheap checks first, failed chains cached) and an address
/// that keeps sending it gets 429 for it.
struct NotificationIntake {
    let receive: ReceiveNotification
    let rateLimiter: RateLimiter
    let trustedProxies: TrustedProxies

    func callAsFunction(_ request: Request, context: BerthRequestContext, runtime: TenantRuntime) async throws -> ReceiveNotification.Result {
        let address = trustedProxies.clientAddress(peer: context.clientAddress, forwardedFor: request.headers[values: .xForwardedFor])
        do {
            let body = try await JSONCoding.decode(NotificationRequestBody.self, from: request)
            return try await receive(signedPayload: body.signedPayload, runtime: runtime)
        } catch {
            // Storage trouble (5xx) is not the sender's failure; Apple retries it.
            if APIError.from(error, logger: context.logger).status.code < 500 {
                try rateLimiter.checkNotification(tenant: runtime.tenant, clientAddress: address)
            }
            throw error
        }
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}

import AsyncHTTPClient
import NIOCore
import NIOPosix

/// The one HTTP client Berth's calls to Apple, Google, Stripe and key sets share, made by the
/// composition root (which shuts it down when the application stops): redirects are refused (an
/// API that redirects is not followed to wherever it points), a connection is given 5 s; every
/// client sets its own deadline per request. Webhooks have a client of their own (pinned addresses).
public enum OutboundClient {
    public static func make() -> HTTPClient {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5), read: .seconds(60)))
        configuration.httpVersion = .automatic
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}

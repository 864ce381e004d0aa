import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import OutboundHTTP
import Testing

@Suite("Why an outbound request got no answer")
struct TransportFailureTests {
    @Test(
        "errno-carrying failures are named for what happened",
        arguments: [
            (ECONNREFUSED, "connection refused (nothing listens there)"),
            (ECONNRESET, "connection reset by the other side"),
            (EHOSTUNREACH, "host unreachable"),
            (ENETUNREACH, "network unreachable"),
        ]
    )
    func errno(code: Int32, expected: String) {
        // NIO's own text for a refused connect: "connection reset (error set): Connection refused (errno: 111)".
        #expect(TransportFailure.describe(IOError(errnoCode: code, reason: "connection reset (error set)")) == expected)
    }

    @Test("the HTTP client's own failures")
    func httpClient() {
        #expect(TransportFailure.describe(HTTPClientError.remoteConnectionClosed) == "the server closed the connection before answering")
        #expect(TransportFailure.describe(HTTPClientError.connectTimeout) == "no connection within the timeout")
        #expect(TransportFailure.describe(HTTPClientError.readTimeout) == "no answer within the timeout")
        #expect(TransportFailure.describe(CancellationError()) == "cancelled")
    }

    @Test("failures are classed by their type: TLS, no connection, a deadline, anything else")
    func kinds() {
        #expect(TransportFailure.kind(of: NIOSSLError.uncleanShutdown) == .tls)
        #expect(TransportFailure.kind(of: HTTPClientError.tlsHandshakeTimeout) == .tls)
        #expect(TransportFailure.kind(of: IOError(errnoCode: ECONNREFUSED, reason: "connect")) == .connect)
        #expect(TransportFailure.kind(of: HTTPClientError.remoteConnectionClosed) == .connect)
        #expect(TransportFailure.kind(of: HTTPClientError.connectTimeout) == .timeout)
        #expect(TransportFailure.kind(of: HTTPClientError.readTimeout) == .timeout)
        #expect(TransportFailure.kind(of: ChannelError.connectTimeout(.seconds(1))) == .timeout)
        #expect(TransportFailure.kind(of: CancellationError()) == .other)
    }
}

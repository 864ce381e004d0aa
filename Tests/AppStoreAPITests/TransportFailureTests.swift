import AsyncHTTPClient
import Foundation
import NIOCore
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
}

import AsyncHTTPClient
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an outbound request got no answer, in words an operator can act on. NIO describes a refused
/// connection as "connection reset (error set): Connection refused (errno: 111)"; this says
/// "connection refused (nothing listens there)". Shared by every client Berth has of another
/// service (Apple, Google Play, Stripe, webhook receivers).
public enum TransportFailure {
    /// What kind of failure an error is, by its type (never by its name or text).
    public enum Kind: Sendable, Equatable {
        /// The TLS handshake or the certificate failed.
        case tls
        /// No connection: refused, reset, unreachable, or the name did not resolve.
        case connect
        /// No connection or answer within a deadline.
        case timeout
        case other
    }

    public static func kind(of error: any Error) -> Kind {
        switch error {
        case is NIOSSLError, is BoringSSLError: return .tls
        case is NIOSSLExtraError: return .tls
        case is IOError, is NIOConnectionError: return .connect
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout, .readTimeout, .deadlineExceeded, .writeTimeout: return .timeout
            case .tlsHandshakeTimeout: return .tls
            case .remoteConnectionClosed: return .connect
            default: return .other
            }
        case let error as ChannelError:
            if case .connectTimeout = error { return .timeout }
            return .other
        default: return .other
        }
    }

    public static func describe(_ error: any Error) -> String {
        switch error {
        case let error as IOError: return describe(errno: error.errnoCode, otherwise: "\(error)")
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first { return describe(first.error) }
            return "the host name did not resolve"
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return "no connection within the timeout"
            case .readTimeout: return "no answer within the timeout"
            case .deadlineExceeded: return "no answer before the deadline"
            case .remoteConnectionClosed: return "the server closed the connection before answering"
            case .cancelled: return "cancelled"
            case .tlsHandshakeTimeout: return "the TLS handshake timed out"
            default: return "\(error)"
            }
        case let error as ChannelError:
            if case .connectTimeout = error { return "no connection within the timeout" }
            return "\(error)"
        case let error as NIOSSLError: return "TLS failed: \(error)"
        case let error as BoringSSLError: return "TLS failed: \(error)"
        case is CancellationError: return "cancelled"
        default: return "\(error)"
        }
    }

    private static func describe(errno code: Int32, otherwise: String) -> String {
        switch code {
        case ECONNREFUSED: return "connection refused (nothing listens there)"
        case ECONNRESET: return "connection reset by the other side"
        case ETIMEDOUT: return "the connection timed out"
        case EHOSTUNREACH: return "host unreachable"
        case ENETUNREACH: return "network unreachable"
        case EPIPE: return "the other side closed the connection"
        default: return otherwise
        }
    }
}

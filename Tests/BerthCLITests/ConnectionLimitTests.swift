import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// T2 of the security review of 9d512a8: idle connections that trickle a partial request line
/// must not take the service off the air, nor make it trap when descriptors run out.
@Suite("Connection limits under a slow-loris flood")
struct ConnectionLimitTests {
    /// A TCP connection to 127.0.0.1 made with the system's sockets (no client library that
    /// pools or retries): what a hostile client holds open.
    final class RawConnection {
        let descriptor: Int32

        init?(port: Int) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return nil }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(fd)
                return nil
            }
            descriptor = fd
        }

        deinit { close(descriptor) }

        @discardableResult
        func send(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
        }

        /// What arrives within `seconds` (until the peer closes or the time is up).
        func receive(within seconds: Double) -> String {
            var received: [UInt8] = []
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while Date() < deadline {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let wait = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
                guard poll(&poller, 1, wait) > 0 else { break }
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                received += buffer[0..<count]
                if String(decoding: received, as: UTF8.self).contains("\r\n\r\n") { break }
            }
            return String(decoding: received, as: UTF8.self)
        }
    }

    @Test(
        "at ulimit -n 256, 300 connections holding a partial request line neither stop /healthz on a fresh connection (answered within 2 s) nor kill the process"
    )
    func slowLorisAtLowDescriptorLimit() async throws {
        let server = try ServerProcess()
        defer { server.cleanUp() }
        let log = server.directory.appendingPathComponent("serve.log")
        try await server.start(errorLog: log, openFileLimit: 256)
        let port = server.port

        var held: [RawConnection] = []
        for _ in 0..<300 {
            guard let connection = RawConnection(port: port) else { continue }
            connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")
            held.append(connection)
        }
        #expect(held.count == 300, "the kernel accepts every connection into the backlog")

        // A fresh connection, a whole request: answered, within 2 s.
        let probe = try #require(RawConnection(port: port))
        probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let answer = probe.receive(within: 2)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "answer: \(answer.prefix(200))")
        #expect(server.isRunning, "the process is alive")

        // The flood left; the service is as it was, and says what it did.
        held.removeAll()
        let metrics = try await server.request("GET", "/metrics", headers: [:])
        #expect(metrics.status == 200)
        let text = String(decoding: metrics.data, as: UTF8.self)
        #expect(text.contains("berth_connections_shed_total"), "shedding is counted")
        #expect(text.contains("berth_connections_open"))
        #expect(server.isRunning)
        let serveLog = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(!serveLog.contains("Fatal error"), "\(serveLog.suffix(2000))")
        #expect(serveLog.contains("connections: at most"), "the limits in force are logged")
    }

    @Test(
        "a request head that does not arrive whole within BERTH_HEAD_TIMEOUT_SECONDS closes the connection; a whole request on the same server is answered"
    )
    func headDeadline() async throws {
        let server = try ServerProcess()
        defer { server.cleanUp() }
        try await server.start(environment: ["BERTH_HEAD_TIMEOUT_SECONDS": "1"])
        let slow = try #require(RawConnection(port: server.port))
        Self.expectClosedOnHalfAHead(slow)
        let probe = try #require(RawConnection(port: server.port))
        probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(probe.receive(within: 10).hasPrefix("HTTP/1.1 200"))
    }

    @Test(
        "on a keep-alive connection the next request's head is held to the same deadline: answered requests, then half a head, closes it"
    )
    func headDeadlineAfterAnsweredRequests() async throws {
        let server = try ServerProcess()
        defer { server.cleanUp() }
        try await server.start(environment: ["BERTH_HEAD_TIMEOUT_SECONDS": "1"])
        let connection = try #require(RawConnection(port: server.port))
        // Whole requests first: each one's head starts (and arms) the deadline and arrives in time.
        for _ in 0..<3 {
            connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(connection.receive(within: 10).hasPrefix("HTTP/1.1 200"))
        }
        Self.expectClosedOnHalfAHead(connection)
        let metrics = try await server.request("GET", "/metrics", headers: [:])
        #expect(String(decoding: metrics.data, as: UTF8.self).contains(#"berth_connections_shed_total{reason="head_timeout"} 1"#))
    }

    /// Sends half a request head and waits for the server's close (an event, bounded far above the
    /// deadline): no answer comes, and the connection closes before the bound.
    static func expectClosedOnHalfAHead(_ connection: RawConnection) {
        connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")
        let sent = Date()
        let reply = connection.receive(within: 30)
        #expect(!reply.contains("HTTP/1.1"), "no answer to half a request: \(reply)")
        #expect(Date().timeIntervalSince(sent) < 30, "the server closed the connection")
    }

    @Test("a limit that is not a positive whole number stops berth serve with the variable's name")
    func badLimit() throws {
        let server = try ServerProcess()
        defer { server.cleanUp() }
        var environment = ProcessInfo.processInfo.environment
        environment["BERTH_MAX_CONNECTIONS"] = "lots"
        let process = Process()
        process.executableURL = try BerthProcess.executable
        process.arguments = ["serve", "--port", "0"]
        process.currentDirectoryURL = server.directory
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus != 0)
        #expect(text.contains("BERTH_MAX_CONNECTIONS"), "\(text)")
    }
}

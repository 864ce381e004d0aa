import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// T2 of the security review of 9d512a8: idle connections that trickle a partial request line
/// must not take the service off the air, nor make it trap when descriptors run out.
@Suite("Connection limits under a slow-loris flood", .serialized)
struct ConnectionLimitTests {
    /// A TCP connection to 127.0.0.1 made with the system's sockets (no client library that
    /// pools or retries): what a hostile client holds open.
    final class RawConnection {
        let descriptor: Int32

        init?(port: Int, receiveBuffer: Int32? = nil) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return nil }
            if var size = receiveBuffer {
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
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

        /// Whether the peer closes (or resets) the connection within `seconds`; what arrives meanwhile
        /// is read and dropped.
        func waitForClose(within seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while Date() < deadline {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let wait = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
                guard poll(&poller, 1, wait) > 0 else { continue }
                if poller.revents & Int16(POLLERR | POLLHUP) != 0 { return true }
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count <= 0 { return true }
            }
            return false
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
        "at ulimit -n 256, 300 connections holding a partial request line neither stop /healthz on a fresh connection (answered while the flood still holds) nor kill the process"
    )
    func slowLorisAtLowDescriptorLimit() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let log = server.directory.appendingPathComponent("serve.log")
        // The flood's head deadline is 60 s, far beyond the probe's 20 s: an answer within them came
        // while the flood held, not after its deadline freed the server. (A 2 s bound failed once on two
        // cores busy with a release build beside the suite: a speed target, not this test's subject.)
        try await server.start(environment: ["BERTH_HEAD_TIMEOUT_SECONDS": "60"], errorLog: log, openFileLimit: 256)
        let port = server.port

        // Hundreds of sockets in this process: no child is launched meanwhile (ProcessLaunch.holdingMany).
        try await ProcessLaunch.holdingMany {
            var held: [RawConnection] = []
            for _ in 0..<300 {
                guard let connection = RawConnection(port: port) else { continue }
                connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")
                held.append(connection)
            }
            #expect(held.count == 300, "the kernel accepts every connection into the backlog")

            // A fresh connection, a whole request: answered while the flood holds.
            let probe = try #require(RawConnection(port: port))
            probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let answer = probe.receive(within: 20)
            #expect(answer.hasPrefix("HTTP/1.1 200"), "answer: \(answer.prefix(200))")
            #expect(server.isRunning, "the process is alive")

            // The flood left; the service is as it was, and says what it did.
            held.removeAll()
        }
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
        let server = try await ServerProcess()
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
        let server = try await ServerProcess()
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

    /// A request head for a public route whose body is announced and never sent whole.
    static let slowBodyHead =
        "POST /api/apple/notifications/zorya-test HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"

    @Test(
        "V1: at ulimit -n 256, 160 connections from one address trickling request bodies: /healthz on a fresh connection is answered throughout, and every trickler is closed within the body deadline"
    )
    func slowBodiesAtLowDescriptorLimit() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let log = server.directory.appendingPathComponent("serve.log")
        // A 15 s body deadline: the flood holds while the probes are answered, also on two cores busy
        // with a release build (a 3 s deadline and a 2 s answer once failed there), and it still ends
        // long before the 60 s idle timeout.
        try await server.start(environment: ["BERTH_BODY_TIMEOUT_SECONDS": "15"], errorLog: log, openFileLimit: 256)
        let port = server.port
        let opened = Date()

        // Hundreds of sockets in this process: no child is launched meanwhile (ProcessLaunch.holdingMany).
        try await ProcessLaunch.holdingMany {
            var held: [RawConnection] = []
            for _ in 0..<160 {
                guard let connection = RawConnection(port: port) else { continue }
                connection.send(Self.slowBodyHead)
                held.append(connection)
            }
            #expect(held.count == 160, "the kernel accepts every connection into the backlog")

            // While they trickle (a byte each round), a whole request on a fresh connection is answered in time.
            for _ in 0..<3 {
                for connection in held { connection.send(" ") }
                let probe = try #require(RawConnection(port: port))
                probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                let answer = probe.receive(within: 10)
                #expect(answer.hasPrefix("HTTP/1.1 200"), "answer: \(answer.prefix(200))")
            }
            // Every trickling connection is closed by the server (the body deadline, or the per-address cap
            // on bodies): waited for as events, bounded far above the 15 s deadline.
            for connection in held {
                connection.send(" ")
                #expect(connection.waitForClose(within: 50), "a trickling connection is still open")
            }
            #expect(Date().timeIntervalSince(opened) < 55, "closed within the deadline, not by the 60 s idle timeout")
        }
        #expect(server.isRunning)
        let metrics = String(decoding: try await server.request("GET", "/metrics", headers: [:]).data, as: UTF8.self)
        #expect(metrics.contains(#"berth_connections_shed_total{reason="body_timeout"}"#), "deadline closes are counted")
        #expect(metrics.contains(#"berth_connections_shed_total{reason="bodies_per_address"}"#), "the per-address cap is counted")
        let serveLog = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(serveLog.contains("its body within 15 s"), "the deadline in force is logged")
    }

    @Test("V1: a body that arrives in parts within the deadline is answered; the same body trickled past it is not")
    func bodyInPartsWithinDeadline() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        try await server.start(environment: ["BERTH_BODY_TIMEOUT_SECONDS": "2"])
        let connection = try #require(RawConnection(port: server.port))
        connection.send("POST /api/verify-purchase HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{")
        connection.send("}")
        let answer = connection.receive(within: 10)
        #expect(answer.hasPrefix("HTTP/1.1 401"), "a whole request in two parts is read and answered: \(answer.prefix(120))")
        let slow = try #require(RawConnection(port: server.port))
        slow.send(Self.slowBodyHead)
        #expect(slow.waitForClose(within: 30), "the unfinished body is closed")
    }

    @Test(
        "V2: 500 connections pipelining requests and never reading keep RSS under 200 MB, and it comes back within 10 % of where it began after they close"
    )
    func unreadAnswersBoundMemory() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        try await server.start(environment: ["BERTH_SEND_TIMEOUT_SECONDS": "3"])
        // Warm: the answers' own buffers, the allocator's arenas and the event loops' caches exist
        // before the baseline, after a small flood of the same kind has come and gone (the first
        // flood grows them once; what this judges is memory pinned by the 500, not that growth).
        for _ in 0..<3 { _ = try await server.request("GET", "/openapi.yaml", headers: [:]) }
        _ = try await Self.flood(server, connections: 50)
        let before = try #require(server.residentKilobytes)
        let peak = max(before, try await Self.flood(server, connections: 500))
        #expect(peak < 200 * 1024, "peak RSS \(peak) KB")
        // After they close: RSS back within 10 % of the baseline (the server returns freed memory).
        let health = try await server.request("GET", "/healthz", headers: [:])
        #expect(health.status == 200)
        // The allocator gives memory back off the event loops once the wave has gone: wait for it (bounded).
        var after = try #require(server.residentKilobytes)
        let settle = Date().addingTimeInterval(60)
        while Double(after) > Double(before) * 1.10, Date() < settle {
            try await Task.sleep(for: .milliseconds(100))
            after = server.residentKilobytes ?? after
        }
        #expect(Double(after) <= Double(before) * 1.10, "RSS \(before) KB before, \(peak) KB at the peak, \(after) KB after")
        print("V2 memory: RSS \(before) KB before, \(peak) KB at the peak, \(after) KB after")
        let metrics = String(decoding: try await server.request("GET", "/metrics", headers: [:]).data, as: UTF8.self)
        #expect(metrics.contains(#"berth_connections_shed_total{reason="send_timeout"}"#))
    }

    /// `connections` clients pipelining requests and never reading, until the server has closed
    /// them all (it closes a connection whose answers stay unsent past the send deadline); the
    /// server's peak RSS seen meanwhile.
    static func flood(_ server: ServerProcess, connections: Int) async throws -> Int {
        // The connections are held by a child process: in this test process their descriptors
        // would go past 1,024, where Foundation's Process.run (other tests launching children) fails.
        let flood = Process()
        flood.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        flood.arguments = ["python3", "-c", Self.unreadingClients, String(server.port), String(connections)]
        let input = Pipe.forChild(), output = Pipe.forChild()
        flood.standardInput = input
        flood.standardOutput = output
        try await OffPool.run { try flood.runAlone() }
        defer {
            try? input.fileHandleForWriting.close()
            flood.waitUntilExit()
        }
        // Its one line once every connection has sent its 40 requests (an event, not a delay).
        let ready = try await OffPool.run { String(decoding: output.fileHandleForReading.availableData, as: UTF8.self) }
        #expect(ready.hasPrefix(String(connections)), "connections opened: \(ready)")
        // The server cannot tell a client that does not read that it closed: wait until it holds none.
        var peak = 0
        var open = Int.max
        let bound = Date().addingTimeInterval(90)
        while open > 1, Date() < bound {
            peak = max(peak, server.residentKilobytes ?? 0)
            // Under a busy machine a scrape may time out while the flood is served: asked again next round.
            if let reply = try? await server.request("GET", "/metrics", headers: [:]) {
                open = Self.gauge(String(decoding: reply.data, as: UTF8.self), "berth_connections_open") ?? Int.max
            }
            if open > 1 { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(open <= 1, "connections that never read are closed (\(open) open of \(connections))")
        return peak
    }

    /// Opens N connections to 127.0.0.1:PORT, each sending 40 pipelined `GET /openapi.yaml` with a
    /// 4 KiB receive buffer and never reading; prints how many it opened, then holds them until its
    /// standard input closes.
    static let unreadingClients = """
        import socket, sys
        port, count = int(sys.argv[1]), int(sys.argv[2])
        request = b"GET /openapi.yaml HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" * 40
        held = []
        for _ in range(count):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", port))
            s.sendall(request)
            held.append(s)
        print(len(held), flush=True)
        sys.stdin.read()
        """

    /// A gauge's value in Prometheus text.
    static func gauge(_ text: String, _ name: String) -> Int? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) }
    }

    @Test("V8: SIGTERM while a body trickles: the process exits within BERTH_SHUTDOWN_SECONDS + 2 s, the SQLite file checkpointed")
    func shutdownDeadline() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        let log = server.directory.appendingPathComponent("serve.log")
        try await server.start(environment: ["BERTH_SHUTDOWN_SECONDS": "2", "BERTH_BODY_TIMEOUT_SECONDS": "600"], errorLog: log)
        let slow = try #require(RawConnection(port: server.port))
        slow.send(Self.slowBodyHead)
        // The request is in flight: its head reached the handler (a write happened first, so the WAL has pages).
        _ = try await server.request("GET", "/healthz", headers: [:])
        let stopped = Date()
        let status = server.stopAndWait()
        let took = Date().timeIntervalSince(stopped)
        #expect(took < 4, "stopped in \(took) s")
        #expect(status == 0, "a stop by signal is a clean exit")
        let wal = server.directory.appendingPathComponent("berth.sqlite-wal")
        let walSize = (try? FileManager.default.attributesOfItem(atPath: wal.path)[.size] as? Int) ?? 0
        #expect(walSize == 0, "the store closed and checkpointed (WAL \(walSize) bytes)")
        let serveLog = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(serveLog.contains("stopped in"), "\(serveLog.suffix(1500))")
    }

    @Test("a limit that is not a positive whole number stops berth serve with the variable's name")
    func badLimit() async throws {
        let server = try await ServerProcess()
        defer { server.cleanUp() }
        var environment = ProcessInfo.processInfo.environment
        environment["BERTH_MAX_CONNECTIONS"] = "lots"
        let process = Process()
        process.executableURL = try BerthProcess.executable
        process.arguments = ["serve", "--port", "0"]
        process.currentDirectoryURL = server.directory
        process.environment = environment
        let errors = Pipe.forChild()
        process.standardError = errors
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let text = try await OffPool.run {
            try process.runAlone()
            process.waitUntilExit()
            return String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
        #expect(process.terminationStatus != 0)
        #expect(text.contains("BERTH_MAX_CONNECTIONS"), "\(text)")
    }
}
